#include "dkef_estimator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "closed_form_gradient.hpp"
#include "kef/adam.hpp"
#include "kef/clone_shared.hpp"
#include "kef/error.hpp"
#include "kef/inducing_points.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_model.hpp"
#include "kef/lite_system.hpp"
#include "kef/memory_budget.hpp"
#include "kef/network/optimizer.hpp"

namespace kef::dkef {

namespace {
const std::vector<std::string> kGroups = {"kernel", "points", "lambda", "base_measure"};

}  // namespace

const OptionsSpec<DkefOptions>& dkef_options() {
  using O = DkefOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.integer("inducing_points", &O::inducing_points,
              "M, initialised from a seeded random subset of the fit split", 300)
        .at_least(1);
    s.integer("batch_fit", &O::batch_fit, "rows of the training minibatch Dt (α is fitted on it)", 100)
        .at_least(1);
    s.integer("batch_loss", &O::batch_loss, "rows of the validation minibatch Dv (the loss is taken on it)",
              100)
        .at_least(1);
    s.number("learning_rate", &O::learning_rate, "Adam's learning rate", 1e-2).positive();
    s.integer("max_steps", &O::max_steps, "stage-1 steps at most", 10000).at_least(1);
    s.integer("patience", &O::patience,
              "stage 1 stops after this many steps without a better validation loss", 200)
        .at_least(1);
    s.integer("eval_every", &O::eval_every,
              "steps between validation-loss evaluations (early stopping, curve)", 10)
        .at_least(1);
    s.integer("validation_fit_rows", &O::validation_fit_rows,
              "rows of the fit split α is fitted on for early stopping "
              "(a fixed seeded subsample; 0: all)",
              1000)
        .non_negative();
    s.number("init_log10_lambda", &O::init_log10_lambda, "initial log10 of λ_α and λ_C", -2.0);
    s.number("train_noise_std", &O::train_noise_std,
             "std of Gaussian noise added to each minibatch (0; DKEF used 0.05 on real data)", 0.0)
        .non_negative();
    s.number("gradient_clip_norm", &O::gradient_clip_norm,
             "stage 1 scales each step's gradient to at most this Euclidean norm over all learning "
             "parameters before Adam (0: no clipping; the reference code clips at 100)",
             0.0)
        .non_negative();
    s.integer("stage2_steps", &O::stage2_steps,
              "Adam steps on log λ (and q0) with the kernel frozen, α on the whole fit split", 50)
        .non_negative();
    s.integer("stage2_memory_mb", &O::stage2_memory_mb,
              "memory for stage 2's derivative stacks when q0 learns (8·M·D·(2 N_fit + N_val) bytes; in a "
              "distributed run each process holds its share): "
              "kept if they fit, else recomputed every step (0: always recompute); results do not "
              "depend on it",
              static_cast<std::int64_t>(FrozenKernelMetaProblem::kDefaultStackBudgetBytes >> 20))
        .non_negative();
    s.strings("train", &O::train,
              "parameter groups that learn: kernel, points, lambda, base_measure (default all)");
    return s;
  }();
  return spec;
}

KeyList dkef_keys() { return dkef_options().keys(); }

ClippedGradient clip_stage1_gradient(Vector gradient, double max_norm) {
  ClippedGradient out;
  if (max_norm > 0) {
    out.norm = clip_global_norm(gradient, max_norm);
    // clip_global_norm scales by max_norm / (norm + 1e-6) only when that factor is below 1.
    out.clipped = max_norm / (out.norm + 1e-6) < 1.0;
  } else {
    out.norm = gradient.norm();
  }
  out.gradient = std::move(gradient);
  return out;
}

