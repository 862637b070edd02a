#include "kef/closed_form_gradient.hpp"

#include <cblas.h>

#include <algorithm>
#include <vector>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

// Rows are processed in blocks whose boundaries depend only on the batch size: blocks of about
// kBlockRows rows, sizes differing by at most one. Every block's partial sums are kept and added in
// block order, so results are bitwise the same for any thread count.
constexpr Index kBlockRows = 25;

struct RowBlock {
  Index begin, rows;
};

// Blocks run in waves of kWave (a constant, so the order of the reduction does not depend on the
// thread count either): only one wave's partial sums (M x M each for G and U) are alive at a time,
// so memory stays flat when stage 2 fits on the whole fit split.
constexpr Index kWave = 8;

template <class Work, class Reduce>
void in_waves(Index n, int threads, Work&& work, Reduce&& reduce) {
  for (Index start = 0; start < n; start += kWave) {
    const Index len = std::min(kWave, n - start);
    parallel_for(len, threads, [&](Index j) { work(start + j, j); });
    for (Index j = 0; j < len; ++j) reduce(start + j, j);
  }
}

std::vector<RowBlock> row_blocks(Index n) {
  const Index count = std::max<Index>(1, (n + kBlockRows - 1) / kBlockRows);
  std::vector<RowBlock> out;
  Index begin = 0;
  for (Index b = 0; b < count; ++b) {
    const Index rows = n / count + (b < n % count ? 1 : 0);
    out.push_back({begin, rows});
    begin += rows;
  }
  return out;
}

// Stacks of one row block: kernel derivatives (row d·n + i) and q0's derivatives in the same order.
struct Stacks {
  Matrix X;
  KernelStacks k;
  Vector q1, q2;
};

Stacks stacks_of(const Kernel& kernel, const BaseMeasure& base, const Matrix& X, const Matrix& Z) {
  Stacks s;
  s.X = X;
  kernel.derivatives(X, Z, 2, s.k);
  Matrix q1, q2;
  base.derivatives(X, q1, q2);
  s.q1 = Eigen::Map<const Vector>(q1.data(), q1.size());
  s.q2 = Eigen::Map<const Vector>(q2.data(), q2.size());
  return s;
}

// C += AᵀA (lower triangle), through OpenBLAS dsyrk (single-threaded: kef's loops own the threads).
void syrk_lower(const Matrix& A, Matrix& C) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, static_cast<blasint>(C.rows()), static_cast<blasint>(A.rows()),
              1.0, A.data(), static_cast<blasint>(A.rows()), 1.0, C.data(), static_cast<blasint>(C.rows()));
}

struct Fit {
  std::vector<Stacks> train;  // per block
  SpdFactor factor;
  Vector alpha;
  Matrix U;  // symmetric, full
};

Fit fit_alpha(const Kernel& kernel, const BaseMeasure& base, const Matrix& train, const Matrix& Z, double la, double lc,
              int threads) {
  const auto blocks = row_blocks(train.rows());
  const Index M = Z.rows();
  const auto nb = static_cast<Index>(blocks.size());
  Fit f;
  f.train.resize(blocks.size());
  const double inv_n = 1.0 / static_cast<double>(train.rows());
  std::vector<Matrix> G(static_cast<std::size_t>(kWave)), U(static_cast<std::size_t>(kWave));
  std::vector<Vector> b(static_cast<std::size_t>(kWave)), bc(static_cast<std::size_t>(kWave));
  Matrix A = Matrix::Zero(M, M), Us = Matrix::Zero(M, M);
  Vector bm = Vector::Zero(M), bcs = Vector::Zero(M);
  in_waves(
      nb, threads,
      [&](Index i, Index slot) {
        const auto bi = static_cast<std::size_t>(i), si = static_cast<std::size_t>(slot);
        Stacks& s = f.train[bi];
        s = stacks_of(kernel, base, train.middleRows(blocks[bi].begin, blocks[bi].rows), Z);
        G[si] = Matrix::Zero(M, M);
        U[si] = Matrix::Zero(M, M);
        syrk_lower(s.k.d1, G[si]);
        syrk_lower(s.k.d2, U[si]);
        b[si] = s.k.d2.colwise().sum().transpose();
        b[si].noalias() += s.k.d1.transpose() * s.q1;
        bc[si].noalias() = s.k.d2.transpose() * s.q2;
      },
      [&](Index, Index slot) {
        const auto si = static_cast<std::size_t>(slot);
        A += G[si];
        Us += U[si];
        bm += b[si];
        bcs += bc[si];
      });
  A *= inv_n;
  Us *= inv_n;
  f.U = Us.selfadjointView<Eigen::Lower>();
  A += lc * Us;
  A = Matrix(A.selfadjointView<Eigen::Lower>());
  A.diagonal().array() += la;
  const Vector bv = (bm + lc * bcs) * inv_n;
  f.factor = SpdFactor(A, "DKEF closed-form fit (G + λ_α I + λ_C U)");
  f.alpha = -f.factor.solve(bv);
  check_finite(f.alpha, "DKEF closed-form alpha");
  return f;
}

