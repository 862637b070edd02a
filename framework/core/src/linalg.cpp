// GCC 12 warns inside its own avx512fintrin.h (`__m512d __Y = __Y;`, a deliberate undefined value)
// when Eigen's AVX-512 transposition kernels, used by the Eigen product backend below, are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kef/linalg.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "kef/error.hpp"
#include "kef/vector_exp.hpp"

namespace kef {

SpdFactor::SpdFactor(const Matrix& A, std::string_view where) {
  if (A.rows() != A.cols()) throw Error(std::string(where) + ": Cholesky of a non-square matrix");
  check_finite(A, where);
  llt_.compute(A);
  if (llt_.info() == Eigen::Success) return;
  // Rank-deficient systems (duplicate inducing points, tiny λ) are made definite by the smallest
  // jitter that works; the caller reports it.
  const double scale = std::max(A.diagonal().cwiseAbs().mean(), 1e-300);
  for (double c = 1e-10; c <= 1.001e-3; c *= 10) {
    Matrix B = A;
    B.diagonal().array() += c * scale;
    llt_.compute(B);
    if (llt_.info() == Eigen::Success) {
      jitter_ = c * scale;
      return;
    }
  }
  throw NumericalError(std::string(where) +
                       ": matrix is not positive definite even with jitter 1e-3·mean(diag); "
                       "increase the regularisation (e.g. lambda_alpha)");
}

Vector SpdFactor::solve(const Vector& b) const { return llt_.solve(b); }
Matrix SpdFactor::solve(const Matrix& B) const { return llt_.solve(B); }

double SpdFactor::log_determinant() const { return 2.0 * llt_.matrixLLT().diagonal().array().log().sum(); }

Matrix squared_distances(const Matrix& X, const Matrix& Y) {
  if (Y.rows() == 0 || X.rows() == 0) return Matrix::Zero(X.rows(), Y.rows());
  // Distances do not change under a common shift; centring on Y's mean keeps ‖x‖² + ‖y‖² − 2xᵀy from
  // cancelling to noise for data far from the origin (at offset 10⁴ it would cost eight digits).
  const Eigen::RowVectorXd c = Y.colwise().mean();
  const Matrix Xc = X.rowwise() - c, Yc = Y.rowwise() - c;
  const Vector nx = Xc.rowwise().squaredNorm(), ny = Yc.rowwise().squaredNorm();
  Matrix d = -2.0 * Xc * Yc.transpose();
  d.colwise() += nx;
  d.rowwise() += ny.transpose();
  // The expansion's rounding error is up to about (2D + 4)·ε·(‖x − c‖² + ‖y − c‖²): it grows with the
  // distance of the pair from the centre, and the centre is the mean of the other rows. One far row
  // (an HMC proposal at 10⁸) moves it so far that every other row's distances, and so its kernel values
  // and log density, became noise: the value of a row must not depend on the rows beside it. Entries
  // whose error bound exceeds 10⁻¹¹ of their value are recomputed as Σ(x − y)², which does not depend on
  // any other row; on data near the centre those are only the near-coincident pairs.
  const Index D = X.cols();
  const double bound = static_cast<double>(2 * D + 4) * std::numeric_limits<double>::epsilon() / 1e-11;
  for (Index j = 0; j < d.cols(); ++j)
    for (Index i = 0; i < d.rows(); ++i)
      if (!(d(i, j) > bound * (nx[i] + ny[j]))) d(i, j) = (X.row(i) - Y.row(j)).squaredNorm();
  return d.cwiseMax(0.0);
}

double logsumexp(const Vector& v) {
  if (v.size() == 0) return -std::numeric_limits<double>::infinity();
  const double m = v.maxCoeff();
  if (!std::isfinite(m)) return m;
  return m + std::log((v.array() - m).exp().sum());
}

Vector row_logsumexp(const Matrix& A) {
  const Vector m = A.rowwise().maxCoeff();
  Vector out(A.rows());
  Matrix shifted = A.colwise() - m;
  exp_array(shifted.data(), shifted.data(), shifted.size());
  const Vector s = shifted.rowwise().sum();
  for (Index i = 0; i < A.rows(); ++i) out[i] = std::isfinite(m[i]) ? m[i] + std::log(s[i]) : m[i];
  return out;
}

double logsumexp_softmax(const Eigen::Ref<const Vector>& t, Vector& w) {
  w.resize(t.size());
  const double m = t.size() > 0 ? t.maxCoeff() : -std::numeric_limits<double>::infinity();
  if (m == -std::numeric_limits<double>::infinity()) {
    w.setZero();
    return m;
  }
  double s = 0.0;
  for (Index k = 0; k < t.size(); ++k) s += (w[k] = std::exp(t[k] - m));
  for (Index k = 0; k < t.size(); ++k) w[k] /= s;
  return m + std::log(s);
}

double squared_distance(const Matrix& A, Index a, const Matrix& B, Index b) {
  double d2 = 0.0;
  for (Index d = 0; d < A.cols(); ++d) {
    const double u = A(a, d) - B(b, d);
    d2 += u * u;
  }
  return d2;
}

void check_finite(const Matrix& m, std::string_view where) {
  if (m.allFinite()) return;
  for (Index j = 0; j < m.cols(); ++j)
    for (Index i = 0; i < m.rows(); ++i)
      if (!std::isfinite(m(i, j)))
        throw NumericalError(std::string(where) + ": non-finite value " + std::to_string(m(i, j)) +
                             " at row " + std::to_string(i) + ", column " + std::to_string(j));
}

void check_finite(const Vector& v, std::string_view where) {
  if (v.allFinite()) return;
  for (Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw NumericalError(std::string(where) + ": non-finite value " + std::to_string(v[i]) + " at index " +
                           std::to_string(i));
}

double median_pairwise_distance(const Matrix& X, Index max_rows) {
  const Index n = std::min(X.rows(), max_rows);
  if (n < 2) throw DataError("median heuristic: needs at least 2 rows, got " + std::to_string(n));
  std::vector<double> d;
  d.reserve(static_cast<std::size_t>(n * (n - 1) / 2));
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) d.push_back((X.row(i) - X.row(j)).norm());
  auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
  std::nth_element(d.begin(), mid, d.end());
  double med = *mid;
  if (d.size() % 2 == 0) med = 0.5 * (med + *std::max_element(d.begin(), mid));
  return med;
}

namespace {

// OpenBLAS's x86-64 kernel sets without AVX: on a CPU with AVX2 and FMA, one of these means OpenBLAS
// did not recognise the CPU and fell back.
bool pre_avx_core(const std::string& core) {
  static const char* const kOld[] = {"Katmai",  "Coppermine",    "Northwood", "Prescott",   "Banias",
                                     "Atom",    "Core2",         "Penryn",    "Dunnington", "Nehalem",
                                     "Opteron", "Opteron(SSE3)", "Barcelona", "Nano",       "Bobcat"};
  for (const char* c : kOld)
    if (core == c) return true;
  return false;
}

bool cpu_has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

struct BackendChoice {
  ProductBackend backend = ProductBackend::OpenBlas;
  std::string description;
  std::string error;  // a bad KEF_BLAS, reported on first use
};

BackendChoice choose_backend() {
  BackendChoice c;
  const char* core_text = openblas_get_corename();
  const std::string core = core_text ? core_text : "unknown";
  const char* env = std::getenv("KEF_BLAS");
  if (env && *env) {
    const std::string v(env);
    if (v == "openblas") {
      c.description = "OpenBLAS (" + core + " kernels; KEF_BLAS=openblas)";
    } else if (v == "eigen") {
      c.backend = ProductBackend::Eigen;
      c.description = "Eigen (KEF_BLAS=eigen)";
    } else {
      c.error = "KEF_BLAS: expected openblas or eigen, got '" + v + "' (unset it to let kef choose)";
    }
    return c;
  }
  if (pre_avx_core(core) && cpu_has_avx2_fma()) {
    c.backend = ProductBackend::Eigen;
    c.description = "Eigen (OpenBLAS chose its " + core +
                    " kernels on a CPU with AVX2/FMA; OPENBLAS_CORETYPE=Haswell or SkylakeX fixes OpenBLAS)";
  } else {
    c.description = "OpenBLAS (" + core + " kernels)";
  }
  return c;
}

const BackendChoice& backend_choice() {
  static const BackendChoice choice = choose_backend();
  if (!choice.error.empty()) throw ConfigError(choice.error);
  return choice;
}

// C[j0:j0+n, j0:j0+n] (lower triangle) += A[:, j0:j0+n]ᵀ A[:, j0:j0+n] by halving: the two diagonal
// halves recursively, the off-diagonal block as one GEMM. Eigen's own triangular rank update runs at
// about 70% of its GEMM rate (measured 49 against 70 GFLOP/s on one Zen 4 core, k = M = 1000); the
// halving puts almost all the flops in large GEMMs and reaches 63, the Nyström fit's hot loop.
// Below kGramBase columns Eigen's rank update is as fast as anything else.
constexpr Index kGramBase = 128;
void gram_lower_recursive(const Matrix& A, Matrix& C, Index j0, Index n) {
  if (n <= kGramBase) {
    C.block(j0, j0, n, n).selfadjointView<Eigen::Lower>().rankUpdate(A.middleCols(j0, n).transpose());
    return;
  }
  const Index h = n / 2;
  gram_lower_recursive(A, C, j0, h);
  C.block(j0 + h, j0, n - h, h).noalias() += A.middleCols(j0 + h, n - h).transpose() * A.middleCols(j0, h);
  gram_lower_recursive(A, C, j0 + h, n - h);
}

}  // namespace

ProductBackend product_backend() { return backend_choice().backend; }

std::string product_backend_description() { return backend_choice().description; }

void add_gram_lower(const Matrix& A, Matrix& C) { add_gram_lower(A, C, product_backend()); }

void add_cross_product(const Matrix& A, const Matrix& B, Matrix& C) {
  add_cross_product(A, B, C, product_backend());
}

void add_gram_lower(const Matrix& A, Matrix& C, ProductBackend backend) {
  if (C.rows() != C.cols() || A.cols() != C.rows())
    throw Error("add_gram_lower: A is " + std::to_string(A.rows()) + " x " + std::to_string(A.cols()) +
                ", C " + std::to_string(C.rows()) + " x " + std::to_string(C.cols()));
  if (backend == ProductBackend::Eigen) {
    gram_lower_recursive(A, C, 0, C.rows());
    return;
  }
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, static_cast<blasint>(C.rows()),
              static_cast<blasint>(A.rows()), 1.0, A.data(), static_cast<blasint>(A.rows()), 1.0, C.data(),
              static_cast<blasint>(C.rows()));
}