struct DkefEstimator::State {
  // θ = [kernel parameters | Z (M x D, column-major) | log λ_α, log λ_C | q0 parameters]
  Vector theta;
  Index n_kernel = 0, n_points = 0, n_base = 0, M = 0, D = 0;
  Index off_points() const { return n_kernel; }
  Index off_lambda() const { return n_kernel + n_points; }
  Index off_base() const { return off_lambda() + 2; }
  Matrix Z() const { return Eigen::Map<const Matrix>(theta.data() + off_points(), M, D); }
  double lambda_alpha() const { return std::exp(theta[off_lambda()]); }
  double lambda_c() const { return std::exp(theta[off_lambda() + 1]); }
  // The group parameter i belongs to (errors name it).
  std::string group_of(Index i) const {
    if (i < n_kernel) return "kernel";
    if (i < off_lambda()) return "points";
    if (i < off_base()) return "lambda";
    return "base_measure";
  }
  // A stage-1 gradient as one vector over θ, zero where the mask is (what does not learn); a
  // non-finite entry is an error naming its group.
  Vector gradient(const ClosedFormGradient& g, long step, const Vector& mask) const {
    Vector grad(theta.size());
    grad.head(n_kernel) = g.kernel;
    grad.segment(off_points(), n_points) = Eigen::Map<const Vector>(g.inducing.data(), g.inducing.size());
    grad[off_lambda()] = g.log_lambda_alpha;
    grad[off_lambda() + 1] = g.log_lambda_c;
    grad.tail(n_base) = g.base;
    for (Index i = 0; i < grad.size(); ++i)
      if (!std::isfinite(grad[i]))
        throw NumericalError("dkef step " + std::to_string(step) + ": the gradient of parameter group " +
                             group_of(i) + " is not finite (entry " + std::to_string(i) +
                             "); try a smaller learning_rate");
    return Vector(grad.cwiseProduct(mask));
  }
};

DkefEstimator::DkefEstimator(const Config& cfg, const EstimatorParts& parts, Index train_rows)
    : sites_(cfg), kernel_(parts.kernel), base_(parts.base_measure) {
  const DkefOptions opt = dkef_options().read(cfg);
  inducing_ = opt.inducing_points;
  batch_fit_ = opt.batch_fit;
  batch_loss_ = opt.batch_loss;
  max_steps_ = opt.max_steps;
  patience_ = opt.patience;
  eval_every_ = opt.eval_every;
  validation_fit_rows_ = opt.validation_fit_rows;
  stage2_steps_ = opt.stage2_steps;
  {
    // Saturates instead of overflowing on the shift: any budget that large keeps every stack.
    const auto mb = static_cast<std::size_t>(opt.stage2_memory_mb);
    constexpr std::size_t kMaxMb = std::numeric_limits<std::size_t>::max() >> 20;
    stage2_budget_bytes_ = std::min(mb, kMaxMb) << 20;
  }
  learning_rate_ = opt.learning_rate;
  init_log_lambda_ = opt.init_log10_lambda * std::log(10.0);
  noise_std_ = opt.train_noise_std;
  clip_norm_ = opt.gradient_clip_norm;
  train_groups_ = opt.train.value_or(kGroups);
  for (const auto& g : train_groups_)
    if (std::find(kGroups.begin(), kGroups.end(), g) == kGroups.end())
      cfg.fail("train",
               "unknown parameter group \"" + g + "\" (expected kernel, points, lambda, base_measure)");
  // A group asked to learn whose gradient the kernel cannot give would silently stay at its start
  // (kef 0.2 then trained only λ): refuse it, naming what to do instead.
  if (kernel_) {
    const KernelCapabilities caps = kernel_->capabilities();
    if (learns("kernel") && kernel_->parameter_count() > 0 && !caps.differentiable_parameters)
      cfg.fail("train", "kernel `" + kernel_->type_name() +
                            "` gives no gradients for its parameters, so dkef cannot learn them; leave "
                            "\"kernel\" out of `train` to keep them fixed, or use a differentiable kernel");
    if (learns("points") && !caps.inducing_point_gradients)
      cfg.fail("train", "kernel `" + kernel_->type_name() +
                            "` gives no gradients for the inducing points, so dkef cannot move them; leave "
                            "\"points\" out of `train` to keep them where they start, or use a kernel that "
                            "gives them (gaussian, gaussian_mixture, deep)");
  }
  // A base measure may declare `learn = false` (generalized_normal does) to stay fixed under dkef.
  if (base_) {
    const auto& base_keys = base_->config().declared_keys();
    base_learns_ = std::none_of(base_keys.begin(), base_keys.end(),
                                [](const KeySpec& k) { return k.name == "learn"; }) ||
                   base_->config().boolean("learn");
  }
  if (train_rows >= 0) {
    check_inducing_count(inducing_, train_rows, sites_);
    if (batch_fit_ + batch_loss_ > train_rows)
      cfg.fail("batch_fit", "batch_fit + batch_loss = " + std::to_string(batch_fit_ + batch_loss_) +
                                " exceeds the " + std::to_string(train_rows) + " rows of the fit split");
  }
}

