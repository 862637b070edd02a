#pragma once
// The affine map from data units to the coordinates a model was fitted in ([data] standardize or
// whiten), saved with the model so that `kef score`, `kef eval` and `kef sample` work in data units.
//
// z = A x + offset maps a data row x to model coordinates z. A density p~ fitted on z is, in data
// units, p~_x(x) = p~(A x + offset) · |det A|, so
//   log p~_x(x) = log p~(z) + log|det A|,   ∇_x log p~_x(x) = Aᵀ ∇_z log p~(z),
// and the normaliser is unchanged (∫ p~_x dx = ∫ p~ dz): a log-likelihood in data units is the
// model-space one plus log|det A| (docs/math.md §1 for log p~; the change of variables is standard).
//
// With column roles ([data] targets: inputs x, targets y) A never mixes the two: A(x, y) = A(y, x) = 0,
// so z_x = A_x x + c_x and z_y = A_y y + c_y, and a conditional density in data units is
//   log p~(y | x) = log p~_z(z_y | z_x) + log|det A_y|,
// still a density of y given x (a map mixing y into z_x would make the conditioning variable depend
// on y). Standardisation is diagonal, so this holds by itself; whitening whitens each block alone.
#include <string>
#include <utility>
#include <vector>

#include "kef/column_roles.hpp"
#include "kef/model.hpp"
#include "kef/types.hpp"

namespace kef {

struct DataTransform {
  std::string kind = "none";         // "none", "standardize" or "whiten"
  std::vector<std::string> columns;  // the data's columns, in order; empty when unknown (kef 0.2 models)
  Matrix matrix;                     // A (D x D); empty when kind == "none"
  Vector offset;                     // (D)
  double log_abs_det = 0;            // log|det A|
  ColumnRoles roles;                 // which columns are targets y (none: unconditional data)

  // The map of the inputs' block, A(x, x), and of the targets' block, A(y, y) (identity() maps: empty).
  Matrix input_map() const;
  Matrix target_map() const;
  // log|det A(y, y)|: the Jacobian term of a conditional density of y (0 when identity()).
  double target_log_abs_det() const;

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
// Sets the roles of a transform: Error when A mixes inputs and targets (a nonzero A(x, y) or A(y, x)).
void set_column_roles(DataTransform& transform, const ColumnRoles& roles);

}  // namespace kef
