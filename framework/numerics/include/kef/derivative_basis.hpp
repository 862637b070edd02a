#pragma once
// The derivative basis of the full and Nyström kernel exponential families (docs/math.md §6):
// atoms y_(o, j, b) = ∂^o_j k(z_b, ·) for each order o in `orders` ({1} or {1, 2}), coordinate j < D and
// basis point z_b (b < m), and the score-matching system for f = Σ_c β_c y_c,
//
//   β = −((1/n) BᵀB + λ G)^† h,   B[(i, a), c] = ⟨∂_i k(x_a, ·), y_c⟩,   G[c, c'] = ⟨y_c, y_c'⟩,
//   h_c = (1/n) Σ_a Σ_i ⟨∂_i k(x_a, ·), y_c⟩ ∂_i log q0(x_a) + ⟨∂²_i k(x_a, ·), y_c⟩.
//
// Inner products of derivative features are mixed derivatives of k in both arguments; ∂_x ∂²_y k is
// the kernel's d2xdy with the arguments swapped (k is symmetric), ∂²_x ∂²_y k its cross_second_derivatives.
//
// Coefficient order: order block, then coordinate j, then point b — index o_pos·m·D + j·m + b — so
// each order's coefficients are an m x D column-major matrix, the layout of the kernel's stacks. A
// basis may keep only a subset of the atoms (`atoms`, Shogun's NystromD "components").
//
// BᵀB and h are accumulated over fixed chunks of rows in parallel, the partial sums folded in block
// order (ordered_reduce): results are bitwise independent of the thread count and memory is flat in n
// (B is never formed whole).
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/progress.hpp"
#include "kef/training_rows.hpp"
#include "kef/types.hpp"

namespace kef {

struct DerivativeBasis {
  Matrix points;             // z_b, m x D
  std::vector<int> orders;   // {1} or {1, 2}
  std::vector<Index> atoms;  // kept atoms (increasing coefficient indices); empty: all of them
  Index atom_count() const { return static_cast<Index>(orders.size()) * points.rows() * points.cols(); }
  Index size() const { return atoms.empty() ? atom_count() : static_cast<Index>(atoms.size()); }
};

// Throws kef::Error naming `where` when the orders are not {1} or {1, 2}, an atom index is out of range
// or not increasing, or the kernel lacks the mixed derivatives the orders need.
void check_derivative_basis(const Kernel& kernel, const DerivativeBasis& basis, const char* where);

// G_YY (size x size).
Matrix derivative_basis_gram(const Kernel& kernel, const DerivativeBasis& basis);

// Features of rows X: first[(i·N + n), c] = ⟨∂_i k(x_n, ·), y_c⟩ = ∂_i f_c(x_n) and, when `second` is
// given, second[(i·N + n), c] = ⟨∂²_i k(x_n, ·), y_c⟩ = ∂²_i f_c(x_n). Both (N·D) x size.
void derivative_basis_features(const Kernel& kernel, const DerivativeBasis& basis, const Matrix& X,
                               Matrix& first, Matrix* second);

// Values y_c(x_n), N x size: f(X) = values·β.
Matrix derivative_basis_values(const Kernel& kernel, const DerivativeBasis& basis, const Matrix& X);

struct DerivativeSystem {
  Matrix BtB;  // (1/n) BᵀB (empty when not requested)
  Vector h;    // h_Y, already divided by n
  Matrix G;    // G_YY
  Index rows = 0;
};

struct DerivativeAccumulateOptions {
  bool need_BtB = true;  // false: h and G only (the full estimator's right-hand side)
  Index chunk_rows = 0;  // rows per chunk; 0: about 2 MB of features per chunk
  Progress* progress = nullptr;
};

// Rows per chunk when options.chunk_rows is 0: depends on D and the basis size only.
Index derivative_chunk_rows(Index D, Index basis_size);

DerivativeSystem accumulate_derivative_system(const Kernel& kernel, const BaseMeasure& base, const Matrix& X,
                                              const DerivativeBasis& basis,
                                              const DerivativeAccumulateOptions& options,
                                              const Context& context);
// The same sums over a training split read by rows (kef/training_rows.hpp): each process reads the rows
// of its own groups of chunks, a group at a time; bitwise the result from the whole matrix.
DerivativeSystem accumulate_derivative_system(const Kernel& kernel, const BaseMeasure& base, const TrainingRows& X,
                                              const DerivativeBasis& basis,
                                              const DerivativeAccumulateOptions& options,
                                              const Context& context);

// The solve. Cholesky (the default) factorises A = (1/n)BᵀB + λG + ridge·mean(diag A)·I and refuses a
// matrix that is not positive definite or, without a ridge, whose reciprocal condition estimate is at
// most ε (rounding level: duplicate atoms): a NumericalError saying to set a ridge or use the
// pseudo-inverse. The pseudo-inverse takes the
// symmetric eigendecomposition of A (plus the same ridge) and drops the eigenvalues at or below
// cutoff·(largest eigenvalue): β is the minimum-norm solution on the kept eigenspace.
enum class DerivativeSolver { cholesky, pseudo_inverse };

struct DerivativeSolveOptions {
  double lambda = 1e-3;
  double ridge = 0.0;  // relative to mean(diag A)
  DerivativeSolver solver = DerivativeSolver::cholesky;
  double cutoff = 1e-12;  // pseudo-inverse: relative eigenvalue cut-off
};

struct DerivativeSolution {
  Vector beta;             // size()
  double ridge_added = 0;  // absolute value added to the diagonal
  Index rank = 0;          // eigenvalues kept (pseudo-inverse) or the size (Cholesky)
  double condition = 0;    // largest / smallest kept eigenvalue (pseudo-inverse), 1/rcond (Cholesky)
};

DerivativeSolution solve_derivative_system(const DerivativeSystem& system,
                                           const DerivativeSolveOptions& options);

// β over the kept atoms → coefficients over all atom_count() atoms (zeros elsewhere).
Vector expand_derivative_coefficients(const DerivativeBasis& basis, const Vector& beta);

}  // namespace kef