// Per validation block: the score s = B1 α + q1, the loss terms and ∂J_v/∂α (unscaled).
struct ValidationBlock {
  Stacks st;
  Vector s;
  double loss_sum = 0;  // Σ [lap + ½ s²] over the block's rows and coordinates
  Vector dalpha;        // B2ᵀ1 + B1ᵀ s
};

std::vector<ValidationBlock> validation_blocks(const Kernel& kernel, const BaseMeasure& base, const Matrix& V,
                                               const Matrix& Z, const Vector& alpha, bool need_dalpha, int threads) {
  const auto blocks = row_blocks(V.rows());
  std::vector<ValidationBlock> out(blocks.size());
  parallel_for(static_cast<Index>(blocks.size()), threads, [&](Index i) {
    const auto bi = static_cast<std::size_t>(i);
    ValidationBlock& vb = out[bi];
    vb.st = stacks_of(kernel, base, V.middleRows(blocks[bi].begin, blocks[bi].rows), Z);
    vb.s.noalias() = vb.st.k.d1 * alpha;
    vb.s += vb.st.q1;
    Vector l = vb.st.q2;
    l.noalias() += vb.st.k.d2 * alpha;
    vb.loss_sum = l.sum() + 0.5 * vb.s.squaredNorm();
    if (need_dalpha) {
      vb.dalpha = vb.st.k.d2.colwise().sum().transpose();
      vb.dalpha.noalias() += vb.st.k.d1.transpose() * vb.s;
    }
  });
  return out;
}

void check_inputs(const Matrix& train, const Matrix& validation, const Matrix& Z) {
  if (train.rows() == 0 || validation.rows() == 0) throw DataError("DKEF gradient: empty batch");
  if (train.cols() != Z.cols() || validation.cols() != Z.cols())
    throw DataError("DKEF gradient: batches and inducing points differ in dimension");
}

// Gradients of one block's backward pass, reduced later in block order.
struct Partial {
  Vector kernel, base;
  Matrix inducing;
  double lc_term = 0;  // wᵀ B2ᵀ q2 of a training block
};

}  // namespace

double closed_form_validation_loss(const Kernel& kernel, const BaseMeasure& base, const Matrix& train,
                                   const Matrix& validation, const Matrix& Z, double la, double lc, int threads) {
  check_inputs(train, validation, Z);
  Fit f = fit_alpha(kernel, base, train, Z, la, lc, threads);
  auto vb = validation_blocks(kernel, base, validation, Z, f.alpha, false, threads);
  double sum = 0;
  for (const auto& b : vb) sum += b.loss_sum;
  return sum / static_cast<double>(validation.rows());
}

