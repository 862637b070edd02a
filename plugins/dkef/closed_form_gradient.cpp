#include "closed_form_gradient.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_system.hpp"
#include "kef/parallel.hpp"

namespace kef {

// Not in the anonymous namespace: FrozenKernelMetaProblem::Impl, which has external linkage, holds
// RowBlocks.
namespace closed_form_gradient_detail {
struct RowBlock {
  Index begin, rows;
};
}  // namespace closed_form_gradient_detail

namespace {

using closed_form_gradient_detail::RowBlock;

// Rows are processed in blocks whose boundaries depend only on the batch size: blocks of about
// kBlockRows rows, sizes differing by at most one. Every block's partial sums are kept and added in
// block order, so results are bitwise the same for any thread count.
constexpr Index kBlockRows = 25;

// Blocks run in waves of kWave (a constant, so the order of the reduction does not depend on the
// thread count either): only one wave's partial sums (M x M each for G and U) are alive at a time,
// so memory stays flat when stage 2 fits on the whole fit split.
constexpr Index kWave = 8;

// The sums over all rows (a fit of α, the validation loss, stage 2's statistics) are ordered
// reductions over the row blocks in at most kGroups contiguous runs of blocks (kef/parallel.hpp,
// kef/distributed_reduce.hpp): each run adds its blocks in order, the runs are added in run order. The
// runs depend only on the row count, so the sums are bitwise the same for any thread count and any
// number of processes of a distributed run, which share the runs. At most kGroups partials (M x M
// each) are alive at a time, as with the waves.
constexpr Index kGroups = kWave;

// This context without its processes: for work every process does whole (minibatches, whose stacks
// the backward pass needs on the process that fits α).
Context on_this_process(const Context& context) {
  Context local = context;
  local.set_communicator(single_process());
  return local;
}

// into += x, where an empty partial (a run without rows of that kind) adds nothing.
template <class T>
void add_into(T& into, const T& x) {
  if (x.size() == 0) return;
  if (into.size() == 0)
    into = x;
  else
    into += x;
}

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

// α on `train`. keep_stacks: each block's stacks stay in Fit::train for a backward pass, which needs
// all of them here, so the caller passes a context of this process alone.
Fit fit_alpha(const Kernel& kernel, const BaseMeasure& base, const Matrix& train, const Matrix& Z, double la,
              double lc, const Context& context, bool keep_stacks) {
  const auto blocks = row_blocks(train.rows());
  const Index M = Z.rows();
  const auto nb = static_cast<Index>(blocks.size());
  Fit f;
  if (keep_stacks) f.train.resize(blocks.size());
  const double inv_n = 1.0 / static_cast<double>(train.rows());
  struct Sums {
    Matrix G, U;
    Vector b, bc;
  };
  Sums sums = ordered_reduce(
      nb, context,
      [&] {
        return Sums{Matrix::Zero(M, M), Matrix::Zero(M, M), Vector::Zero(M), Vector::Zero(M)};
      },
      [&](Index i, Sums& q) {
        const auto bi = static_cast<std::size_t>(i);
        Stacks s = stacks_of(kernel, base, train.middleRows(blocks[bi].begin, blocks[bi].rows), Z);
        add_lite_stack_terms(s.k, s.q1, s.q2, q.G, &q.U, q.b, q.bc);
        if (keep_stacks) f.train[bi] = std::move(s);
      },
      [](Sums& into, const Sums& q) {
        into.G += q.G;
        into.U += q.U;
        into.b += q.b;
        into.bc += q.bc;
      },
      kGroups, [](Sums& q) { return std::tie(q.G, q.U, q.b, q.bc); });
  Matrix A = std::move(sums.G), Us = std::move(sums.U);
  A *= inv_n;
  Us *= inv_n;
  f.U = Us.selfadjointView<Eigen::Lower>();
  A += lc * Us;
  A = Matrix(A.selfadjointView<Eigen::Lower>());
  A.diagonal().array() += la;
  const Vector bv = (sums.b + lc * sums.bc) * inv_n;
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

ValidationBlock validation_block(const Kernel& kernel, const BaseMeasure& base, const Matrix& X,
                                 const Matrix& Z, const Vector& alpha, bool need_dalpha) {
  ValidationBlock vb;
  vb.st = stacks_of(kernel, base, X, Z);
  vb.s.noalias() = vb.st.k.d1 * alpha;
  vb.s += vb.st.q1;
  Vector l = vb.st.q2;
  l.noalias() += vb.st.k.d2 * alpha;
  vb.loss_sum = l.sum() + 0.5 * vb.s.squaredNorm();
  if (need_dalpha) {
    vb.dalpha = vb.st.k.d2.colwise().sum().transpose();
    vb.dalpha.noalias() += vb.st.k.d1.transpose() * vb.s;
  }
  return vb;
}

std::vector<ValidationBlock> validation_blocks(const Kernel& kernel, const BaseMeasure& base, const Matrix& V,
                                               const Matrix& Z, const Vector& alpha, bool need_dalpha, int threads) {
  const auto blocks = row_blocks(V.rows());
  std::vector<ValidationBlock> out(blocks.size());
  parallel_for(static_cast<Index>(blocks.size()), threads, [&](Index i) {
    const auto bi = static_cast<std::size_t>(i);
    out[bi] = validation_block(kernel, base, V.middleRows(blocks[bi].begin, blocks[bi].rows), Z, alpha,
                               need_dalpha);
  });
  return out;
}

// Σ [lap + ½ s²] over the validation rows, in the runs of blocks of the distributed sums.
double validation_loss_sum(const Kernel& kernel, const BaseMeasure& base, const Matrix& V, const Matrix& Z,
                           const Vector& alpha, const Context& context) {
  const auto blocks = row_blocks(V.rows());
  return ordered_reduce(
      static_cast<Index>(blocks.size()), context, [] { return 0.0; },
      [&](Index i, double& sum) {
        const auto bi = static_cast<std::size_t>(i);
        sum +=
            validation_block(kernel, base, V.middleRows(blocks[bi].begin, blocks[bi].rows), Z, alpha, false)
                .loss_sum;
      },
      [](double& into, double x) { into += x; }, kGroups, [](double& sum) { return std::tie(sum); });
}

void check_inputs(Index train_rows, Index train_cols, const Matrix& validation, const Matrix& Z) {
  if (train_rows == 0 || validation.rows() == 0) throw DataError("DKEF gradient: empty batch");
  if (train_cols != Z.cols() || validation.cols() != Z.cols())
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
  check_inputs(train.rows(), train.cols(), validation, Z);
  // Both sums are shared between the processes of a distributed run.
  const Fit f = fit_alpha(kernel, base, train, Z, la, lc, context, false);
  return validation_loss_sum(kernel, base, validation, Z, f.alpha, context) /
         static_cast<double>(validation.rows());
}

ClosedFormGradient closed_form_validation_gradient(const Kernel& kernel, const BaseMeasure& base,
                                                   const Matrix& train, const Matrix& validation,
                                                   const Matrix& Z, double la, double lc,
                                                   const Context& context) {
  check_inputs(train.rows(), train.cols(), validation, Z);
  const int threads = context.threads();
  const Index Nt = train.rows(), Nv = validation.rows(), M = Z.rows(), D = Z.cols();
  // A minibatch: every process computes it whole (its stacks feed the backward pass below).
  Fit f = fit_alpha(kernel, base, train, Z, la, lc, on_this_process(context), true);
  auto vblocks = validation_blocks(kernel, base, validation, Z, f.alpha, true, threads);
  ClosedFormGradient out;
  out.alpha = f.alpha;
  out.jitter = f.factor.jitter();
  const double inv_v = 1.0 / static_cast<double>(Nv), inv_t = 1.0 / static_cast<double>(Nt);
  // The loss in the runs of blocks closed_form_validation_loss uses, so the two agree bitwise.
  const double loss_sum = ordered_reduce(
      static_cast<Index>(vblocks.size()), 1, [] { return 0.0; },
      [&](Index i, double& sum) { sum += vblocks[static_cast<std::size_t>(i)].loss_sum; },
      [](double& into, double x) { into += x; }, kGroups);
  Vector g = Vector::Zero(M);  // ∂J_v/∂α
  for (const auto& b : vblocks) g += b.dalpha;
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
  Matrix held_train;       // a copy of the rows given as a matrix (`train` then views it)
  TrainingRowsPtr train;   // read a block at a time
  Matrix validation, Z;
  bool base_learns = false, keep = false;
  Context context;  // its processes share every sum over the blocks
  std::vector<RowBlock> tblocks, vblocks;
  Index M = 0, D = 0, Nt = 0, Nv = 0;
  Matrix G, U, Gv;  // Σ B1ᵀB1, Σ B2ᵀB2, Σ B1vᵀB1v (unscaled, full symmetric)
  Vector c, cv;     // B2ᵀ1, B2vᵀ1
  // q0 statistics while q0 is fixed: B1ᵀq1, B2ᵀq2, B1vᵀq1v, Σ q2v, |q1v|².
  Vector h1, h2, hv;
  double sum_q2v = 0, sq_q1v = 0;
  Vector base_parameters;  // q0's parameters at construction (must not change unless base_learns)
  Vector kernel_parameters;  // the kernel's at construction (must not change)
  // Per block, only when `keep`, and only for the blocks this process sums (own_items): every sum
  // over the blocks uses the same runs, so the same process meets the same blocks each time.
  std::vector<Matrix> B1, B2, B1v;

  Impl(const Kernel& k, const BaseMeasure& b, const Context& c) : kernel(k), base(b), context(c) {}

  // The pieces of build and evaluate (defined with them).
  void sum_stacks();
  void q0_products(std::vector<Matrix>& q1, Vector& h1, Vector& h2, Vector& hv, double& sum_q2v,
                   double& sq_q1v) const;
  Vector q0_gradient(std::vector<Matrix>& q1, const Vector& w, const Vector& alpha, double lc) const;

  std::size_t block_count() const { return tblocks.size() + vblocks.size(); }
  bool is_train(std::size_t i) const { return i < tblocks.size(); }
  Matrix rows_of_block(std::size_t i) const {
    return is_train(i) ? train->range(tblocks[i].begin, tblocks[i].begin + tblocks[i].rows)
                       : Matrix(validation.middleRows(vblocks[i - tblocks.size()].begin,
                                                      vblocks[i - tblocks.size()].rows));
  }
  // The block's kernel stacks: the kept ones, or recomputed into `scratch` (d2 only on training rows).
  void stacks(std::size_t i, const Matrix& X, KernelStacks& scratch, const Matrix*& d1,
              const Matrix*& d2) const {
    // (A block another process kept, met when the sums run on this process alone inside a parallel
    // loop, is recomputed: bitwise the same stacks.)
    if (keep && (is_train(i) ? B1[i].size() : B1v[i - tblocks.size()].size()) > 0) {
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
    : impl_(std::make_unique<Impl>(kernel, base, context)) {
  impl_->held_train = train;
  impl_->train = std::make_shared<MatrixRows>(impl_->held_train);
  build(validation, Z, base_learns, stack_budget_bytes);
}

FrozenKernelMetaProblem::FrozenKernelMetaProblem(const Kernel& kernel, const BaseMeasure& base, TrainingRowsPtr train,
                                                 const Matrix& validation, const Matrix& Z, bool base_learns,
                                                 const Context& context, std::size_t stack_budget_bytes)
    : impl_(std::make_unique<Impl>(kernel, base, context)) {
  impl_->train = std::move(train);
  build(validation, Z, base_learns, stack_budget_bytes);
}

void FrozenKernelMetaProblem::build(const Matrix& validation, const Matrix& Z, bool base_learns,
                                    std::size_t stack_budget_bytes) {
  Impl& p = *impl_;
  const Kernel& kernel = p.kernel;
  const BaseMeasure& base = p.base;
  const TrainingRows& train = *p.train;
  check_inputs(train.rows(), train.cols(), validation, Z);
  p.validation = validation;
  p.Z = Z;
  p.base_learns = base_learns;
  p.M = Z.rows();
  p.D = Z.cols();
  p.Nt = train.rows();
  p.Nv = validation.rows();
  p.tblocks = row_blocks(p.Nt);
  p.vblocks = row_blocks(p.Nv);
  p.base_parameters = base.parameters();
  p.kernel_parameters = kernel.parameters();
  // All rows' stacks, 8·M·D bytes per row (twice on training rows), as one process holds them: the
  // decision (reported as stage2_stacks_in_memory) is the same for any number of processes, each of
  // which then holds only its share (own_items).
  const double stack_bytes = 8.0 * static_cast<double>(p.M) * static_cast<double>(p.D) *
                             (2.0 * static_cast<double>(p.Nt) + static_cast<double>(p.Nv));
  p.keep = base_learns && stack_bytes <= static_cast<double>(stack_budget_bytes);
  if (p.keep) {
    p.B1.resize(p.tblocks.size());
    p.B2.resize(p.tblocks.size());
    p.B1v.resize(p.vblocks.size());
  }
  p.sum_stacks();
}

// The sums over the row blocks that every evaluation reuses (and, when `keep`, the blocks' stacks).
void FrozenKernelMetaProblem::Impl::sum_stacks() {
  Impl& p = *this;
  const Kernel& kernel = p.kernel;
  const BaseMeasure& base = p.base;
  const Context& context = p.context;
  const bool base_learns = p.base_learns;
  const Matrix& Z = p.Z;
  const std::size_t nt = p.tblocks.size();
  const Index M = p.M;
  // Training blocks fill G, U, c, h1, h2; validation blocks Gv, cv, hv and the two scalars. A run of
  // blocks holds only the kinds it met (an empty member adds nothing).
  struct Part {
    Matrix G, U, Gv;
    Vector c, cv, h1, h2, hv;
    double sum_q2v = 0, sq_q1v = 0;
  };
  auto zero_if_empty = [M](auto& x, Index cols) {
    if (x.size() == 0) x.setZero(M, cols);
  };
  Part sums = ordered_reduce(
      static_cast<Index>(p.block_count()), context, [] { return Part(); },
      [&](Index i, Part& q) {
        const auto bi = static_cast<std::size_t>(i);
        Stacks st = stacks_of(kernel, base, p.rows_of_block(bi), Z);
        if (bi < nt) {
          zero_if_empty(q.G, M);
          zero_if_empty(q.U, M);
          add_gram_lower(st.k.d1, q.G);
          add_gram_lower(st.k.d2, q.U);
          add_into(q.c, Vector(st.k.d2.colwise().sum().transpose()));
          if (!base_learns) {
            add_into(q.h1, Vector(st.k.d1.transpose() * st.q1));
            add_into(q.h2, Vector(st.k.d2.transpose() * st.q2));
          }
        } else {
          zero_if_empty(q.Gv, M);
          add_gram_lower(st.k.d1, q.Gv);
          add_into(q.cv, Vector(st.k.d2.colwise().sum().transpose()));
          if (!base_learns) {
            add_into(q.hv, Vector(st.k.d1.transpose() * st.q1));
            q.sum_q2v += st.q2.sum();
            q.sq_q1v += st.q1.squaredNorm();
          }
        }
        if (p.keep) {
          if (bi < nt) {
            p.B1[bi] = std::move(st.k.d1);
            p.B2[bi] = std::move(st.k.d2);
          } else {
            p.B1v[bi - nt] = std::move(st.k.d1);
          }
        }
      },
      [](Part& into, const Part& q) {
        add_into(into.G, q.G);
        add_into(into.U, q.U);
        add_into(into.Gv, q.Gv);
        add_into(into.c, q.c);
        add_into(into.cv, q.cv);
        add_into(into.h1, q.h1);
        add_into(into.h2, q.h2);
        add_into(into.hv, q.hv);
        into.sum_q2v += q.sum_q2v;
        into.sq_q1v += q.sq_q1v;
      },
      kGroups,
      [](Part& q) { return std::tie(q.G, q.U, q.Gv, q.c, q.cv, q.h1, q.h2, q.hv, q.sum_q2v, q.sq_q1v); });
  p.G = Matrix(sums.G.selfadjointView<Eigen::Lower>());
  p.U = Matrix(sums.U.selfadjointView<Eigen::Lower>());
  p.Gv = Matrix(sums.Gv.selfadjointView<Eigen::Lower>());
  p.c = std::move(sums.c);
  p.cv = std::move(sums.cv);
  // While q0 learns these are recomputed at every evaluation; zeros stand for "not yet".
  p.h1 = sums.h1.size() ? sums.h1 : Vector(Vector::Zero(M));
  p.h2 = sums.h2.size() ? sums.h2 : Vector(Vector::Zero(M));
  p.hv = sums.hv.size() ? sums.hv : Vector(Vector::Zero(M));
  p.sum_q2v = sums.sum_q2v;
  p.sq_q1v = sums.sq_q1v;
}

// One evaluation of the frozen-kernel problem; the gradient parts only if `grad` is set.
double FrozenKernelMetaProblem::evaluate(double la, double lc, FrozenKernelGradient* grad) const {
  const Impl& p = *impl_;
  const Index nq = p.base.parameter_count();
  const double inv_t = 1.0 / static_cast<double>(p.Nt), inv_v = 1.0 / static_cast<double>(p.Nv);
  const std::size_t nb = p.block_count();
  Vector h1 = p.h1, h2 = p.h2, hv = p.hv;
  double sum_q2v = p.sum_q2v, sq_q1v = p.sq_q1v;
  std::vector<Matrix> q1(nb);  // q0's first derivatives per block (n x D), when q0 learns
  if (p.base_learns) {
    p.q0_products(q1, h1, h2, hv, sum_q2v, sq_q1v);
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
    grad->base = p.q0_gradient(q1, w, alpha, lc);
  }
  if (!std::isfinite(grad->log_lambda_alpha) || !std::isfinite(grad->log_lambda_c))
    throw NumericalError("DKEF stage-2 gradient (log λ) is not finite");
  check_finite(grad->base, "DKEF stage-2 gradient (base measure parameters)");
  return loss;
}

// Pass 1 of an evaluation while q0 learns: q0's first derivatives per block (into q1) and their
// products with the stacks.
void FrozenKernelMetaProblem::Impl::q0_products(std::vector<Matrix>& q1, Vector& h1, Vector& h2, Vector& hv,
                                                double& sum_q2v, double& sq_q1v) const {
  const Impl& p = *this;
  const std::size_t nb = p.block_count(), nt = p.tblocks.size();
  struct Part {
    Vector h1, h2, hv;
    double sum_q2v = 0, sq_q1v = 0;
  };
  Part sums = ordered_reduce(
      static_cast<Index>(nb), p.context, [] { return Part(); },
      [&](Index i, Part& q) {
        const auto bi = static_cast<std::size_t>(i);
        const Matrix X = p.rows_of_block(bi);
        Matrix q2;
        p.base.derivatives(X, q1[bi], q2);
        KernelStacks scratch;
        const Matrix *d1 = nullptr, *d2 = nullptr;
        p.stacks(bi, X, scratch, d1, d2);
        const Eigen::Map<const Vector> v1(q1[bi].data(), q1[bi].size()), v2(q2.data(), q2.size());
        if (bi < nt) {
          add_into(q.h1, Vector(d1->transpose() * v1));
          add_into(q.h2, Vector(d2->transpose() * v2));
        } else {
          add_into(q.hv, Vector(d1->transpose() * v1));
          q.sum_q2v += v2.sum();
          q.sq_q1v += v1.squaredNorm();
        }
      },
      [](Part& into, const Part& q) {
        add_into(into.h1, q.h1);
        add_into(into.h2, q.h2);
        add_into(into.hv, q.hv);
        into.sum_q2v += q.sum_q2v;
        into.sq_q1v += q.sq_q1v;
      },
      kGroups, [](Part& q) { return std::tie(q.h1, q.h2, q.hv, q.sum_q2v, q.sq_q1v); });
  h1 = std::move(sums.h1);
  h2 = std::move(sums.h2);
  hv = std::move(sums.hv);
  sum_q2v = sums.sum_q2v;
  sq_q1v = sums.sq_q1v;
}

// Pass 2 of an evaluation while q0 learns: the gradient in q0's parameters, from w = A⁻¹ ∂J_v/∂α.
Vector FrozenKernelMetaProblem::Impl::q0_gradient(std::vector<Matrix>& q1, const Vector& w, const Vector& alpha,
                                                  double lc) const {
  const Impl& p = *this;
  const Index D = p.D, nq = p.base.parameter_count();
  const double inv_t = 1.0 / static_cast<double>(p.Nt), inv_v = 1.0 / static_cast<double>(p.Nv);
  const std::size_t nb = p.block_count(), nt = p.tblocks.size();
  // Pass 2: q0's adjoints, −B1 w/N and −λ_C B2 w/N on training rows, (B1v α + q1v)/Nv and 1/Nv on
  // validation rows, through BaseMeasure::backward; added in block order.
  // The same runs of blocks as pass 1, so each process finds q1 of its own blocks.
  return ordered_reduce(
      static_cast<Index>(nb), p.context, [nq] { return Vector(Vector::Zero(nq)); },
      [&](Index i, Vector& sum) {
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
          if (q1[bi].size() == 0) {
            Matrix unused;
            p.base.derivatives(X, q1[bi], unused);
          }
          q1bar.noalias() = *d1 * alpha;
          q1bar += Eigen::Map<const Vector>(q1[bi].data(), q1[bi].size());
          q1bar *= inv_v;
          q2bar = Vector::Constant(n * D, inv_v);
        }
        Vector block;  // backward() sets it (it does not add)
        p.base.backward(X, Vector(), Eigen::Map<const Matrix>(q1bar.data(), n, D),
                        Eigen::Map<const Matrix>(q2bar.data(), n, D), block);
        sum += block;
      },
      [](Vector& into, const Vector& x) { into += x; }, kGroups, [](Vector& sum) { return std::tie(sum); });
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
