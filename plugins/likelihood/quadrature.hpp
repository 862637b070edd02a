#pragma once
// Deterministic normaliser of a low-dimensional model: the midpoint rule for ∫ p~ over a box, summed
// in log space. Used by the log_likelihood evaluator's method = "quadrature" (README.md there).
//
// The midpoint rule on n cells per dimension is exponentially accurate for a smooth integrand that
// is negligible at the box's faces (it is the trapezoid rule up to the boundary terms, and the
// Euler-Maclaurin corrections all vanish), and first-order accurate for a density that jumps to 0
// inside the box (bounded supports): there only the cells cut by the support's edge are wrong. It
// never evaluates on a face, and its outermost band of cells is a clean boundary diagnostic.
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/model.hpp"
#include "kef/progress.hpp"

namespace kef::likelihood {

struct Box {
  std::vector<double> lo, hi;  // per dimension, lo < hi
  Index dim() const { return static_cast<Index>(lo.size()); }
};

struct GridIntegral {
  double log_integral = 0.0;  // log Σ_cells p~(centre)·volume; −inf when p~ = 0 at every centre
  double log_band = 0.0;      // the same over the outer band: cells with some index < band or >= n − band
  Index cells = 0;            // n^D
};

// The cell centre of linear index k (row-major: the last coordinate runs fastest).
Vector cell_centre(const Box& box, Index n, Index k);

// log ∫_box p~ by the midpoint rule on n^D cells. Cells are evaluated through Model::log_unnormalized
// in chunks whose boundaries depend only on n and D, in parallel; the chunk sums are combined in
// chunk order, so the result is bitwise the same for any thread count. −inf (p~ = 0) contributes
// exactly 0; NaN or +inf is a NumericalError naming the model, the cell and its centre.
GridIntegral midpoint_log_integral(const Model& model, const Box& box, Index n, Index band,
                                   const Context& context, const std::string& model_name,
                                   Progress* progress = nullptr, const std::string& task = {});

}  // namespace kef::likelihood
