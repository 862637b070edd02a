#include "kef/derivative_basis.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

bool has_second(const DerivativeBasis& basis) { return basis.orders.size() == 2; }

// Keeps the selected atom columns of a matrix whose columns are all atom_count() atoms.
Matrix select_atoms(const DerivativeBasis& basis, Matrix full) {
  if (basis.atoms.empty()) return full;
  return full(Eigen::all, basis.atoms);
}

}  // namespace

void check_derivative_basis(const Kernel& kernel, const DerivativeBasis& basis, const char* where) {
  const std::string w(where);
  const bool first_only = basis.orders == std::vector<int>{1};
  if (!first_only && basis.orders != std::vector<int>{1, 2})
    throw Error(w + ": derivative orders must be [1] or [1, 2]");
  if (basis.points.rows() == 0) throw Error(w + ": no basis points");
  const Index n = basis.atom_count();
  for (std::size_t k = 0; k < basis.atoms.size(); ++k) {
    if (basis.atoms[k] < 0 || basis.atoms[k] >= n || (k > 0 && basis.atoms[k] <= basis.atoms[k - 1]))
      throw Error(w + ": atom indices must be increasing and below " + std::to_string(n));
  }
  const KernelCapabilities caps = kernel.capabilities();
  if (!caps.cross_derivatives)
    throw Error(w + ": kernel " + kernel.type_name() +
                " does not provide the mixed derivatives ∂_x∂_y k and ∂²_x∂_y k the derivative basis needs");
  if (!first_only && !caps.cross_second_derivatives)
    throw Error(w + ": kernel " + kernel.type_name() +
                " does not provide the mixed derivatives ∂²_x∂²_y k the second-derivative basis (orders = "
                "[1, 2]) needs");
}

Matrix derivative_basis_gram(const Kernel& kernel, const DerivativeBasis& basis) {
  const Matrix& Z = basis.points;
  const Index mD = Z.rows() * Z.cols();
  KernelCrossStacks cs;
  kernel.cross_derivatives(Z, Z, cs);
  Matrix G(basis.atom_count(), basis.atom_count());
  G.topLeftCorner(mD, mD) = cs.dxdy;
  if (has_second(basis)) {
    // ⟨∂²_i k(z_a, ·), ∂_j k(z_b, ·)⟩ = ∂²_{x_i}∂_{y_j} k(z_a, z_b): rows of order 2, columns of order 1.
    G.bottomLeftCorner(mD, mD) = cs.d2xdy;
    G.topRightCorner(mD, mD) = cs.d2xdy.transpose();
    Matrix d22;
    kernel.cross_second_derivatives(Z, Z, d22);
    G.bottomRightCorner(mD, mD) = d22;
  }
  // Exactly symmetric in exact arithmetic; symmetrised so both triangles hold the same rounding.
  Matrix S = 0.5 * (G + G.transpose());
  if (basis.atoms.empty()) return S;
  return S(basis.atoms, basis.atoms);
}

void derivative_basis_features(const Kernel& kernel, const DerivativeBasis& basis, const Matrix& X,
                               Matrix& first, Matrix* second) {
  const Matrix& Z = basis.points;
  if (X.cols() != Z.cols())
    throw DataError("derivative basis: data has " + std::to_string(X.cols()) + " columns, the basis points " +
                    std::to_string(Z.cols()));
  const Index ND = X.rows() * X.cols(), mD = Z.rows() * Z.cols();
  KernelCrossStacks xz;
  kernel.cross_derivatives(X, Z, xz);
  if (!has_second(basis)) {
    first = select_atoms(basis, std::move(xz.dxdy));
    if (second) *second = select_atoms(basis, std::move(xz.d2xdy));
    return;
  }
  Matrix f(ND, 2 * mD);
  f.leftCols(mD) = xz.dxdy;
  // ⟨∂_i k(x, ·), ∂²_j k(z, ·)⟩ = ∂²_{z_j}∂_{x_i} k(z, x): d2xdy of (Z, X), transposed.
  KernelCrossStacks zx;
  kernel.cross_derivatives(Z, X, zx);
  f.rightCols(mD) = zx.d2xdy.transpose();
  first = select_atoms(basis, std::move(f));
  if (second) {
    Matrix s(ND, 2 * mD);
    s.leftCols(mD) = xz.d2xdy;
    Matrix d22;
    kernel.cross_second_derivatives(X, Z, d22);
    s.rightCols(mD) = d22;
    *second = select_atoms(basis, std::move(s));
  }
}

