#include "kef/lite_system.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <tuple>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

struct BlockSums {
  Matrix G, U;     // stack path: B1ᵀB1 (lower); both paths: B2ᵀB2 (lower)
  Matrix C, PtP;   // radial path: (Φ' ∘ r)ᵀΦ' (full) and Φ'ᵀΦ' (lower)
  Vector b_main, b_c;
};

// Partial sums are kept per block; the number of blocks depends only on M (memory), never on the
// thread count, and blocks are added in order, so the sums are bitwise reproducible.
Index block_count(Index M, Index N) {
  const double bytes_per_block = 3.0 * static_cast<double>(M) * static_cast<double>(M) * 8.0;
  Index by_memory = static_cast<Index>(256.0e6 / std::max(bytes_per_block, 1.0));
  return std::clamp<Index>(std::min<Index>(by_memory, 8), 1, std::max<Index>(N, 1));
}

// One chunk of the general path: the kernel's derivative stacks.
void add_stack_chunk(const Kernel& kernel, const Eigen::Ref<const Matrix>& Xc, const Matrix& Z, const Matrix& q1,
                     const Matrix& q2, bool need_U, KernelStacks& st, BlockSums& s) {
  const Index len = Xc.rows(), D = Xc.cols();
  kernel.derivatives(Xc, Z, 2, st);
  // Column-major N x D flattens in (d, n) order, the row order of the stacks.
  Eigen::Map<const Vector> q1v(q1.data(), len * D), q2v(q2.data(), len * D);
  add_lite_stack_terms(st, q1v, q2v, s.G, need_U ? &s.U : nullptr, s.b_main, s.b_c);
}

struct RadialWork {
  Matrix r, p1, p2, q, stack, xq;
};

// One chunk of the radial path (see lite_system.hpp). Xc and Z are centred on the same point, which
// leaves every x − z unchanged and keeps ‖x‖² + ‖z‖² − 2xᵀz from cancelling for data far from 0.
void add_radial_chunk(const RadialProfile& profile, const Eigen::Ref<const Matrix>& Xc, const Matrix& Z,
                      const Matrix& q1, const Matrix& q2, bool need_U, RadialWork& w, BlockSums& s) {
  const Index len = Xc.rows(), D = Xc.cols(), M = Z.rows();
  w.r = squared_distances(Xc, Z);
  profile.evaluate(w.r, nullptr, &w.p1, &w.p2);
  w.q = w.p1.cwiseProduct(w.r);
  add_cross_product(w.q, w.p1, s.C);
  add_gram_lower(w.p1, s.PtP);

  // b_main = Σ_n Σ_d ∂²_d k + ∂_d k q1_d
  //        = 1ᵀ(2D Φ' + 4 Φ'' ∘ r) + 2 Φ'ᵀ(Σ_d x_d q1_d) − 2 Σ_d z_d (Φ'ᵀ q1)_d
  const Vector xq1 = Xc.cwiseProduct(q1).rowwise().sum();
  s.b_main.noalias() += (2.0 * static_cast<double>(D)) * w.p1.colwise().sum().transpose();
  s.b_main.noalias() += 4.0 * w.p2.cwiseProduct(w.r).colwise().sum().transpose();
  s.b_main.noalias() += 2.0 * w.p1.transpose() * xq1;
  s.b_main.noalias() -= 2.0 * (w.p1.transpose() * q1).cwiseProduct(Z).rowwise().sum();

  // b_c = Σ_n Σ_d ∂²_d k q2_d = 2 Φ'ᵀ(Σ_d q2_d) + 4 Φ''ᵀ Σ_d (x_d − z_d)² q2_d, the square expanded.
  w.xq = Xc.cwiseProduct(q2);
  s.b_c.noalias() += 2.0 * w.p1.transpose() * q2.rowwise().sum();
  s.b_c.noalias() += 4.0 * w.p2.transpose() * Xc.cwiseProduct(w.xq).rowwise().sum();
  s.b_c.noalias() -= 8.0 * (w.p2.transpose() * w.xq).cwiseProduct(Z).rowwise().sum();
  s.b_c.noalias() += 4.0 * (w.p2.transpose() * q2).cwiseProduct(Z.cwiseAbs2()).rowwise().sum();

  if (!need_U) return;
  // ∂²_d k = 2φ' + 4φ''(x_d − z_d)², stacked in (d, n) row order.
  // One fused pass per column (contiguous in n, so it vectorises) instead of N x M temporaries per d.
  w.stack.resize(len * D, M);
  for (Index m = 0; m < M; ++m) {
    const double* p1 = w.p1.col(m).data();
    const double* p2 = w.p2.col(m).data();
    for (Index d = 0; d < D; ++d) {
      const double* x = Xc.col(d).data();
      const double z = Z(m, d);
      double* out = w.stack.col(m).data() + d * len;
      for (Index n = 0; n < len; ++n) {
        const double u = x[n] - z;
        out[n] = 2.0 * p1[n] + 4.0 * p2[n] * (u * u);
      }
    }
  }
  add_gram_lower(w.stack, s.U);
}

}  // namespace

