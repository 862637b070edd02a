#include "ais.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "kef/constants.hpp"
#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/parallel.hpp"

namespace kef {
namespace {

// π_β ∝ q^{1−β} p~^β as a Model, so that kef's HMC can move along the path.
class AnnealedModel final : public Model {
 public:
  AnnealedModel(const Model& model, const Proposal& q, double beta) : p_(model), q_(q), beta_(beta) {}
  Index dim() const override { return p_.dim(); }
  std::string type_name() const override { return "annealed " + p_.type_name(); }
  Vector log_unnormalized(const Matrix& X) const override {
    return (1.0 - beta_) * q_.log_density(X) + beta_ * p_.log_unnormalized(X);
  }
  Matrix score(const Matrix& X) const override {
    return (1.0 - beta_) * q_.gradient(X) + beta_ * p_.score(X);
  }
  void score_and_laplacian(const Matrix&, Matrix&, Matrix&) const override {
    throw Error("annealed importance sampling: the path's Laplacian is not needed and not provided");
  }
  std::string describe() const override { return "geometric path at β = " + std::to_string(beta_); }

 private:
  const Model& p_;
  const Proposal& q_;
  double beta_;
};

struct Moved {
  double accept = 0.0;
  Index divergences = 0;
};

// One HMC transition of every particle (a chain each, started at its row) leaving π_β invariant.
Moved transition(const Model& model, const Proposal& q, double beta, double eps, Matrix& X, RandomStream rng,
                 const AisOptions& o, const Context& ctx) {
  const AnnealedModel path(model, q, beta);
  HmcOptions h;
  h.chains = X.rows();
  h.warmup = 0;
  h.samples = 1;
  h.leapfrog_steps = o.leapfrog_steps;
  h.step_size = eps;
  h.adapt_step_size = false;
  h.adapt_mass = false;
  h.chains_per_batch = o.particles_per_batch;
  h.init = HmcInit::Points;
  h.init_points = X;  // chain c starts at row c: all rows are taken, in order
  HmcDiagnostics d;
  X = run_hmc(path, rng, h, ctx, &d);
  Moved m;
  for (double a : d.mean_accept_stat) m.accept += a;
  m.accept /= static_cast<double>(d.mean_accept_stat.size());
  m.divergences = d.total_divergences();
  return m;
}

// f = log p~ − log q per particle, in fixed blocks. NaN or +inf is an error naming the particle.
Vector log_ratio(const Model& model, const Proposal& q, const Matrix& X, const AisOptions& o,
                 const Context& ctx, double beta) {
  const Index n = X.rows(), B = o.particles_per_batch, blocks = (n + B - 1) / B;
  // The blocks are shared between the processes of a distributed run, which all receive every value.
  const std::vector<Vector> parts = distributed_parts(
      blocks, ctx, [] { return Vector(); },
      [&](Index b, Vector& part) {
        const Index begin = b * B, len = std::min(B, n - begin);
        const Matrix Xb = X.middleRows(begin, len);
        part = model.log_unnormalized(Xb) - q.log_density(Xb);
      },
      [](Vector& part) { return std::tie(part); });
  Vector f(n);
  for (Index b = 0; b < blocks; ++b) {
    const Index begin = b * B, len = std::min(B, n - begin);
    if (parts[static_cast<std::size_t>(b)].size() != len)
      throw Error("annealed importance sampling: the model returned " +
                  std::to_string(parts[static_cast<std::size_t>(b)].size()) + " values for " +
                  std::to_string(len) + " particles");
    f.segment(begin, len) = parts[static_cast<std::size_t>(b)];
  }
  for (Index i = 0; i < n; ++i)
    if (std::isnan(f[i]) || f[i] == std::numeric_limits<double>::infinity()) {
      std::ostringstream os;
      os << "annealed importance sampling: log p~ − log q is " << f[i] << " at particle " << i
         << " (β = " << beta << ", x = " << X.row(i) << ")";
      throw NumericalError(os.str());
    }
  return f;
}

// A particle whose weight is 0 (p~ = 0 where it stands) stays at weight 0 whatever it does; HMC needs
// a finite start, so it is moved onto the first live particle (its weight, and so the estimate, is
// unaffected). No live particle: the caller reports that every weight is 0.
bool park_dead(Matrix& X, const Vector& log_w) {
  Index live = -1;
  for (Index i = 0; i < X.rows() && live < 0; ++i)
    if (log_w[i] > kNegInf) live = i;
  if (live < 0) return false;
  for (Index i = 0; i < X.rows(); ++i)
    if (log_w[i] == kNegInf) X.row(i) = X.row(live);
  return true;
}

void tick(const AisOptions& o, const std::string& what, Index t, Index T) {
  if (o.progress)
    o.progress->update(o.task, static_cast<double>(t) / static_cast<double>(T),
                       what + ": temperature " + std::to_string(t) + " of " + std::to_string(T));
}

AisResult finish(Vector log_w, bool reverse, double accept_sum, Index transitions, Index divergences,
                 std::chrono::steady_clock::time_point start) {
  AisResult r;
  r.moments = ShiftedMoments::of(log_w);
  r.log_weights = std::move(log_w);
  r.mean_acceptance = transitions > 0 ? accept_sum / static_cast<double>(transitions) : 0.0;
  r.divergences = divergences;
  if (r.moments.has_mass()) {
    r.log_z = reverse ? -r.moments.log_mean() : r.moments.log_mean();
    r.log_z_stderr = r.moments.log_mean_stderr();
    r.effective_sample_size = r.moments.effective_sample_size();
  } else {
    r.log_z = reverse ? std::numeric_limits<double>::infinity() : kNegInf;
    r.log_z_stderr = std::numeric_limits<double>::infinity();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

std::vector<double> sigmoid_schedule(Index T) {
  if (T < 1)
    throw ConfigError("annealed importance sampling: needs at least 1 temperature (got " + std::to_string(T) +
                      ")");
  constexpr double kDelta = 4.0;
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  std::vector<double> beta(static_cast<std::size_t>(T + 1));
  const double lo = sig(-kDelta), hi = sig(kDelta);
  for (Index t = 0; t <= T; ++t)
    beta[static_cast<std::size_t>(t)] =
        (sig(kDelta * (2.0 * static_cast<double>(t) / static_cast<double>(T) - 1.0)) - lo) / (hi - lo);
  beta.front() = 0.0;
  beta.back() = 1.0;
  return beta;
}

void validate(const AisOptions& o) {
  auto bad = [](const std::string& name, const std::string& expected, double got) {
    std::ostringstream os;
    os << "annealed importance sampling option `" << name << "`: expected " << expected << ", got " << got;
    throw ConfigError(os.str());
  };
  if (o.particles < 2) bad("particles", "an integer >= 2", static_cast<double>(o.particles));
  if (o.temperatures < 1) bad("temperatures", "an integer >= 1", static_cast<double>(o.temperatures));
  if (o.leapfrog_steps < 1) bad("leapfrog_steps", "an integer >= 1", static_cast<double>(o.leapfrog_steps));
  if (!(o.step_size > 0) || !std::isfinite(o.step_size)) bad("step_size", "a finite number > 0", o.step_size);
  if (o.pilot_particles < 1)
    bad("pilot_particles", "an integer >= 1", static_cast<double>(o.pilot_particles));
  if (!(o.target_acceptance > 0 && o.target_acceptance < 1))
    bad("target_acceptance", "a number in (0, 1)", o.target_acceptance);
  if (o.particles_per_batch < 1)
    bad("particles_per_batch", "an integer >= 1", static_cast<double>(o.particles_per_batch));
}

AisPilot ais_pilot(const Model& model, const Proposal& q, const RandomStream& stream, const AisOptions& o,
                   const Context& ctx) {
  validate(o);
  const Index T = o.temperatures;
  const std::vector<double> beta = sigmoid_schedule(T);
  AisPilot pilot;
  pilot.step_sizes.assign(static_cast<std::size_t>(T + 1), o.step_size);
  if (T < 2) return pilot;  // no intermediate temperature: no transition at all
  RandomStream init = stream.derive("init");
  Matrix X = q.sample(o.pilot_particles, init);
  Vector log_w = Vector::Zero(X.rows());
  double eps = o.step_size, accept_sum = 0.0;
  // Multiplicative adaptation: a step size giving acceptance a is scaled by exp(2(a − target)),
  // at most e^{±1} at a time. At the first temperature it repeats until the acceptance is near the
  // target, since the initial step size is a guess; later ones move slowly, so one update each suffices.
  auto adapt = [&](double a) { eps *= std::exp(std::clamp(2.0 * (a - o.target_acceptance), -1.0, 1.0)); };
  for (Index t = 1; t < T; ++t) {
    const auto k = static_cast<std::size_t>(t);
    log_w += (beta[k] - beta[k - 1]) * log_ratio(model, q, X, o, ctx, beta[k - 1]);
    if (!park_dead(X, log_w))
      throw NumericalError("annealed importance sampling (pilot): p~ = 0 at every particle");
    const int repeats = t == 1 ? 30 : 1;
    double a = 0.0;
    for (int rep = 0; rep < repeats; ++rep) {
      a = transition(model, q, beta[k], eps, X,
                     stream.derive("pilot")
                         .derive(static_cast<std::uint64_t>(t))
                         .derive(static_cast<std::uint64_t>(rep)),
                     o, ctx)
              .accept;
      pilot.step_sizes[k] = eps;
      if (t == 1 && std::abs(a - o.target_acceptance) > 0.1) {
        adapt(a);  // the moves are kept: HMC leaves π_β invariant whatever the step size
        continue;
      }
      break;
    }
    accept_sum += a;
    adapt(a);
    tick(o, "pilot", t, T);
  }
  pilot.mean_acceptance = accept_sum / static_cast<double>(T - 1);
  return pilot;
}

namespace {
// The options checked and the temperature schedule of a run that uses a pilot's step sizes (forward
// and reverse AIS both need the pilot to match the schedule, temperature for temperature).
std::vector<double> schedule_after_pilot(const AisOptions& o, const AisPilot& pilot) {
  validate(o);
  if (static_cast<Index>(pilot.step_sizes.size()) != o.temperatures + 1)
    throw Error("annealed importance sampling: the pilot was run for another number of temperatures");
  return sigmoid_schedule(o.temperatures);
}
}  // namespace

AisResult ais_forward(const Model& model, const Proposal& q, const AisPilot& pilot,
                      const RandomStream& stream, const AisOptions& o, const Context& ctx) {
  const auto start = std::chrono::steady_clock::now();
  const Index T = o.temperatures;
  const std::vector<double> beta = schedule_after_pilot(o, pilot);
  RandomStream init = stream.derive("init");
  Matrix X = q.sample(o.particles, init);
  Vector log_w = Vector::Zero(o.particles);
  double accept_sum = 0.0;
  Index divergences = 0, transitions = 0;
  for (Index t = 1; t <= T; ++t) {
    const auto k = static_cast<std::size_t>(t);
    log_w += (beta[k] - beta[k - 1]) * log_ratio(model, q, X, o, ctx, beta[k - 1]);
    if (t == T) break;
    if (!park_dead(X, log_w)) break;  // every weight 0: nothing left to move
    const Moved m = transition(model, q, beta[k], pilot.step_sizes[k], X,
                               stream.derive(static_cast<std::uint64_t>(t)), o, ctx);
    accept_sum += m.accept;
    divergences += m.divergences;
    ++transitions;
    tick(o, "forward", t, T);
  }
  return finish(std::move(log_w), false, accept_sum, transitions, divergences, start);
}

AisResult ais_reverse(const Model& model, const Proposal& q, const AisPilot& pilot, const Matrix& exact,
                      const RandomStream& stream, const AisOptions& o, const Context& ctx) {
  const auto start = std::chrono::steady_clock::now();
  const Index T = o.temperatures;
  const std::vector<double> beta = schedule_after_pilot(o, pilot);
  if (exact.rows() < 2 || exact.cols() != model.dim())
    throw Error("reverse annealed importance sampling: needs at least 2 exact samples of dimension " +
                std::to_string(model.dim()));
  Matrix X = exact;
  Vector log_w = Vector::Zero(X.rows());
  double accept_sum = 0.0;
  Index divergences = 0, transitions = 0;
  // w_rev = Π_t π~_{t−1}(x_t)/π~_t(x_t) with x_T ~ p and x_{t−1} from x_t by the transition at β_{t−1}.
  for (Index t = T; t >= 1; --t) {
    const auto k = static_cast<std::size_t>(t);
    log_w -= (beta[k] - beta[k - 1]) * log_ratio(model, q, X, o, ctx, beta[k]);
    if (t == 1) break;
    const Moved m = transition(model, q, beta[k - 1], pilot.step_sizes[k - 1], X,
                               stream.derive(static_cast<std::uint64_t>(t)), o, ctx);
    accept_sum += m.accept;
    divergences += m.divergences;
    ++transitions;
    tick(o, "reverse", T - t + 1, T);
  }
  return finish(std::move(log_w), true, accept_sum, transitions, divergences, start);
}

}  // namespace kef
