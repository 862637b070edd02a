// Kernel adaptive HMC (KMC lite) and adaptive random-walk Metropolis on a Target: docs/math.md §12.
#include "kef/constants.hpp"
#include "kef/kahmc.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>

#include "kef/base_measure.hpp"
#include "kef/clonable.hpp"
#include "kef/derivative_basis.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_model.hpp"
#include "kef/lite_system.hpp"
#include "kef/number_text.hpp"
#include "kef/nystrom_model.hpp"
#include "kef/parallel.hpp"
#include "kef/score_matching.hpp"

namespace kef {
namespace {

constexpr Index kMaxIterations = Index{1} << 40;  // chains x iterations; far beyond any use
// Robbins–Monro gain t^(−0.6) for the random-walk scale and the step size (warm-up only for the
// step size; the exponent in (1/2, 1] makes the steps sum to infinity and their squares converge).
constexpr double kGainExponent = 0.6;

// KMC lite has no base measure: log p~ = f. The lite system takes one, so this is q0 = 1 (its
// derivatives vanish, so b = B2ᵀ1/N alone), private to the sampler.
class FlatBaseMeasure final : public Clonable<FlatBaseMeasure, BaseMeasure> {
 public:
  void check_dimension(Index) const override {}
  Vector log_density(const Matrix& X) const override { return Vector::Zero(X.rows()); }
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override {
    d1 = Matrix::Zero(X.rows(), X.cols());
    d2 = Matrix::Zero(X.rows(), X.cols());
  }
};

[[noreturn]] void bad_option(const std::string& name, const std::string& expected, const std::string& got) {
  throw ConfigError("KAHMC option `" + name + "`: expected " + expected + ", got " + got);
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string who(const Target& target, const KahmcOptions& o) {
  if (!o.context.empty()) return o.context;
  return target.type_name().empty() ? std::string("target") : "target " + target.type_name();
}

// The surrogate of one chain (a lite or Nyström model: only its score is used) and what its fit chose.
struct Surrogate {
  std::shared_ptr<const Model> model;
  Vector inv_mass;  // diagonal inverse mass: the subsample's per-coordinate variance, regularised
};

class SurrogateFitter {
 public:
  SurrogateFitter(const KernelFamily& kernels, std::mutex& kernel_mutex, const KahmcOptions& o,
                  const Context& ctx)
      : kernels_(kernels),
        mutex_(kernel_mutex),
        o_(o),
        ctx_(ctx),
        flat_(std::make_shared<FlatBaseMeasure>()) {
    flat_->attach_config("flat", Config());
  }

  KernelPtr kernel(double sigma) const {
    std::lock_guard<std::mutex> lock(mutex_);
    KernelPtr k = kernels_(sigma);
    if (!k) throw Error("KAHMC: the kernel family returned no kernel for sigma = " + num(sigma));
    return k;
  }

  // The data X (repeats included: they weight the objective as the chain visited them) and the basis
  // Z, the distinct rows of X (a repeated basis function would only make G singular).
  LiteSystem system(const Kernel& k, const Matrix& X, const Matrix& Z) const {
    LiteAccumulateOptions ao;
    ao.need_U = false;
    return accumulate_lite_system(k, *flat_, X, Z, ao, ctx_);
  }

  std::shared_ptr<const LiteModel> solve(const KernelPtr& k, const Matrix& Z, const LiteSystem& sys,
                                         double ratio) const {
    // λ relative to the mean diagonal of G, so that one ratio means the same for every σ.
    const double lambda = std::max(ratio * sys.G.trace() / static_cast<double>(Z.rows()), 1e-300);
    const LiteSolution sol = solve_lite_system(sys, Matrix(), lambda, 0.0, 0.0);
    return std::make_shared<const LiteModel>(k, flat_, Z, sol.alpha);
  }

  // The Nyström surrogate's basis points: nystrom_points (or ⌈√n log n⌉) of the distinct rows Z,
  // chosen by rng, in row order.
  Matrix nystrom_points(const Matrix& Z, RandomStream rng) const {
    const Index n = Z.rows();
    const Index m =
        o_.nystrom_points > 0
            ? std::min(o_.nystrom_points, n)
            : std::min(n, static_cast<Index>(std::ceil(std::sqrt(double(n)) * std::log(double(n)))));
    return random_rows(Z, std::max<Index>(m, 1), rng);
  }

  // The Nyström fit on data X with basis points P (docs/math.md §6, q0 = 1), λ relative to the mean
  // diagonal of G_YY as for lite, solved by the pseudo-inverse (default cut-off).
  std::shared_ptr<const Model> solve_nystrom(const KernelPtr& k, const Matrix& X, const Matrix& P,
                                             double ratio) const {
    DerivativeBasis basis;
    basis.points = P;
    basis.orders = {1};
    const DerivativeSystem sys = accumulate_derivative_system(*k, *flat_, X, basis, {}, ctx_);
    DerivativeSolveOptions so;
    so.lambda = std::max(ratio * sys.G.trace() / static_cast<double>(basis.size()), 1e-300);
    // The poster's pseudo-inverse: history rows cluster, so nearby basis points make the system
    // numerically singular for wide kernels, where Cholesky would refuse.
    so.solver = DerivativeSolver::pseudo_inverse;
    const DerivativeSolution sol = solve_derivative_system(sys, so);
    return std::make_shared<const NystromModel>(k, flat_, std::move(basis), sol.beta, "nystrom");
  }

  // Held-out score matching over the grid (docs/math.md §12): the σ factor and λ ratio with the
  // lowest loss on the held-out rows; ties and failures go to the earlier candidate.
  void select(const Matrix& history, RandomStream rng, double& sigma, double& ratio,
              const std::string& where) const {
    if (o_.bandwidth > 0 && o_.lambda_ratio > 0) {
      sigma = o_.bandwidth;
      ratio = o_.lambda_ratio;
      return;
    }
    // Rejected steps repeat states; a held-out row equal to a fitted one would reward overfitting
    // (ever smaller σ), so the selection splits the distinct rows.
    const Matrix S = distinct_rows(history);
    const double median = median_distance(S);
    if (!(median > 0) || !std::isfinite(median))
      throw NumericalError(where + ": the chain's history has a single distinct point (" +
                           std::to_string(history.rows()) +
                           " rows sampled), so no surrogate can be fitted; raise burn_in "
                           "or start from points where the target is larger");
    std::vector<double> sigmas, ratios;
    if (o_.bandwidth > 0)
      sigmas = {o_.bandwidth};
    else
      for (double f : o_.bandwidth_factors) sigmas.push_back(f * median);
    if (o_.lambda_ratio > 0)
      ratios = {o_.lambda_ratio};
    else
      ratios = o_.lambda_ratios;
    if (sigmas.size() == 1 && ratios.size() == 1) {
      sigma = sigmas[0];
      ratio = ratios[0];
      return;
    }
    const Index n = S.rows();
    if (n < 10)
      throw NumericalError(where + ": the chain's history has " + std::to_string(n) +
                           " distinct points, too few to choose the surrogate's σ and λ (10 at least); raise "
                           "burn_in or history_points, or fix bandwidth and lambda_ratio");
    const Index held = std::max<Index>(2, static_cast<Index>(std::floor(o_.held_out_fraction * double(n))));
    const std::vector<Index> held_rows = sample_without_replacement(n, held, rng);
    Matrix train(n - held, S.cols()), test(held, S.cols());
    for (Index r = 0, i = 0, f = 0, t = 0; r < n; ++r) {
      if (i < held && held_rows[static_cast<std::size_t>(i)] == r) {
        test.row(t++) = S.row(r);
        ++i;
      } else {
        train.row(f++) = S.row(r);
      }
    }
    double best = std::numeric_limits<double>::infinity();
    sigma = sigmas[0];
    ratio = ratios[0];
    const bool nystrom = o_.surrogate == KahmcSurrogate::Nystrom;
    const Matrix P = nystrom ? nystrom_points(train, rng.derive("nystrom-points")) : Matrix();
    for (double s : sigmas) {
      const KernelPtr k = kernel(s);
      const LiteSystem sys = nystrom ? LiteSystem() : system(*k, train, train);
      for (double q : ratios) {
        double loss = std::numeric_limits<double>::infinity();
        try {
          loss = score_matching_loss(nystrom ? *solve_nystrom(k, train, P, q) : *solve(k, train, sys, q),
                                     test, ctx_);
        } catch (const NumericalError&) {  // an unusable candidate, not a failed run
        }
        if (loss < best) {
          best = loss;
          sigma = s;
          ratio = q;
        }
      }
    }
  }

  Surrogate fit(const Matrix& S, double sigma, double ratio, RandomStream rng) const {
    Surrogate out;
    const KernelPtr k = kernel(sigma);
    const Matrix Z = distinct_rows(S);
    if (o_.surrogate == KahmcSurrogate::Nystrom)
      out.model = solve_nystrom(k, S, nystrom_points(Z, rng), ratio);
    else
      out.model = solve(k, Z, system(*k, S, Z), ratio);
    const double n = static_cast<double>(S.rows());
    const Vector mean = S.colwise().mean().transpose();
    const Vector var =
        (S.rowwise() - mean.transpose()).colwise().squaredNorm().transpose() / std::max(1.0, n - 1);
    // Stan's regularisation of a windowed variance (as run_hmc's mass adaptation).
    out.inv_mass = ((n / (n + 5.0)) * var.array() + 1e-3 * (5.0 / (n + 5.0))).matrix();
    return out;
  }

 private:
  static Matrix distinct_rows(const Matrix& S) {
    std::vector<Index> keep;
    for (Index i = 0; i < S.rows(); ++i) {
      bool seen = false;
      for (Index j : keep)
        if (S.row(i) == S.row(j)) {
          seen = true;
          break;
        }
      if (!seen) keep.push_back(i);
    }
    Matrix out(static_cast<Index>(keep.size()), S.cols());
    for (std::size_t i = 0; i < keep.size(); ++i) out.row(static_cast<Index>(i)) = S.row(keep[i]);
    return out;
  }

  static double median_distance(const Matrix& S) {
    std::vector<double> d;
    d.reserve(static_cast<std::size_t>(S.rows() * (S.rows() - 1) / 2));
    for (Index i = 0; i < S.rows(); ++i)
      for (Index j = 0; j < i; ++j) {
        const double r = (S.row(i) - S.row(j)).norm();
        if (r > 0) d.push_back(r);  // rejected steps repeat rows: count distinct pairs only
      }
    if (d.empty()) return 0.0;
    auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
    std::nth_element(d.begin(), mid, d.end());
    return *mid;
  }

  const KernelFamily& kernels_;
  std::mutex& mutex_;
  const KahmcOptions& o_;
  const Context& ctx_;
  std::shared_ptr<FlatBaseMeasure> flat_;
};

struct ChainState {
  Matrix draws;
  Index accepted = 0, divergences = 0, evaluations = 0, failed_refits = 0;
  double scale = 0, step_size = kNaN, sigma = kNaN, ratio = kNaN;
  std::vector<Index> refits;
};

double target_at(const Target& target, const Matrix& x, const KahmcOptions& o, Index chain) {
  const Vector lp = target.log_density(x);
  if (lp.size() != 1)
    throw Error(who(target, o) + ": log_density returned " + std::to_string(lp.size()) + " values for 1 row");
  if (std::isnan(lp[0]))
    throw NumericalError(who(target, o) + ": chain " + std::to_string(chain) +
                         ": the log density is NaN at " + row_text(x, 0) +
                         " (a target returns a number or -inf, never NaN)");
  return lp[0];
}

void run_chain(const Target& target, const SurrogateFitter* fitter, const KahmcOptions& o, Index c,
               RandomStream rng, Matrix x, double lp, ChainState& st) {
  const Index D = x.cols();
  const Index discard = o.burn_in + o.warmup, total = discard + o.samples * o.thinning;
  const RandomStream history_rng = rng.derive("history");
  const std::string where = who(target, o) + ": chain " + std::to_string(c);
  Matrix history(total + 1, D);
  history.row(0) = x;
  Index h = 1;
  double log_scale = std::log(2.38 / std::sqrt(static_cast<double>(D)));
  double log_eps = std::log(o.step_size);
  Surrogate sur;
  Matrix X1(1, D), P1(1, D), S1(1, D), X1rw(1, D);
  std::vector<char> alive(1);
  st.draws.resize(o.samples, D);
  for (Index it = 0; it < total; ++it) {
    const bool hmc = o.method == KahmcMethod::Kahmc && it >= o.burn_in;
    bool accept = false;
    if (!hmc) {
      for (Index d = 0; d < D; ++d) X1rw(0, d) = x(0, d) + std::exp(log_scale) * rng.normal();
      const double lp1 = target_at(target, X1rw, o, c);
      ++st.evaluations;
      const double alpha = std::isfinite(lp1) ? std::min(1.0, std::exp(lp1 - lp)) : 0.0;
      accept = rng.uniform() < alpha;  // drawn every iteration: the stream does not depend on outcomes
      if (accept) {
        x = X1rw;
        lp = lp1;
      }
      if (it < discard)
        log_scale += std::pow(double(it + 1), -kGainExponent) * (alpha - o.rwm_target_acceptance);
    } else {
      const Index k = it - o.burn_in + 1;
      const double u_refit = rng.uniform();
      if ((o.adaptation_stop == 0 || k <= o.adaptation_stop) &&
          u_refit < std::pow(double(k), -o.adaptation_decay)) {
        const Index n = std::min(h, o.history_points);
        RandomStream pick = history_rng.derive(static_cast<std::uint64_t>(k));
        const std::vector<Index> rows = sample_without_replacement(h, n, pick);
        Matrix S(n, D);
        for (Index i = 0; i < n; ++i) S.row(i) = history.row(rows[static_cast<std::size_t>(i)]);
        if (st.refits.empty()) fitter->select(S, pick.derive("select"), st.sigma, st.ratio, where);
        try {
          sur = fitter->fit(S, st.sigma, st.ratio, pick.derive("fit"));
          st.refits.push_back(k);
        } catch (const NumericalError& e) {
          // A later refit that fails (an unsolvable system on an unlucky subsample) keeps the current
          // surrogate, which is as valid a proposal as before: counted and reported, not fatal. The
          // first fit has nothing to fall back on.
          if (!sur.model)
            throw NumericalError(where + ": the surrogate fit at HMC iteration " + std::to_string(k) +
                                 " (sigma " + num(st.sigma) + ", lambda ratio " + num(st.ratio) +
                                 ") failed: " + e.what());
          ++st.failed_refits;
        }
      }
      Matrix P(1, D);
      for (Index d = 0; d < D; ++d) P(0, d) = rng.normal() / std::sqrt(sur.inv_mass[d]);
      const Vector eps =
          Vector::Constant(1, std::exp(log_eps) * (1.0 + o.step_size_jitter * (2.0 * rng.uniform() - 1.0)));
      const double h0 = -lp + 0.5 * (P.array().square() * sur.inv_mass.transpose().array()).sum();
      X1 = x;
      P1 = P;
      S1 = sur.model->score(x);
      alive[0] = 1;
      leapfrog([&](const Matrix& Y) { return sur.model->score(Y); }, x, eps, sur.inv_mass.transpose(),
               o.leapfrog_steps, X1, P1, S1, alive);
      double alpha = 0;
      if (alive[0]) {
        const double lp1 = target_at(target, X1, o, c);
        ++st.evaluations;
        const double h1 = -lp1 + 0.5 * (P1.array().square() * sur.inv_mass.transpose().array()).sum();
        const double dh = h1 - h0;
        if (std::isfinite(dh)) alpha = dh <= 0 ? 1.0 : std::exp(-dh);
        const double u = rng.uniform();
        accept = u < alpha;
        if (accept) {
          x = X1;
          lp = lp1;
        }
      } else {
        ++st.divergences;
        rng.uniform();  // the draw the acceptance would have used: later numbers stay aligned
      }
      if (it < discard) log_eps += std::pow(double(k), -kGainExponent) * (alpha - o.target_acceptance);
    }
    if (it >= discard) {
      st.accepted += accept;
      if ((it - discard + 1) % o.thinning == 0) st.draws.row((it - discard) / o.thinning) = x;
    }
    history.row(h++) = x;
  }
  st.scale = std::exp(log_scale);
  if (o.method == KahmcMethod::Kahmc) st.step_size = std::exp(log_eps);
}

}  // namespace

void validate(const KahmcOptions& o, Index dim) {
  if (o.chains < 1) bad_option("chains", "an integer >= 1", std::to_string(o.chains));
  if (o.burn_in < 0) bad_option("burn_in", "an integer >= 0", std::to_string(o.burn_in));
  if (o.method == KahmcMethod::Kahmc && o.burn_in < 20)
    bad_option("burn_in", "at least 20 random-walk iterations before the first surrogate fit",
               std::to_string(o.burn_in));
  if (o.warmup < 0) bad_option("warmup", "an integer >= 0", std::to_string(o.warmup));
  if (o.samples < 1)
    bad_option("samples", "an integer >= 1 (kept draws per chain)", std::to_string(o.samples));
  if (o.thinning < 1) bad_option("thinning", "an integer >= 1", std::to_string(o.thinning));
  Index per_chain = 0, all = 0;
  if (__builtin_mul_overflow(o.samples, o.thinning, &per_chain) ||
      __builtin_add_overflow(per_chain, o.warmup, &per_chain) ||
      __builtin_add_overflow(per_chain, o.burn_in, &per_chain) ||
      __builtin_mul_overflow(per_chain, o.chains, &all) || all > kMaxIterations)
    bad_option("samples",
               "chains x (burn_in + warmup + samples x thinning) at most " + std::to_string(kMaxIterations),
               std::to_string(o.chains) + " x (" + std::to_string(o.burn_in) + " + " +
                   std::to_string(o.warmup) + " + " + std::to_string(o.samples) + " x " +
                   std::to_string(o.thinning) + ")");
  if (!(o.rwm_target_acceptance > 0 && o.rwm_target_acceptance < 1))
    bad_option("rwm_target_acceptance", "a number in (0, 1)", num(o.rwm_target_acceptance));
  if (!(o.adaptation_decay >= 0) || !std::isfinite(o.adaptation_decay))
    bad_option("adaptation_decay", "a number >= 0", num(o.adaptation_decay));
  if (o.adaptation_stop < 0)
    bad_option("adaptation_stop", "an integer >= 0", std::to_string(o.adaptation_stop));
  if (o.adaptation_decay == 0 && o.adaptation_stop == 0)
    bad_option("adaptation_decay",
               "a number > 0, or adaptation_stop > 0 (with 0 the surrogate is refitted at every iteration "
               "forever, an adaptation that never vanishes)",
               "0");
  if (o.history_points < 10)
    bad_option("history_points", "an integer >= 10", std::to_string(o.history_points));
  if (o.nystrom_points < 0)
    bad_option("nystrom_points", "an integer >= 0 (0: ceil(sqrt(n) log n))",
               std::to_string(o.nystrom_points));
  if (o.nystrom_points > 0 && o.surrogate != KahmcSurrogate::Nystrom)
    bad_option("nystrom_points", "no value unless the surrogate is nystrom",
               std::to_string(o.nystrom_points));
  if (!(o.bandwidth >= 0) || !std::isfinite(o.bandwidth))
    bad_option("bandwidth", "a number >= 0 (0: search)", num(o.bandwidth));
  if (!(o.lambda_ratio >= 0) || !std::isfinite(o.lambda_ratio))
    bad_option("lambda_ratio", "a number >= 0 (0: search)", num(o.lambda_ratio));
  if (o.bandwidth == 0) {
    if (o.bandwidth_factors.empty()) bad_option("bandwidth_factors", "at least one factor", "none");
    for (double f : o.bandwidth_factors)
      if (!(f > 0) || !std::isfinite(f)) bad_option("bandwidth_factors", "positive numbers", num(f));
  }
  if (o.lambda_ratio == 0) {
    if (o.lambda_ratios.empty()) bad_option("lambda_ratios", "at least one ratio", "none");
    for (double q : o.lambda_ratios)
      if (!(q > 0) || !std::isfinite(q)) bad_option("lambda_ratios", "positive numbers", num(q));
  }
  if (!(o.held_out_fraction > 0 && o.held_out_fraction <= 0.5))
    bad_option("held_out_fraction", "a number in (0, 0.5]", num(o.held_out_fraction));
  if (o.leapfrog_steps < 1) bad_option("leapfrog_steps", "an integer >= 1", std::to_string(o.leapfrog_steps));
  if (!(o.step_size > 0) || !std::isfinite(o.step_size))
    bad_option("step_size", "a number > 0", num(o.step_size));
  if (!(o.target_acceptance > 0 && o.target_acceptance < 1))
    bad_option("target_acceptance", "a number in (0, 1)", num(o.target_acceptance));
  if (!(o.step_size_jitter >= 0 && o.step_size_jitter < 1))
    bad_option("step_size_jitter", "a number in [0, 1)", num(o.step_size_jitter));
  if (o.init_points.size() > 0) {
    if (dim >= 0 && o.init_points.cols() != dim)
      bad_option("init_points", std::to_string(dim) + " columns (the target's dimension)",
                 std::to_string(o.init_points.cols()));
    if (!o.init_points.allFinite()) bad_option("init_points", "finite values", "a non-finite value");
  }
}

KahmcResult run_kahmc(const Target& target, const KernelFamily& kernels, RandomStream& rng,
                      const KahmcOptions& o, const Context& context) {
  const Index D = target.dim();
  if (D < 1) throw ConfigError(who(target, o) + ": dimension " + std::to_string(D) + " (expected >= 1)");
  validate(o, D);
  if (o.method == KahmcMethod::Kahmc && !kernels)
    throw ConfigError(who(target, o) + ": KAHMC needs a kernel family for its surrogate");
  const RandomStream root = rng.derive(rng());

  Matrix X0(o.chains, D);
  if (o.init_points.rows() > 0) {
    for (Index c = 0; c < o.chains; ++c) X0.row(c) = o.init_points.row(c % o.init_points.rows());
  } else {
    RandomStream init = root.derive("init");
    X0 = init.normal_matrix(o.chains, D);
  }
  const Vector lp0 = target.log_density(X0);
  if (lp0.size() != o.chains)
    throw Error(who(target, o) + ": log_density returned " + std::to_string(lp0.size()) + " values for " +
                std::to_string(o.chains) + " rows");
  for (Index c = 0; c < o.chains; ++c)
    if (!std::isfinite(lp0[c]))
      throw DataError(who(target, o) + ": the log density is " + num(lp0[c]) + " at the starting point " +
                      row_text(X0, c) + " of chain " + std::to_string(c) +
                      " (expected a finite value); start inside the target's support (init_points, --init)");

  std::mutex kernel_mutex, progress_mutex;
  std::unique_ptr<SurrogateFitter> fitter;
  if (o.method == KahmcMethod::Kahmc)
    fitter = std::make_unique<SurrogateFitter>(kernels, kernel_mutex, o, context);
  std::vector<ChainState> states(static_cast<std::size_t>(o.chains));
  Index finished = 0;
  parallel_for(o.chains, context.threads(), [&](Index c) {
    run_chain(target, fitter.get(), o, c, root.derive(static_cast<std::uint64_t>(c)), Matrix(X0.row(c)),
              lp0[c], states[static_cast<std::size_t>(c)]);
    if (o.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++finished;
      o.progress->update(o.progress_task, double(finished) / double(o.chains), "chains done");
    }
  });
  if (o.progress) o.progress->done(o.progress_task, "sampled");

  KahmcResult r;
  r.chains = o.chains;
  r.samples_per_chain = o.samples;
  r.samples.resize(o.samples * o.chains, D);
  r.target_evaluations = o.chains;  // the starting points
  std::vector<Matrix> draws;
  const double kept = static_cast<double>(o.samples * o.thinning);
  for (Index c = 0; c < o.chains; ++c) {
    ChainState& st = states[static_cast<std::size_t>(c)];
    for (Index s = 0; s < o.samples; ++s) r.samples.row(s * o.chains + c) = st.draws.row(s);
    r.acceptance_rate.push_back(static_cast<double>(st.accepted) / kept);
    r.rwm_scale.push_back(st.scale);
    r.step_size.push_back(st.step_size);
    r.bandwidth.push_back(st.sigma);
    r.lambda_ratio.push_back(st.ratio);
    r.refits.push_back(std::move(st.refits));
    r.divergences.push_back(st.divergences);
    r.failed_refits.push_back(st.failed_refits);
    r.target_evaluations += st.evaluations;
    draws.push_back(std::move(st.draws));
  }
  r.ess = effective_sample_size(draws);
  r.r_hat = split_r_hat(draws);
  return r;
}

double KahmcResult::mean_acceptance() const {
  if (acceptance_rate.empty()) return kNaN;
  double s = 0;
  for (double a : acceptance_rate) s += a;
  return s / static_cast<double>(acceptance_rate.size());
}

double KahmcResult::min_ess() const { return ess.size() == 0 || ess.hasNaN() ? kNaN : ess.minCoeff(); }

double KahmcResult::max_r_hat() const {
  return r_hat.size() == 0 || r_hat.hasNaN() ? kNaN : r_hat.maxCoeff();
}

Index KahmcResult::total_refits() const {
  Index n = 0;
  for (const auto& v : refits) n += static_cast<Index>(v.size());
  return n;
}

std::string KahmcResult::summary() const {
  std::ostringstream os;
  os.precision(3);
  const bool kahmc = !step_size.empty() && std::isfinite(step_size[0]);
  os << (kahmc ? "KAHMC: " : "random-walk Metropolis: ") << chains << " chains x " << samples_per_chain
     << " kept draws; acceptance " << mean_acceptance() << "; min ESS " << min_ess() << "; max split-R^ "
     << max_r_hat() << "; target evaluations " << target_evaluations;
  if (kahmc) {
    const auto [lo, hi] = std::minmax_element(step_size.begin(), step_size.end());
    os << "; step size " << *lo << ".." << *hi << "; surrogate refits " << total_refits() << "; sigma";
    for (double s : bandwidth) os << " " << s;
    Index div = 0;
    for (Index d : divergences) div += d;
    os << "; divergences " << div;
    Index failed = 0;
    for (Index f : failed_refits) failed += f;
    if (failed > 0) os << "; " << failed << " failed refits (the previous surrogate was kept)";
  } else {
    const auto [lo, hi] = std::minmax_element(rwm_scale.begin(), rwm_scale.end());
    os << "; scale " << *lo << ".." << *hi;
  }
  return os.str();
}

}  // namespace kef