namespace {

// What every block reads: the kernel (or its radial profile, with the centred inducing points and
// their centre), the base measure, the rows and the chunking.
struct BlockInputs {
  const Kernel& kernel;
  const BaseMeasure& base;
  const RadialProfile* radial;
  const Matrix* X;
  const TrainingRows* rows;
  const Matrix& Z;
  const Matrix& Zc;
  const Eigen::RowVectorXd& centre;
  const LiteAccumulateOptions& options;
  Index N, M, chunk;
  bool need_U;
};

// The sums of block k of `blocks`, chunk by chunk, reporting progress over all rows.
void accumulate_block(const BlockInputs& in, Index k, Index blocks, std::atomic<Index>& rows_done, BlockSums& s) {
  const Index N = in.N, M = in.M, chunk = in.chunk;
  const Matrix* X = in.X;
  const bool need_U = in.need_U;
  const Index begin = N * k / blocks, end = N * (k + 1) / blocks;
  if (in.radial) {
    s.C = Matrix::Zero(M, M);
    s.PtP = Matrix::Zero(M, M);
  } else {
    s.G = Matrix::Zero(M, M);
  }
  if (need_U) s.U = Matrix::Zero(M, M);
  s.b_main = Vector::Zero(M);
  s.b_c = Vector::Zero(M);
  KernelStacks st;
  RadialWork work;
  Matrix q1, q2, xc;
  // Rows read by rows: only this block's, once; its chunks are then the same rows as X's.
  Matrix block;
  if (!X) block = in.rows->range(begin, end);
  const Matrix& src = X ? *X : block;
  const Index offset = X ? 0 : begin;
  for (Index r = begin; r < end; r += chunk) {
    const Index len = std::min(chunk, end - r);
    const auto Xc = src.middleRows(r - offset, len);
    in.base.derivatives(Xc, q1, q2);
    if (in.radial) {
      xc = Xc.rowwise() - in.centre;
      add_radial_chunk(*in.radial, xc, in.Zc, q1, q2, need_U, work, s);
    } else {
      add_stack_chunk(in.kernel, Xc, in.Z, q1, q2, need_U, st, s);
    }
    Index done = rows_done.fetch_add(len) + len;
    if (in.options.progress)
      in.options.progress->update("lite system", static_cast<double>(done) / static_cast<double>(N),
                                  std::to_string(done) + "/" + std::to_string(N) + " rows");
  }
}

// The blocks' sums added in block order, symmetrised and divided by N; on the radial path G is
// assembled from its two parts.
LiteSystem combine_blocks(const std::vector<BlockSums>& sums, bool radial, bool need_U, const Matrix& Zc, Index N) {
  const Index M = Zc.rows(), D = Zc.cols();
  LiteSystem out;
  out.rows = N;
  out.G = Matrix::Zero(M, M);
  if (need_U) out.U = Matrix::Zero(M, M);
  out.b_main = Vector::Zero(M);
  out.b_c = Vector::Zero(M);
  Matrix C, PtP;
  if (radial) {
    C = Matrix::Zero(M, M);
    PtP = Matrix::Zero(M, M);
  }
  for (const auto& s : sums) {
    if (radial) {
      C += s.C;
      PtP += s.PtP;
    } else {
      out.G += s.G;
    }
    if (need_U) out.U += s.U;
    out.b_main += s.b_main;
    out.b_c += s.b_c;
  }
  const double inv_n = 1.0 / static_cast<double>(N);
  if (radial) {
    // Squared distances between inducing points coordinate by coordinate: exact for coincident points.
    Matrix S = Matrix::Zero(M, M);
    for (Index d = 0; d < D; ++d)
      S.array() += (Zc.col(d).replicate(1, M).rowwise() - Zc.col(d).transpose()).array().square();
    PtP = PtP.selfadjointView<Eigen::Lower>();
    out.G = 2.0 * (C + C.transpose()) - 2.0 * S.cwiseProduct(PtP);
  } else {
    out.G = out.G.selfadjointView<Eigen::Lower>();
  }
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

// The sums over the rows of X, or of `rows` (read block by block) when X is null.
LiteSystem accumulate_rows(const Kernel& kernel, const BaseMeasure& base, const Matrix* X, const TrainingRows* rows,
                      const Matrix& Z, const LiteAccumulateOptions& options, const Context& context) {
  const Index N = X ? X->rows() : rows->rows(), D = X ? X->cols() : rows->cols(), M = Z.rows();
  if (N == 0) throw DataError("lite system: no training rows");
  if (Z.cols() != D)
    throw DataError("lite system: inducing points have " + std::to_string(Z.cols()) +
                    " columns, data has " + std::to_string(D));
  const RadialProfile* radial = options.use_radial_structure ? kernel.radial_profile() : nullptr;
  const bool need_U = options.need_U;
  Index chunk = options.chunk_rows;
  if (chunk <= 0) {
    // About 4 MB of (N·D) x M stack per chunk; the radial path without U only holds N x M matrices.
    const Index stack_width = (radial && !need_U) ? 4 : D;
    chunk = std::max<Index>(16, static_cast<Index>(4.0e6 / (8.0 * stack_width * std::max<Index>(M, 1))));
  }
  const Index blocks = block_count(M, N);

  Matrix Zc = Z;
  Eigen::RowVectorXd centre;
  if (radial) {
    centre = Z.colwise().mean();
    Zc.rowwise() -= centre;
  }

  std::atomic<Index> rows_done{0};
  const BlockInputs in{kernel, base, radial, X, rows, Z, Zc, centre, options, N, M, chunk, need_U};
  // Blocks are shared between the processes of a distributed run too (kef/distributed_reduce.hpp);
  // every process gets every block's sums and adds them in block order below.
  const std::vector<BlockSums> sums = distributed_parts(
      blocks, context, [] { return BlockSums(); },
      [&](Index k, BlockSums& s) { accumulate_block(in, k, blocks, rows_done, s); },
      [](BlockSums& s) { return std::tie(s.G, s.U, s.C, s.PtP, s.b_main, s.b_c); });
  return combine_blocks(sums, radial, need_U, Zc, N);
}

}  // namespace

LiteSystem accumulate_lite_system(const Kernel& kernel, const BaseMeasure& base, const Matrix& X,
                                  const Matrix& Z, const LiteAccumulateOptions& options,
                                  const Context& context) {
  return accumulate_rows(kernel, base, &X, nullptr, Z, options, context);
}

LiteSystem accumulate_lite_system(const Kernel& kernel, const BaseMeasure& base, const TrainingRows& X,
                                  const Matrix& Z, const LiteAccumulateOptions& options,
                                  const Context& context) {
  return accumulate_rows(kernel, base, nullptr, &X, Z, options, context);
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

void add_lite_stack_terms(const KernelStacks& st, const Eigen::Ref<const Vector>& q1, const Eigen::Ref<const Vector>& q2,
                          Matrix& G, Matrix* U, Vector& b, Vector& bc) {
  add_gram_lower(st.d1, G);
  if (U) add_gram_lower(st.d2, *U);
  b.noalias() += st.d2.colwise().sum().transpose();
  b.noalias() += st.d1.transpose() * q1;
  bc.noalias() += st.d2.transpose() * q2;
}

}  // namespace kef
