#include "kef/lite_system.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

// C (lower triangle) += AᵀA with OpenBLAS, on one thread: kef parallelises over row blocks itself.
void syrk_lower(const Matrix& A, Matrix& C) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, static_cast<blasint>(C.rows()), static_cast<blasint>(A.rows()),
              1.0, A.data(), static_cast<blasint>(A.rows()), 1.0, C.data(), static_cast<blasint>(C.rows()));
}

struct BlockSums {
  Matrix G, U;
  Vector b_main, b_c;
};

// Partial sums are kept per block; the number of blocks depends only on M (memory), never on the
// thread count, and blocks are added in order, so the sums are bitwise reproducible.
Index block_count(Index M, Index N) {
  const double bytes_per_block = 2.0 * static_cast<double>(M) * static_cast<double>(M) * 8.0;
  Index by_memory = static_cast<Index>(256.0e6 / std::max(bytes_per_block, 1.0));
  return std::clamp<Index>(std::min<Index>(by_memory, 8), 1, std::max<Index>(N, 1));
}

}  // namespace

LiteSystem accumulate_lite_system(const Kernel& kernel, const BaseMeasure& base, const Matrix& X,
                                  const Matrix& Z, const LiteAccumulateOptions& options) {
  const Index N = X.rows(), D = X.cols(), M = Z.rows();
  if (N == 0) throw DataError("lite system: no training rows");
  if (Z.cols() != D)
    throw DataError("lite system: inducing points have " + std::to_string(Z.cols()) +
                    " columns, data has " + std::to_string(D));
  Index chunk = options.chunk_rows;
  if (chunk <= 0) chunk = std::max<Index>(16, static_cast<Index>(4.0e6 / (8.0 * D * std::max<Index>(M, 1))));
  const Index blocks = block_count(M, N);
  const bool need_U = options.need_U;

  std::vector<BlockSums> sums(static_cast<std::size_t>(blocks));
  std::atomic<Index> rows_done{0};
  parallel_for(blocks, options.threads, [&](Index k) {
    const Index begin = N * k / blocks, end = N * (k + 1) / blocks;
    BlockSums& s = sums[static_cast<std::size_t>(k)];
    s.G = Matrix::Zero(M, M);
    if (need_U) s.U = Matrix::Zero(M, M);
    s.b_main = Vector::Zero(M);
    s.b_c = Vector::Zero(M);
    KernelStacks st;
    Matrix q1, q2;
    for (Index r = begin; r < end; r += chunk) {
      const Index len = std::min(chunk, end - r);
      const auto Xc = X.middleRows(r, len);
      kernel.derivatives(Xc, Z, 2, st);
      base.derivatives(Xc, q1, q2);
      // Column-major N x D flattens in (d, n) order, the row order of the stacks.
      Eigen::Map<const Vector> q1v(q1.data(), len * D), q2v(q2.data(), len * D);
      syrk_lower(st.d1, s.G);
      if (need_U) syrk_lower(st.d2, s.U);
      s.b_main.noalias() += st.d2.colwise().sum().transpose();
      s.b_main.noalias() += st.d1.transpose() * q1v;
      s.b_c.noalias() += st.d2.transpose() * q2v;
      Index done = rows_done.fetch_add(len) + len;
      if (options.progress)
        options.progress->update("lite system", static_cast<double>(done) / static_cast<double>(N),
                                 std::to_string(done) + "/" + std::to_string(N) + " rows");
    }
  });

  LiteSystem out;
  out.rows = N;
  out.G = Matrix::Zero(M, M);
  if (need_U) out.U = Matrix::Zero(M, M);
  out.b_main = Vector::Zero(M);
  out.b_c = Vector::Zero(M);
  for (const auto& s : sums) {
    out.G += s.G;
    if (need_U) out.U += s.U;
    out.b_main += s.b_main;
    out.b_c += s.b_c;
  }
  const double inv_n = 1.0 / static_cast<double>(N);
  out.G = out.G.selfadjointView<Eigen::Lower>();
  out.G *= inv_n;
  if (need_U) {
    out.U = out.U.selfadjointView<Eigen::Lower>();
    out.U *= inv_n;
  }
  out.b_main *= inv_n;
  out.b_c *= inv_n;
  check_finite(out.G, "lite system G");
  check_finite(out.b_main, "lite system b");
  return out;
}

LiteSolution solve_lite_system(const LiteSystem& system, const Matrix& K, double lambda_alpha,
                               double lambda_h, double lambda_c) {
  const Index M = system.G.rows();
  Matrix A = system.G;
  A.diagonal().array() += lambda_alpha;
  if (lambda_h != 0) {
    if (K.rows() != M) throw Error("lite solve: lambda_h > 0 needs the M x M kernel matrix");
    A += lambda_h * K;
  }
  if (lambda_c != 0) {
    if (system.U.rows() != M) throw Error("lite solve: lambda_c > 0 needs U");
    A += lambda_c * system.U;
  }
  SpdFactor factor(A, "lite system (G + λ_α I + λ_H K + λ_C U)");
  LiteSolution sol;
  sol.alpha = -factor.solve(system.b(lambda_c));
  sol.jitter = factor.jitter();
  check_finite(sol.alpha, "lite solution alpha");
  return sol;
}

}  // namespace kef