Matrix derivative_basis_values(const Kernel& kernel, const DerivativeBasis& basis, const Matrix& X) {
  const Matrix& Z = basis.points;
  if (X.cols() != Z.cols())
    throw DataError("derivative basis: data has " + std::to_string(X.cols()) + " columns, the basis points " +
                    std::to_string(Z.cols()));
  // y_(o, j, b)(x) = ∂^o_{z_j} k(z_b, x): the kernel's derivative stacks of (Z, X), rows (j·m + b).
  KernelStacks st;
  kernel.derivatives(Z, X, has_second(basis) ? 2 : 1, st);
  const Index mD = Z.rows() * Z.cols();
  Matrix v(X.rows(), basis.atom_count());
  v.leftCols(mD) = st.d1.transpose();
  if (has_second(basis)) v.rightCols(mD) = st.d2.transpose();
  return select_atoms(basis, std::move(v));
}

Index derivative_chunk_rows(Index D, Index basis_size) {
  // Two (rows·D) x size feature matrices plus the kernel's stacks, about 2 MB each: a chunk's features
  // are still in the core's 2 MB L2 when the rank update reads them. Measured on the benchmark's fit
  // (n = 10⁴, D = 5, M = 1000; README, Benchmarks): 0.55 s at 2 MB against 0.63 s at 8 MB.
  const double per_row =
      8.0 * static_cast<double>(std::max<Index>(D, 1)) * static_cast<double>(std::max<Index>(basis_size, 1));
  return std::max<Index>(8, static_cast<Index>(2.0e6 / per_row));
}

namespace {

// The sums over the rows of X, or of `rows` (each group's rows read once) when X is null.
DerivativeSystem accumulate_rows(const Kernel& kernel, const BaseMeasure& base, const Matrix* X,
                                 const TrainingRows* rows, const DerivativeBasis& basis,
                                 const DerivativeAccumulateOptions& options, const Context& context) {
  check_derivative_basis(kernel, basis, "derivative basis system");
  const Index N = X ? X->rows() : rows->rows(), D = X ? X->cols() : rows->cols(), M = basis.size();
  if (N == 0) throw DataError("derivative basis system: no training rows");
  if (basis.points.cols() != D)
    throw DataError("derivative basis system: basis points have " + std::to_string(basis.points.cols()) +
                    " columns, data has " + std::to_string(D));
  const Index chunk = options.chunk_rows > 0 ? options.chunk_rows : derivative_chunk_rows(D, M);
  const Index chunks = (N + chunk - 1) / chunk;
  // At most 8 partial sums (fewer when M x M matrices are large); fixed by the problem, never by threads.
  const double bytes = 8.0 * static_cast<double>(M) * static_cast<double>(M);
  const Index groups = std::clamp<Index>(static_cast<Index>(512.0e6 / std::max(bytes, 1.0)), 1, 8);

  struct Partial {
    Matrix BtB;
    Vector h;
    Matrix first, second, q1, q2;  // workspace reused from chunk to chunk
  };
  std::atomic<Index> rows_done{0};
  const auto add_chunk = [&](const Matrix& Xc, Partial& p) {
    const Index len = Xc.rows();
    derivative_basis_features(kernel, basis, Xc, p.first, &p.second);
    base.derivatives(Xc, p.q1, p.q2);
    // Column-major len x D flattens in (i, n) order, the row order of the features.
    Eigen::Map<const Vector> q1v(p.q1.data(), len * D);
    p.h.noalias() += p.first.transpose() * q1v;
    p.h.noalias() += p.second.colwise().sum().transpose();
    if (options.need_BtB) add_gram_lower(p.first, p.BtB);
    const Index done = rows_done.fetch_add(len) + len;
    if (options.progress)
      options.progress->update("derivative basis system", static_cast<double>(done) / static_cast<double>(N),
                               std::to_string(done) + "/" + std::to_string(N) + " rows");
  };
  // ordered_reduce's groups of chunks (kef/distributed_reduce.hpp), written out so that a group reads
  // its rows once when they come by position; distributed over the processes of the run too: only BᵀB
  // and h cross.
  const Index G = std::max<Index>(1, std::min(chunks, groups));
  std::vector<Partial> parts = distributed_parts(
      G, context,
      [&] {
        Partial p;
        if (options.need_BtB) p.BtB = Matrix::Zero(M, M);
        p.h = Vector::Zero(M);
        return p;
      },
      [&](Index g, Partial& p) {
        const Index c0 = g * chunks / G, c1 = (g + 1) * chunks / G;
        Matrix block;
        if (!X) block = rows->range(c0 * chunk, std::min(N, c1 * chunk));
        for (Index c = c0; c < c1; ++c) {
          const Index begin = c * chunk, len = std::min(chunk, N - begin);
          const Matrix Xc = X ? Matrix(X->middleRows(begin, len)) : Matrix(block.middleRows(begin - c0 * chunk, len));
          add_chunk(Xc, p);
        }
      },
      [](Partial& p) { return std::tie(p.BtB, p.h); });
  Partial total = std::move(parts[0]);
  for (Index g = 1; g < G; ++g) {
    if (options.need_BtB) total.BtB += parts[static_cast<std::size_t>(g)].BtB;
    total.h += parts[static_cast<std::size_t>(g)].h;
  }

  DerivativeSystem out;
  out.rows = N;
  const double inv_n = 1.0 / static_cast<double>(N);
  if (options.need_BtB) {
    out.BtB = total.BtB.selfadjointView<Eigen::Lower>();
    out.BtB *= inv_n;
    check_finite(out.BtB, "derivative basis system BᵀB");
  }
  out.h = total.h * inv_n;
  out.G = derivative_basis_gram(kernel, basis);
  check_finite(out.h, "derivative basis system h");
  check_finite(out.G, "derivative basis system G");
  return out;
}

}  // namespace