bool DkefEstimator::learns(const std::string& group) const {
  return std::find(train_groups_.begin(), train_groups_.end(), group) != train_groups_.end();
}

double DkefEstimator::validation_loss(const State& s, const Matrix& fit_rows, const Matrix& validation,
                                      const Context& context) const {
  return closed_form_validation_loss(*kernel_, *base_, fit_rows, validation, s.Z(), s.lambda_alpha(),
                                     s.lambda_c(), context);
}

Estimator* DkefEstimator::clone_raw() const {
  auto* copy = new DkefEstimator(*this);
  if (kernel_) copy->kernel_ = clone_shared(kernel_);
  if (base_) copy->base_ = clone_shared(base_);
  return copy;
}

ModelPtr DkefEstimator::fit(const FitInput& in) {
  // Training sets the parameters of the kernel and base measure it runs on: a clone's, which the
  // model keeps, so this estimator and the models it returned before never change.
  DkefEstimator trainee(*this);
  trainee.kernel_ = clone_shared(kernel_);
  trainee.base_ = clone_shared(base_);
  return trainee.train(in);
}

void DkefEstimator::check(const DataShape& data) const {
  if (data.dim < 1) return;
  // Stage 1's memory before any is allocated: the M x M systems (G, its factor, the curvature term and
  // their gradients) and the derivative stacks (rows x D x M, two orders, with their adjoints) of the
  // two minibatches (the early-stopping fits run in blocks; stage 2's stacks are bounded by
  // stage2_memory_mb).
  const double M = static_cast<double>(inducing_), D = static_cast<double>(data.dim);
  const double rows = static_cast<double>(batch_fit_ + batch_loss_);
  require_memory(8.0 * (6.0 * M * M + 4.0 * rows * D * M), sites_.where("inducing_points"),
                 "stage 1's systems and derivative stacks (inducing_points, batch_fit, batch_loss)");
}

std::optional<FacetSet> DkefEstimator::facets() const {
  FacetSet f{Facet::LogDensity, Facet::Score, Facet::Laplacian};
  if (base_ && base_->can_sample()) f |= Facet::BaseMeasureRatio;
  return f;
}

ModelPtr DkefEstimator::train(const FitInput& in) {
  // The fit split is read by position (kef/training_rows.hpp): a distributed run may leave it in the
  // data file, and then only the rows each step needs are read (the minibatches, the early-stopping
  // subsample, each process's own blocks of the stage-2 and final sums).
  // (FitInput's reader outlives the fit: a handle that does not own it.)
  const TrainingRowsPtr rows = in.train_rows ? TrainingRowsPtr(in.train_rows, [](const TrainingRows*) {})
                                             : TrainingRowsPtr(std::make_shared<MatrixRows>(in.train));
  const TrainingRows& X = *rows;
  const Matrix& V = in.validation;
  const Index N = X.rows(), D = X.cols();
  if (V.rows() == 0)
    throw ConfigError(sites_.where("type") +
                      ": dkef early-stops on a validation split; set "
                      "`split = { validation = ... }` in [data]");
  if (batch_fit_ + batch_loss_ > N)
    sites_.fail("batch_fit",
                "batch_fit + batch_loss exceeds the " + std::to_string(N) + " rows of the fit split");
  base_->check_dimension(D);

  State s = initial_state(X, in.context);
  const Vector mask = learning_mask(s);

  // Early stopping fits α on a fixed subsample of the fit split.
  Matrix fit_rows;
  if (validation_fit_rows_ > 0 && validation_fit_rows_ < N) {
    RandomStream sub = in.context.rng().derive("validation_fit_rows");
    fit_rows = X.pick(sample_without_replacement(N, validation_fit_rows_, sub));
  } else {
    fit_rows = X.range(0, N);  // all of them (validation_fit_rows = 0): held for the whole stage
  }

  const long best_step = run_stage1(s, X, fit_rows, V, mask, in);
  run_stage2(s, rows, V, in);

  // ---- Final α on the fit split ----
  LiteAccumulateOptions opt;
  opt.need_U = true;
  opt.progress = &in.context.progress();
  const Matrix Z = s.Z();
  LiteSolution sol = solve_lite_system(accumulate_lite_system(*kernel_, *base_, X, Z, opt, in.context),
                                       Matrix(), s.lambda_alpha(), 0.0, s.lambda_c());
  in.report.values["lambda_alpha"] = s.lambda_alpha();
  in.report.values["lambda_c"] = s.lambda_c();
  in.report.values["jitter"] = sol.jitter;
  auto model = std::make_shared<LiteModel>(kernel_, base_, Z, sol.alpha);
  model->set_fit_info({{"lambda_alpha", s.lambda_alpha()}, {"lambda_c", s.lambda_c()}},
                      {{"train_rows", static_cast<std::int64_t>(N)},
                       {"stage1_steps", static_cast<std::int64_t>(in.report.iterations)},
                       {"best_step", static_cast<std::int64_t>(best_step)}});
  return model;
}