ClosedFormGradient closed_form_validation_gradient(const Kernel& kernel, const BaseMeasure& base,
                                                   const Matrix& train, const Matrix& validation, const Matrix& Z,
                                                   double la, double lc, int threads) {
  check_inputs(train, validation, Z);
  const Index Nt = train.rows(), Nv = validation.rows(), M = Z.rows(), D = Z.cols();
  Fit f = fit_alpha(kernel, base, train, Z, la, lc, threads);
  auto vblocks = validation_blocks(kernel, base, validation, Z, f.alpha, true, threads);
  ClosedFormGradient out;
  out.alpha = f.alpha;
  out.jitter = f.factor.jitter();
  const double inv_v = 1.0 / static_cast<double>(Nv), inv_t = 1.0 / static_cast<double>(Nt);
  double loss_sum = 0;
  Vector g = Vector::Zero(M);  // ∂J_v/∂α
  for (const auto& b : vblocks) {
    loss_sum += b.loss_sum;
    g += b.dalpha;
  }
  out.loss = loss_sum * inv_v;
  if (!std::isfinite(out.loss)) throw NumericalError("DKEF validation loss is not finite");
  g *= inv_v;
  const Vector& a = f.alpha;
  const Vector w = f.factor.solve(g);

  // Direct terms of J_v = (1/Nv) Σ [B2v α + q2v + ½ (B1v α + q1v)²] and, through the solve
  // (MATH.md §5), dJ/dθ = ∂J_v/∂θ|_α − wᵀ(dA α + db), block by block.
  const bool kernel_grads = kernel.parameter_count() > 0 || kernel.capabilities().inducing_point_gradients;
  const Index nk = kernel.parameter_count(), nq = base.parameter_count();
  const std::size_t nt_blocks = f.train.size(), n_blocks = nt_blocks + vblocks.size();
  std::vector<Partial> parts(static_cast<std::size_t>(kWave));
  out.kernel = Vector::Zero(nk);
  out.inducing = Matrix::Zero(M, D);
  out.base = Vector::Zero(nq);
  double lc_term = 0;
  in_waves(
      static_cast<Index>(n_blocks), threads,
      [&](Index i, Index slot) {
    const auto bi = static_cast<std::size_t>(i);
    Partial& p = parts[static_cast<std::size_t>(slot)];
    p.lc_term = 0;
    p.kernel = Vector::Zero(nk);
    p.inducing = Matrix::Zero(M, D);
    p.base = Vector::Zero(nq);
    const bool is_train = bi < nt_blocks;
    const Stacks& st = is_train ? f.train[bi] : vblocks[bi - nt_blocks].st;
    const Index n = st.X.rows();
    KernelStacks adj;
    Vector q1bar, q2bar;
    if (is_train) {
      const Matrix& B1 = st.k.d1;
      const Matrix& B2 = st.k.d2;
      const Vector B1a = B1 * a, B1w = B1 * w, B2a = B2 * a, B2w = B2 * w;
      adj.d1.noalias() = -inv_t * (B1a * w.transpose());
      adj.d1.noalias() -= inv_t * (B1w * a.transpose());
      adj.d1.noalias() -= inv_t * (st.q1 * w.transpose());
      adj.d2.noalias() = -inv_t * lc * (B2a * w.transpose());
      adj.d2.noalias() -= inv_t * lc * (B2w * a.transpose());
      adj.d2.noalias() -= inv_t * ((Vector::Ones(B2.rows()) + lc * st.q2) * w.transpose());
      p.lc_term = B2w.dot(st.q2);
      q1bar = -inv_t * B1w;
      q2bar = -inv_t * lc * B2w;
    } else {
      const Vector& s = vblocks[bi - nt_blocks].s;
      adj.d1.noalias() = inv_v * (s * a.transpose());
      adj.d2 = Matrix::Constant(s.size(), M, 0.0);
      adj.d2.rowwise() = inv_v * a.transpose();
      q1bar = inv_v * s;
      q2bar = Vector::Constant(s.size(), inv_v);
    }
    if (kernel_grads) kernel.backward(st.X, Z, adj, &p.kernel, &p.inducing);
    if (nq > 0)
      base.backward(st.X, Vector(), Eigen::Map<const Matrix>(q1bar.data(), n, D),
                    Eigen::Map<const Matrix>(q2bar.data(), n, D), p.base);
      },
      [&](Index, Index slot) {
        const Partial& p = parts[static_cast<std::size_t>(slot)];
        out.kernel += p.kernel;
        out.inducing += p.inducing;
        out.base += p.base;
        lc_term += p.lc_term;
      });
  out.log_lambda_alpha = la * (-w.dot(a));
  out.log_lambda_c = lc * (-w.dot(f.U * a) - inv_t * lc_term);
  check_finite(out.kernel, "DKEF gradient (kernel parameters)");
  check_finite(out.inducing, "DKEF gradient (inducing points)");
  check_finite(out.base, "DKEF gradient (base measure parameters)");
  return out;
}

}  // namespace kef