DerivativeSystem accumulate_derivative_system(const Kernel& kernel, const BaseMeasure& base, const Matrix& X,
                                              const DerivativeBasis& basis,
                                              const DerivativeAccumulateOptions& options,
                                              const Context& context) {
  return accumulate_rows(kernel, base, &X, nullptr, basis, options, context);
}

DerivativeSystem accumulate_derivative_system(const Kernel& kernel, const BaseMeasure& base, const TrainingRows& X,
                                              const DerivativeBasis& basis,
                                              const DerivativeAccumulateOptions& options,
                                              const Context& context) {
  return accumulate_rows(kernel, base, nullptr, &X, basis, options, context);
}

DerivativeSolution solve_derivative_system(const DerivativeSystem& system,
                                           const DerivativeSolveOptions& options) {
  const Index M = system.G.rows();
  if (system.BtB.rows() != M || system.h.size() != M)
    throw Error("derivative basis solve: BᵀB, G and h of different sizes");
  Matrix A = system.BtB + options.lambda * system.G;
  DerivativeSolution sol;
  if (options.ridge > 0) {
    sol.ridge_added = options.ridge * A.diagonal().mean();
    A.diagonal().array() += sol.ridge_added;
  }
  if (options.solver == DerivativeSolver::cholesky) {
    Eigen::LLT<Matrix> llt(A);
    const double rcond = llt.info() == Eigen::Success ? llt.rcond() : 0.0;
    // Without a ridge, a factorisation that succeeds on a numerically singular matrix (duplicate atoms)
    // is refused too: its reciprocal condition estimate sits at rounding level. A ridge the caller set
    // is trusted; only a failed factorisation is refused then.
    const double floor = options.ridge > 0 ? 0.0 : std::numeric_limits<double>::epsilon();
    if (!(rcond > floor)) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.3g, at most %.3g", rcond, floor);
      throw NumericalError(
          "derivative basis solve: the system (1/n)BᵀB + λG is singular to working precision "
          "(reciprocal condition " +
          std::string(buf) + "); set a ridge or use the pseudo-inverse");
    }
    sol.beta = -llt.solve(system.h);
    sol.rank = M;
    sol.condition = 1.0 / rcond;
  } else {
    Eigen::SelfAdjointEigenSolver<Matrix> eig(A);
    if (eig.info() != Eigen::Success)
      throw NumericalError("derivative basis solve: eigendecomposition failed");
    const Vector& w = eig.eigenvalues();  // increasing
    const double top = w.maxCoeff();
    if (!(top > 0)) throw NumericalError("derivative basis solve: the system has no positive eigenvalue");
    const double keep_above = options.cutoff * top;
    Vector inv = Vector::Zero(M);
    double smallest = top;
    for (Index k = 0; k < M; ++k) {
      if (w[k] > keep_above) {
        inv[k] = 1.0 / w[k];
        smallest = std::min(smallest, w[k]);
        ++sol.rank;
      }
    }
    const Matrix& V = eig.eigenvectors();
    sol.beta = -(V * inv.cwiseProduct(V.transpose() * system.h));
    sol.condition = top / smallest;
  }
  check_finite(sol.beta, "derivative basis solution");
  return sol;
}

Vector expand_derivative_coefficients(const DerivativeBasis& basis, const Vector& beta) {
  if (beta.size() != basis.size())
    throw Error("derivative basis: " + std::to_string(beta.size()) + " coefficients for " +
                std::to_string(basis.size()) + " atoms");
  if (basis.atoms.empty()) return beta;
  Vector out = Vector::Zero(basis.atom_count());
  for (std::size_t k = 0; k < basis.atoms.size(); ++k) out[basis.atoms[k]] = beta[static_cast<Index>(k)];
  return out;
}

}  // namespace kef
