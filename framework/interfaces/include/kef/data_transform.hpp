#pragma once
// The affine map from data units to the coordinates a model was fitted in ([data] standardize or
// whiten), saved with the model so that `kef score`, `kef eval` and `kef sample` work in data units.
//
// z = A x + offset maps a data row x to model coordinates z. A density p~ fitted on z is, in data
// units, p~_x(x) = p~(A x + offset) · |det A|, so
//   log p~_x(x) = log p~(z) + log|det A|,   ∇_x log p~_x(x) = Aᵀ ∇_z log p~(z),
// and the normaliser is unchanged (∫ p~_x dx = ∫ p~ dz): a log-likelihood in data units is the
// model-space one plus log|det A| (docs/math.md §1 for log p~; the change of variables is standard).
#include <string>
#include <utility>
#include <vector>

#include "kef/model.hpp"
#include "kef/types.hpp"

namespace kef {

struct DataTransform {
  std::string kind = "none";         // "none", "standardize" or "whiten"
  std::vector<std::string> columns;  // the data's columns, in order; empty when unknown (kef 0.2 models)
  Matrix matrix;                     // A (D x D); empty when kind == "none"
  Vector offset;                     // (D)
  double log_abs_det = 0;            // log|det A|

  bool identity() const { return kind == "none"; }
  // The name of the model's coordinates in results: "data", "standardized" or "whitened".
  std::string model_space() const;
  // Rows: z = A x + offset (no arithmetic when identity(), so models without a transform are
  // evaluated bitwise as before), and back.
  Matrix to_model(const Matrix& X) const;
  Matrix to_data(const Matrix& Z) const;
};

// kind "standardize" or "whiten" with its map; computes log|det A| (from the diagonal when A is
// diagonal, else from an LU factorisation). DataError when A is singular or not finite.
DataTransform make_data_transform(std::string kind, Matrix A, Vector offset,
                                  std::vector<std::string> columns);

}  // namespace kef
