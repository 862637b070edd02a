#pragma once
// Dense linear-algebra building blocks shared by every estimator and evaluator.
#include <string>
#include <string_view>
#include <vector>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

// Cholesky factor of a symmetric positive definite matrix. When the plain factorisation fails, a
// jitter of c·mean(diag A)·I is added with c = 1e-10, 1e-9, ..., 1e-3; the jitter actually used is
// reported so the caller can log it. NumericalError (naming `where`) when even that fails.
class SpdFactor {
 public:
  SpdFactor() = default;
  SpdFactor(const Matrix& A, std::string_view where);
  Vector solve(const Vector& b) const;
  Matrix solve(const Matrix& B) const;
  double jitter() const { return jitter_; }
  Index size() const { return llt_.rows(); }
  double log_determinant() const;

 private:
  Eigen::LLT<Matrix> llt_;
  double jitter_ = 0.0;
};

// log Σ_k exp(v_k) without overflow (−inf for an empty vector; a maximum of ±inf or NaN is returned as is).
double logsumexp(const Vector& v);
// The same for each row of A (rows of −inf stay −inf), vectorised over the columns: the log densities of
// mixtures whose log terms are the columns.
Vector row_logsumexp(const Matrix& A);
// log Σ_k exp(t_k) and the weights w = softmax(t), the responsibilities of a mixture whose log terms
// are t. When every t_k is −inf the result is −inf and w is all 0 (no component claims the point).
double logsumexp_softmax(const Eigen::Ref<const Vector>& t, Vector& w);
// ‖A.row(a) − B.row(b)‖², summed over the columns in order (A and B of the same width).
double squared_distance(const Matrix& A, Index a, const Matrix& B, Index b);

// C (lower triangle) += AᵀA, and C += AᵀB in full, on the calling thread only (kef parallelises over
// fixed row blocks itself, so BLAS must never split work across threads). These are the hot loops of
// every score-matching system (lite, Nyström, DKEF stage 2, clustered mixtures) and of the MMD null.
void add_gram_lower(const Matrix& A, Matrix& C);
void add_cross_product(const Matrix& A, const Matrix& B, Matrix& C);

// Who computes the two products above. OpenBLAS (dsyrk / dgemm), unless the kernels OpenBLAS chose
// when it loaded predate AVX on a CPU that has AVX2 and FMA: OpenBLAS 0.3.21 (Debian bookworm) falls
// back to its Prescott kernels on x86 models it does not recognise (measured on a KVM Xeon with
// AVX-512: dsyrk 12 GFLOP/s per core against 60 with OPENBLAS_CORETYPE=SkylakeX), and Eigen's products
// compiled for the machine's ISA are then the faster (its rank update is done by recursive halving
// into GEMMs: 63 GFLOP/s per core on a Zen 4 core, where Eigen's own rank update gives 49).
// KEF_BLAS=openblas|eigen in the environment overrides the choice; any other value is a ConfigError on first
// use. The choice is made once per process and never depends on the thread count.
enum class ProductBackend { OpenBlas, Eigen };
ProductBackend product_backend();
// One line for logs and benchmarks, e.g. "OpenBLAS (SkylakeX kernels)" or "Eigen (OpenBLAS chose its
// Prescott kernels on a CPU with AVX2/FMA)".
std::string product_backend_description();
// The products with an explicit backend (the tests compare the two).
void add_gram_lower(const Matrix& A, Matrix& C, ProductBackend backend);
void add_cross_product(const Matrix& A, const Matrix& B, Matrix& C, ProductBackend backend);

// ‖x_n − y_m‖² for all rows (N x M), by ‖x‖² + ‖y‖² − 2xᵀy (one GEMM) after centring both on Y's
// mean, clamped at 0 against rounding.
Matrix squared_distances(const Matrix& X, const Matrix& Y);

// Rows idx[begin], ..., idx[begin + count − 1] of X, in that order (count = npos: to the end of idx).
Matrix gather_rows(const Matrix& X, const std::vector<Index>& idx, std::size_t begin = 0,
                   std::size_t count = static_cast<std::size_t>(-1));
// k distinct rows of X chosen by sample_without_replacement(X.rows(), k, rng), in increasing row order:
// the seeded subsets of inducing points, test locations and landmarks.
Matrix random_rows(const Matrix& X, Index k, RandomStream& rng);

// NumericalError naming `where` and the first (row, column) that is NaN or infinite.
void check_finite(const Matrix& m, std::string_view where);
void check_finite(const Vector& v, std::string_view where);

// Median of the pairwise Euclidean distances of the rows of X (on at most max_rows rows, a
// deterministic prefix), the usual bandwidth heuristic.
double median_pairwise_distance(const Matrix& X, Index max_rows = 1000);

}  // namespace kef
