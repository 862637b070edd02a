#include "kef/closed_form_gradient.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_system.hpp"
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
        b[si] = Vector::Zero(M);
        bc[si] = Vector::Zero(M);
        add_lite_stack_terms(s.k, s.q1, s.q2, G[si], &U[si], b[si], bc[si]);
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
                                   const Matrix& validation, const Matrix& Z, double la, double lc,
                                   const Context& context) {
  check_inputs(train, validation, Z);
  const int threads = context.threads();
  Fit f = fit_alpha(kernel, base, train, Z, la, lc, threads);
  auto vb = validation_blocks(kernel, base, validation, Z, f.alpha, false, threads);
  double sum = 0;
  for (const auto& b : vb) sum += b.loss_sum;
  return sum / static_cast<double>(validation.rows());
}

ClosedFormGradient closed_form_validation_gradient(const Kernel& kernel, const BaseMeasure& base,
                                                   const Matrix& train, const Matrix& validation,
                                                   const Matrix& Z, double la, double lc,
                                                   const Context& context) {
  check_inputs(train, validation, Z);
  const int threads = context.threads();
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
  // (docs/math.md §5), dJ/dθ = ∂J_v/∂θ|_α − wᵀ(dA α + db), block by block.
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

// ---- Frozen kernel (DKEF stage 2) ----

struct FrozenKernelMetaProblem::Impl {
  const Kernel& kernel;
  const BaseMeasure& base;
  Matrix train, validation, Z;
  bool base_learns = false, keep = false;
  int threads = 1;
  std::vector<RowBlock> tblocks, vblocks;
  Index M = 0, D = 0, Nt = 0, Nv = 0;
  Matrix G, U, Gv;  // Σ B1ᵀB1, Σ B2ᵀB2, Σ B1vᵀB1v (unscaled, full symmetric)
  Vector c, cv;     // B2ᵀ1, B2vᵀ1
  // q0 statistics while q0 is fixed: B1ᵀq1, B2ᵀq2, B1vᵀq1v, Σ q2v, |q1v|².
  Vector h1, h2, hv;
  double sum_q2v = 0, sq_q1v = 0;
  Vector base_parameters;  // q0's parameters at construction (must not change unless base_learns)
  Vector kernel_parameters;  // the kernel's at construction (must not change)
  std::vector<Matrix> B1, B2, B1v;  // per block, only when `keep`

  Impl(const Kernel& k, const BaseMeasure& b) : kernel(k), base(b) {}

  std::size_t block_count() const { return tblocks.size() + vblocks.size(); }
  bool is_train(std::size_t i) const { return i < tblocks.size(); }
  Matrix rows_of_block(std::size_t i) const {
    return is_train(i) ? Matrix(train.middleRows(tblocks[i].begin, tblocks[i].rows))
                       : Matrix(validation.middleRows(vblocks[i - tblocks.size()].begin,
                                                      vblocks[i - tblocks.size()].rows));
  }
  // The block's kernel stacks: the kept ones, or recomputed into `scratch` (d2 only on training rows).
  void stacks(std::size_t i, const Matrix& X, KernelStacks& scratch, const Matrix*& d1, const Matrix*& d2) const {
    if (keep) {
      if (is_train(i)) {
        d1 = &B1[i];
        d2 = &B2[i];
      } else {
        d1 = &B1v[i - tblocks.size()];
        d2 = nullptr;
      }
      return;
    }
    kernel.derivatives(X, Z, 2, scratch);
    d1 = &scratch.d1;
    d2 = is_train(i) ? &scratch.d2 : nullptr;
  }
};

FrozenKernelMetaProblem::~FrozenKernelMetaProblem() = default;

bool FrozenKernelMetaProblem::keeps_stacks() const { return impl_->keep; }

FrozenKernelMetaProblem::FrozenKernelMetaProblem(const Kernel& kernel, const BaseMeasure& base,
                                                 const Matrix& train, const Matrix& validation,
                                                 const Matrix& Z, bool base_learns, const Context& context,
                                                 std::size_t stack_budget_bytes)
    : impl_(std::make_unique<Impl>(kernel, base)) {
  check_inputs(train, validation, Z);
  Impl& p = *impl_;
  p.train = train;
  p.validation = validation;
  p.Z = Z;
  p.base_learns = base_learns;
  p.threads = context.threads();
  const int threads = p.threads;
  p.M = Z.rows();
  p.D = Z.cols();
  p.Nt = train.rows();
  p.Nv = validation.rows();
  p.tblocks = row_blocks(p.Nt);
  p.vblocks = row_blocks(p.Nv);
  p.base_parameters = base.parameters();
  p.kernel_parameters = kernel.parameters();
  const double stack_bytes = 8.0 * static_cast<double>(p.M) * static_cast<double>(p.D) *
                             (2.0 * static_cast<double>(p.Nt) + static_cast<double>(p.Nv));
  p.keep = base_learns && stack_bytes <= static_cast<double>(stack_budget_bytes);
  if (p.keep) {
    p.B1.resize(p.tblocks.size());
    p.B2.resize(p.tblocks.size());
    p.B1v.resize(p.vblocks.size());
  }
  const Index M = p.M;
  p.G = Matrix::Zero(M, M);
  p.U = Matrix::Zero(M, M);
  p.Gv = Matrix::Zero(M, M);
  p.c = p.cv = p.h1 = p.h2 = p.hv = Vector::Zero(M);
  struct Part {
    Matrix G, U;
    Vector c, h1, h2;
    double sum_q2 = 0, sq_q1 = 0;
  };
  std::vector<Part> parts(static_cast<std::size_t>(kWave));
  const std::size_t nt = p.tblocks.size();
  in_waves(
      static_cast<Index>(p.block_count()), threads,
      [&](Index i, Index slot) {
        const auto bi = static_cast<std::size_t>(i);
        Part& q = parts[static_cast<std::size_t>(slot)];
        Stacks st = stacks_of(kernel, base, p.rows_of_block(bi), Z);
        const bool tr = bi < nt;
        q.G = Matrix::Zero(M, M);
        add_gram_lower(st.k.d1, q.G);
        q.c = st.k.d2.colwise().sum().transpose();
        if (!base_learns) {
          q.h1.noalias() = st.k.d1.transpose() * st.q1;
          if (tr) q.h2.noalias() = st.k.d2.transpose() * st.q2;
          q.sum_q2 = st.q2.sum();
          q.sq_q1 = st.q1.squaredNorm();
        }
        if (tr) {
          q.U = Matrix::Zero(M, M);
          add_gram_lower(st.k.d2, q.U);
        }
        if (p.keep) {
          if (tr) {
            p.B1[bi] = std::move(st.k.d1);
            p.B2[bi] = std::move(st.k.d2);
          } else {
            p.B1v[bi - nt] = std::move(st.k.d1);
          }
        }
      },
      [&](Index i, Index slot) {
        const Part& q = parts[static_cast<std::size_t>(slot)];
        if (static_cast<std::size_t>(i) < nt) {
          p.G += q.G;
          p.U += q.U;
          p.c += q.c;
          if (!base_learns) {
            p.h1 += q.h1;
            p.h2 += q.h2;
          }
        } else {
          p.Gv += q.G;
          p.cv += q.c;
          if (!base_learns) {
            p.hv += q.h1;
            p.sum_q2v += q.sum_q2;
            p.sq_q1v += q.sq_q1;
          }
        }
      });
  p.G = Matrix(p.G.selfadjointView<Eigen::Lower>());
  p.U = Matrix(p.U.selfadjointView<Eigen::Lower>());
  p.Gv = Matrix(p.Gv.selfadjointView<Eigen::Lower>());
}

// One evaluation of the frozen-kernel problem; the gradient parts only if `grad` is set.
double FrozenKernelMetaProblem::evaluate(double la, double lc, FrozenKernelGradient* grad) const {
  const Impl& p = *impl_;
  const Index M = p.M, D = p.D, nq = p.base.parameter_count();
  const double inv_t = 1.0 / static_cast<double>(p.Nt), inv_v = 1.0 / static_cast<double>(p.Nv);
  const std::size_t nb = p.block_count(), nt = p.tblocks.size();
  Vector h1 = p.h1, h2 = p.h2, hv = p.hv;
  double sum_q2v = p.sum_q2v, sq_q1v = p.sq_q1v;
  std::vector<Matrix> q1(nb), q2(nb);  // q0's derivatives per block (n x D), when q0 learns
  if (p.base_learns) {
    // Pass 1: q0's derivatives and their products with the stacks, per block, added in block order.
    struct Part {
      Vector h1, h2;
      double sum_q2 = 0, sq_q1 = 0;
    };
    std::vector<Part> parts(nb);
    parallel_for(static_cast<Index>(nb), p.threads, [&](Index i) {
      const auto bi = static_cast<std::size_t>(i);
      const Matrix X = p.rows_of_block(bi);
      p.base.derivatives(X, q1[bi], q2[bi]);
      KernelStacks scratch;
      const Matrix *d1 = nullptr, *d2 = nullptr;
      p.stacks(bi, X, scratch, d1, d2);
      const Eigen::Map<const Vector> v1(q1[bi].data(), q1[bi].size()), v2(q2[bi].data(), q2[bi].size());
      Part& q = parts[bi];
      q.h1.noalias() = d1->transpose() * v1;
      if (d2) q.h2.noalias() = d2->transpose() * v2;
      q.sum_q2 = v2.sum();
      q.sq_q1 = v1.squaredNorm();
    });
    h1 = h2 = hv = Vector::Zero(M);
    sum_q2v = sq_q1v = 0;
    for (std::size_t i = 0; i < nb; ++i) {
      if (i < nt) {
        h1 += parts[i].h1;
        h2 += parts[i].h2;
      } else {
        hv += parts[i].h1;
        sum_q2v += parts[i].sum_q2;
        sq_q1v += parts[i].sq_q1;
      }
    }
  } else if (p.base.parameters() != p.base_parameters) {
    throw std::logic_error("FrozenKernelMetaProblem: q0's parameters changed but base_learns is false");
  }
  if (p.kernel.parameters() != p.kernel_parameters)
    throw std::logic_error("FrozenKernelMetaProblem: the kernel's parameters changed after construction");

  Matrix A = inv_t * p.G;
  A.noalias() += (lc * inv_t) * p.U;
  A.diagonal().array() += la;
  const Vector b = inv_t * (p.c + h1 + lc * h2);
  const SpdFactor factor(A, "DKEF stage-2 fit (G + λ_α I + λ_C U)");
  const Vector alpha = -factor.solve(b);
  check_finite(alpha, "DKEF stage-2 alpha");
  const Vector Gva = p.Gv * alpha;
  const double loss = inv_v * (p.cv.dot(alpha) + sum_q2v + 0.5 * alpha.dot(Gva) + alpha.dot(hv) + 0.5 * sq_q1v);
  if (!std::isfinite(loss)) throw NumericalError("DKEF stage-2 validation loss is not finite");
  if (!grad) return loss;

  grad->loss = loss;
  grad->alpha = alpha;
  grad->jitter = factor.jitter();
  const Vector g = inv_v * (p.cv + Gva + hv);  // ∂J_v/∂α
  const Vector w = factor.solve(g);
  grad->log_lambda_alpha = la * (-w.dot(alpha));
  grad->log_lambda_c = lc * (-w.dot(inv_t * (p.U * alpha)) - inv_t * w.dot(h2));
  grad->base = Vector::Zero(nq);
  if (p.base_learns && nq > 0) {
    // Pass 2: q0's adjoints, −B1 w/N and −λ_C B2 w/N on training rows, (B1v α + q1v)/Nv and 1/Nv on
    // validation rows, through BaseMeasure::backward; added in block order.
    std::vector<Vector> parts(nb);
    parallel_for(static_cast<Index>(nb), p.threads, [&](Index i) {
      const auto bi = static_cast<std::size_t>(i);
      const Matrix X = p.rows_of_block(bi);
      KernelStacks scratch;
      const Matrix *d1 = nullptr, *d2 = nullptr;
      p.stacks(bi, X, scratch, d1, d2);
      const Index n = X.rows();
      Vector q1bar, q2bar;
      if (bi < nt) {
        q1bar.noalias() = -inv_t * (*d1 * w);
        q2bar.noalias() = (-inv_t * lc) * (*d2 * w);
      } else {
        q1bar.noalias() = *d1 * alpha;
        q1bar += Eigen::Map<const Vector>(q1[bi].data(), q1[bi].size());
        q1bar *= inv_v;
        q2bar = Vector::Constant(n * D, inv_v);
      }
      parts[bi] = Vector::Zero(nq);
      p.base.backward(X, Vector(), Eigen::Map<const Matrix>(q1bar.data(), n, D),
                      Eigen::Map<const Matrix>(q2bar.data(), n, D), parts[bi]);
    });
    for (const auto& v : parts) grad->base += v;
  }
  if (!std::isfinite(grad->log_lambda_alpha) || !std::isfinite(grad->log_lambda_c))
    throw NumericalError("DKEF stage-2 gradient (log λ) is not finite");
  check_finite(grad->base, "DKEF stage-2 gradient (base measure parameters)");
  return loss;
}

FrozenKernelGradient FrozenKernelMetaProblem::gradient(double lambda_alpha, double lambda_c) const {
  FrozenKernelGradient out;
  evaluate(lambda_alpha, lambda_c, &out);
  return out;
}

double FrozenKernelMetaProblem::loss(double lambda_alpha, double lambda_c) const {
  return evaluate(lambda_alpha, lambda_c, nullptr);
}

}  // namespace kef