void add_cross_product(const Matrix& A, const Matrix& B, Matrix& C, ProductBackend backend) {
  if (A.rows() != B.rows() || C.rows() != A.cols() || C.cols() != B.cols())
    throw Error("add_cross_product: A is " + std::to_string(A.rows()) + " x " + std::to_string(A.cols()) +
                ", B " + std::to_string(B.rows()) + " x " + std::to_string(B.cols()) + ", C " +
                std::to_string(C.rows()) + " x " + std::to_string(C.cols()));
  if (backend == ProductBackend::Eigen) {
    C.noalias() += A.transpose() * B;
    return;
  }
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<blasint>(C.rows()),
              static_cast<blasint>(C.cols()), static_cast<blasint>(A.rows()), 1.0, A.data(),
              static_cast<blasint>(A.rows()), B.data(), static_cast<blasint>(B.rows()), 1.0, C.data(),
              static_cast<blasint>(C.rows()));
}

Matrix gather_rows(const Matrix& X, const std::vector<Index>& idx, std::size_t begin, std::size_t count) {
  if (begin > idx.size()) throw Error("gather_rows: begin past the end of the index list");
  count = std::min(count, idx.size() - begin);
  Matrix out(static_cast<Index>(count), X.cols());
  for (std::size_t i = 0; i < count; ++i) {
    const Index row = idx[begin + i];
    if (row < 0 || row >= X.rows())
      throw Error("gather_rows: row " + std::to_string(row) + " of a " + std::to_string(X.rows()) +
                  "-row matrix");
    out.row(static_cast<Index>(i)) = X.row(row);
  }
  return out;
}

Matrix random_rows(const Matrix& X, Index k, RandomStream& rng) {
  return gather_rows(X, sample_without_replacement(X.rows(), k, rng));
}

}  // namespace kef