DkefEstimator::State DkefEstimator::initial_state(const TrainingRows& X, const Context& context) const {
  State s;
  s.M = inducing_;
  s.D = X.cols();
  s.n_kernel = kernel_->parameter_count();
  s.n_points = inducing_ * s.D;
  s.n_base = base_->parameter_count();
  s.theta = Vector::Zero(s.n_kernel + s.n_points + 2 + s.n_base);
  s.theta.head(s.n_kernel) = kernel_->parameters();
  {
    const Matrix Z = draw_inducing_points(X, inducing_, context.rng(), sites_);
    s.theta.segment(s.off_points(), s.n_points) = Eigen::Map<const Vector>(Z.data(), Z.size());
  }
  s.theta.segment(s.off_lambda(), 2).setConstant(init_log_lambda_);
  s.theta.tail(s.n_base) = base_->parameters();
  return s;
}

Vector DkefEstimator::learning_mask(const State& s) const {
  Vector mask = Vector::Zero(s.theta.size());
  auto enable = [&](const std::string& group, Index off, Index len) {
    if (learns(group)) mask.segment(off, len).setOnes();
  };
  enable("kernel", 0, s.n_kernel);
  if (kernel_->capabilities().inducing_point_gradients) enable("points", s.off_points(), s.n_points);
  enable("lambda", s.off_lambda(), 2);
  if (base_learns_) enable("base_measure", s.off_base(), s.n_base);
  return mask;
}

void DkefEstimator::apply(State& s, const Vector& theta) {
  s.theta = theta;
  if (s.n_kernel) kernel_->set_parameters(theta.head(s.n_kernel));
  if (s.n_base) base_->set_parameters(theta.tail(s.n_base));
}

std::pair<Matrix, Matrix> DkefEstimator::draw_minibatches(const TrainingRows& X, RandomStream& batches) const {
  auto idx = sample_without_replacement(X.rows(), batch_fit_ + batch_loss_, batches);
  // sample_without_replacement returns sorted indices; shuffle so Dt and Dv are random halves.
  for (std::size_t i = idx.size() - 1; i > 0; --i)
    std::swap(idx[i], idx[static_cast<std::size_t>(batches.uniform_int(i + 1))]);
  const auto split = idx.begin() + batch_fit_;
  Matrix Dt = X.pick({idx.begin(), split});
  Matrix Dv = X.pick({split, idx.end()});
  if (noise_std_ > 0) {
    Dt += noise_std_ * batches.normal_matrix(Dt.rows(), X.cols());
    Dv += noise_std_ * batches.normal_matrix(Dv.rows(), X.cols());
  }
  return {std::move(Dt), std::move(Dv)};
}

long DkefEstimator::run_stage1(State& s, const TrainingRows& X, const Matrix& fit_rows, const Matrix& V,
                               const Vector& mask, const FitInput& in) {
  Adam adam(AdamOptions{learning_rate_}, sites_.where("learning_rate"));
  RandomStream batches = in.context.rng().derive("minibatches");
  double best = validation_loss(s, fit_rows, V, in.context);
  Vector best_theta = s.theta;
  long best_step = 0, step = 0, clipped_steps = 0;
  double max_gradient_norm = 0;
  in.report.curve.emplace_back(0, best);
  const auto t0 = std::chrono::steady_clock::now();
  for (step = 1; step <= max_steps_; ++step) {
    const auto [Dt, Dv] = draw_minibatches(X, batches);
    ClosedFormGradient g = closed_form_validation_gradient(*kernel_, *base_, Dt, Dv, s.Z(), s.lambda_alpha(),
                                                           s.lambda_c(), in.context);
    if (!std::isfinite(g.loss))
      throw NumericalError("dkef step " + std::to_string(step) + ": the minibatch loss is not finite");
    ClippedGradient clipped = clip_stage1_gradient(s.gradient(g, step, mask), clip_norm_);
    clipped_steps += clipped.clipped ? 1 : 0;
    max_gradient_norm = std::max(max_gradient_norm, clipped.norm);
    apply(s, adam.step(s.theta, clipped.gradient));
    if (step % eval_every_ == 0) {
      const double loss = validation_loss(s, fit_rows, V, in.context);
      if (!std::isfinite(loss))
        throw NumericalError("dkef step " + std::to_string(step) + ": the validation loss is not finite");
      in.report.curve.emplace_back(step, loss);
      if (loss < best) {
        best = loss;
        best_theta = s.theta;
        best_step = step;
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::ostringstream msg;
      msg << "step " << step << " loss " << g.loss << " best validation " << best << " ("
          << step / std::max(secs, 1e-9) << " steps/s)";
      in.context.progress().update("dkef stage 1",
                                   static_cast<double>(step) / static_cast<double>(max_steps_), msg.str());
      if (step - best_step >= patience_) break;
    }
  }
  in.report.iterations = std::min<long>(step, max_steps_);
  apply(s, best_theta);
  in.report.values["best_step"] = static_cast<double>(best_step);
  in.report.values["stage1_validation_loss"] = best;
  in.report.values["max_gradient_norm"] = max_gradient_norm;
  in.report.values["clipped_steps"] = static_cast<double>(clipped_steps);
  return best_step;
}

void DkefEstimator::run_stage2(State& s, const TrainingRowsPtr& rows, const Matrix& V, const FitInput& in) {
  Vector mask2 = Vector::Zero(s.theta.size());
  if (learns("lambda")) mask2.segment(s.off_lambda(), 2).setOnes();
  if (learns("base_measure") && base_learns_) mask2.tail(s.n_base).setOnes();
  if (stage2_steps_ <= 0 || !mask2.any()) return;
  // The kernel and Z are frozen: the stacks' statistics are computed once, each step is an M x M
  // Cholesky plus M-vector products (and q0's passes over the rows when it learns).
  const bool q0_learns = mask2.tail(s.n_base).any();
  const FrozenKernelMetaProblem frozen(*kernel_, *base_, rows, V, s.Z(), q0_learns, in.context,
                                       stage2_budget_bytes_);
  in.report.values["stage2_stacks_in_memory"] = frozen.keeps_stacks() ? 1.0 : 0.0;
  Adam adam2(AdamOptions{learning_rate_}, sites_.where("learning_rate"));
  double best2 = frozen.loss(s.lambda_alpha(), s.lambda_c());
  Vector best2_theta = s.theta;
  for (Index k = 1; k <= stage2_steps_; ++k) {
    const FrozenKernelGradient g = frozen.gradient(s.lambda_alpha(), s.lambda_c());
    if (g.loss < best2) {
      best2 = g.loss;
      best2_theta = s.theta;
    }
    Vector grad = Vector::Zero(s.theta.size());
    grad[s.off_lambda()] = g.log_lambda_alpha;
    grad[s.off_lambda() + 1] = g.log_lambda_c;
    grad.tail(s.n_base) = g.base;
    for (Index i = s.off_lambda(); i < grad.size(); ++i)
      if (!std::isfinite(grad[i]))
        throw NumericalError("dkef stage-2 step " + std::to_string(k) +
                             ": the gradient of parameter group " + s.group_of(i) + " is not finite (entry " +
                             std::to_string(i) + "); try a smaller learning_rate");
    apply(s, adam2.step(s.theta, Vector(grad.cwiseProduct(mask2))));
    in.context.progress().update("dkef stage 2", static_cast<double>(k) / static_cast<double>(stage2_steps_), "");
  }
  const double last = frozen.loss(s.lambda_alpha(), s.lambda_c());
  if (last < best2) best2_theta = s.theta, best2 = last;
  apply(s, best2_theta);
  in.report.values["stage2_validation_loss"] = best2;
}

}  // namespace kef::dkef
