// Hamiltonian Monte Carlo on a batched Model: chains in fixed groups, each group one matrix per
// leapfrog step; per-chain dual averaging and diagonal mass; split-chain ESS and R̂.
#include "kef/constants.hpp"
#include "kef/hmc.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <sstream>
#include <tuple>

#include "kef/base_measure.hpp"
#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"

namespace kef {
namespace {

constexpr Index kMaxDraws = Index{1} << 40;  // iterations of all chains together; far beyond any use

// Hoffman & Gelman (2014), Algorithm 5, with their constants (also Stan's).
struct DualAveraging {
  static constexpr double kGamma = 0.05, kT0 = 10.0, kKappa = 0.75;
  double mu = 0, log_eps = 0, log_eps_bar = 0, h_bar = 0, t = 0;

  void restart(double eps) {
    mu = std::log(10.0 * eps);  // bias the search towards larger steps, which are cheaper
    log_eps = std::log(eps);
    log_eps_bar = h_bar = t = 0;
  }
  void update(double accept_stat, double target) {
    t += 1;
    const double w = 1.0 / (t + kT0);
    h_bar = (1 - w) * h_bar + w * (target - accept_stat);
    log_eps = mu - std::sqrt(t) / kGamma * h_bar;
    const double eta = std::pow(t, -kKappa);
    log_eps_bar = eta * log_eps + (1 - eta) * log_eps_bar;
  }
};

struct Chain {
  Index id = 0;
  RandomStream rng{0, ""};  // replaced by the chain's own stream
  double eps = 0;
  DualAveraging da;
  Vector inv_mass;
  Index var_n = 0;  // Welford accumulators for the mass window
  Vector var_mean, var_m2;
  Index accepted = 0, divergences = 0, warmup_divergences = 0, error_divergences = 0;
  std::string first_error;
  double accept_stat_sum = 0;
  Matrix draws;  // samples x D

  // What run_hmc reads of a finished chain: what processes of a distributed run exchange.
  auto fields() {
    return std::tie(eps, inv_mass, accepted, divergences, warmup_divergences, error_divergences, first_error,
                    accept_stat_sum, draws);
  }
};

[[noreturn]] void bad_option(const std::string& name, const std::string& expected, const std::string& got) {
  throw ConfigError("HMC option `" + name + "`: expected " + expected + ", got " + got);
}

bool row_finite(const Matrix& M, Index r) { return M.row(r).array().isFinite().all(); }

std::string who(const Model& model, const HmcOptions& o) {
  return o.context.empty() ? "model " + model.type_name() : o.context;
}

// Model calls during sampling. A component may refuse a point with a kef::NumericalError (the
// generalised normal's derivatives overflow far out in its tails) where another model would return
// inf; both mean the trajectory left the region where the model is usable, which is a divergence of
// that chain, not a failure of the run. A batch that throws is evaluated again row by row, and the
// rows that still throw come back as NaN with their message in `errors` (empty for the others).
template <class Eval>
Matrix guarded_rows(const Matrix& X, Index cols, std::vector<std::string>& errors, Eval eval) {
  errors.assign(static_cast<std::size_t>(X.rows()), std::string());
  try {
    return eval(X);
  } catch (const NumericalError&) {
  }
  Matrix out(X.rows(), cols);
  for (Index r = 0; r < X.rows(); ++r) {
    try {
      const Matrix row = eval(Matrix(X.row(r)));
      if (row.rows() != 1 || row.cols() != cols)
        throw Error("HMC: the model returned values of the wrong shape");
      out.row(r) = row;
    } catch (const NumericalError& e) {
      out.row(r).setConstant(kNaN);
      errors[static_cast<std::size_t>(r)] = e.what();
    }
  }
  return out;
}

Vector guarded_log_p(const Model& model, const Matrix& X, std::vector<std::string>& errors) {
  const Matrix m =
      guarded_rows(X, 1, errors, [&](const Matrix& Y) { return Matrix(model.log_unnormalized(Y)); });
  return m.col(0);
}

Matrix guarded_score(const Model& model, const Matrix& X, std::vector<std::string>& errors) {
  return guarded_rows(X, X.cols(), errors, [&](const Matrix& Y) { return model.score(Y); });
}

Matrix starting_points(const Model& model, const HmcOptions& o, RandomStream rng) {
  const Index D = model.dim();
  const bool have_points = o.init_points.rows() > 0 || (o.init_rows && o.init_rows->rows() > 0);
  const BaseMeasure* base = model.base_measure();
  const bool base_ok = base && base->can_sample();
  HmcInit init = o.init;
  if (init == HmcInit::Auto) {
    if (have_points) init = HmcInit::Points;
    else if (base_ok) init = HmcInit::BaseMeasure;
    else
      throw ConfigError("HMC on " + who(model, o) + ": no starting points: model " + model.type_name() +
                        " has no base measure that can be sampled; pass init_points (e.g. training rows)");
  }
  if (init == HmcInit::BaseMeasure) {
    if (!base_ok)
      throw ConfigError("HMC on " + who(model, o) +
                        ": option `init`: the base measure was asked for, but model " + model.type_name() +
                        " has none that can be sampled; start from given points instead");
    Matrix X = base->sample(o.chains, D, rng);
    if (X.rows() != o.chains || X.cols() != D)
      throw Error("HMC on " + who(model, o) + ": the base measure returned a " + std::to_string(X.rows()) +
                  " x " + std::to_string(X.cols()) + " sample, expected " + std::to_string(o.chains) + " x " +
                  std::to_string(D));
    return X;
  }
  // Distinct rows while there are enough; chains share rows (with their own streams) otherwise.
  const bool held = o.init_points.rows() > 0;
  const Index R = held ? o.init_points.rows() : o.init_rows->rows();
  const std::vector<Index> rows = sample_without_replacement(R, std::min(R, o.chains), rng);
  const Matrix picked = held ? Matrix() : o.init_rows->pick(rows);
  const Matrix& points = held ? o.init_points : picked;
  Matrix X(o.chains, D);
  for (Index c = 0; c < o.chains; ++c) {
    const std::size_t k = static_cast<std::size_t>(c) % rows.size();
    X.row(c) = held ? points.row(rows[k]) : points.row(static_cast<Index>(k));
  }
  if (!held)  // validate() checked held points; these were read only now
    for (Index c = 0; c < o.chains; ++c)
      if (!row_finite(X, c))
        bad_option("init_rows", "finite values", "a non-finite value in row " + std::to_string(rows[static_cast<std::size_t>(c) % rows.size()]));
  return X;
}

// Shared by the groups: progress over all chains, reported from one thread at a time.
struct ProgressTicker {
  ProgressTicker(const HmcOptions& options, Index total_iterations) : o(options), total(total_iterations) {}
  const HmcOptions& o;
  Index total;
  std::atomic<Index> done{0};
  std::mutex mutex;
  void tick(Index n) {
    const Index now = done.fetch_add(n) + n;
    if (!o.progress) return;
    std::unique_lock<std::mutex> lock(mutex, std::try_to_lock);
    if (lock.owns_lock())
      o.progress->update(o.progress_task, static_cast<double>(now) / static_cast<double>(total), "sampling");
  }
};

// The model must be finite, with values of the right shape, at every chain's starting point.
void check_starting_values(const Model& model, const HmcOptions& o, const Chain* chains, const Matrix& X,
                           const Vector& logp, const Matrix& S, const std::vector<std::string>& logp_errors,
                           const std::vector<std::string>& score_errors) {
  const Index n = X.rows(), D = X.cols();
  if (logp.size() != n || S.rows() != n || S.cols() != D)
    throw Error("HMC on " + who(model, o) + ": the model returned values of the wrong shape");
  for (Index r = 0; r < n; ++r) {
    const auto a = static_cast<std::size_t>(r);
    const std::string& error = logp_errors[a].empty() ? score_errors[a] : logp_errors[a];
    if (!error.empty())
      throw NumericalError("HMC on " + who(model, o) + ": chain " + std::to_string(chains[r].id) +
                           ": the model fails at its starting point " + row_text(X, r) + ": " + error +
                           "; start from points where the model is finite");
    if (!std::isfinite(logp[r]) || !row_finite(S, r))
      throw NumericalError("HMC on " + who(model, o) + ": chain " + std::to_string(chains[r].id) + ": " +
                           (std::isfinite(logp[r]) ? "the score" : "log p~") +
                           " is not finite at its starting point " + row_text(X, r) +
                           "; start from points where the model is finite");
  }
}

// Warm-up iteration `it` of one chain, now at row r of X: dual averaging of the step size, and the
// running variance of the mass window [mass_begin, mass_end), which sets the inverse mass at its end.
void adapt_chain(Chain& ch, const HmcOptions& o, const Matrix& X, Index r, double accept_stat, Index it,
                 bool adapt_mass, Index mass_begin, Index mass_end) {
  const Index W = o.warmup;
  if (o.adapt_step_size) {
    ch.da.update(accept_stat, o.target_acceptance);
    ch.eps = std::exp(it + 1 == W ? ch.da.log_eps_bar : ch.da.log_eps);
  }
  if (adapt_mass && it >= mass_begin && it < mass_end) {
    ++ch.var_n;
    const Vector x = X.row(r).transpose();
    const Vector delta = x - ch.var_mean;
    ch.var_mean += delta / static_cast<double>(ch.var_n);
    ch.var_m2.array() += delta.array() * (x - ch.var_mean).array();
    if (it + 1 == mass_end && ch.var_n >= 2) {
      // Stan's regularisation shrinks the variance towards 1e-3 when the window is short.
      const double k = static_cast<double>(ch.var_n);
      const Vector var = ch.var_m2 / (k - 1);
      ch.inv_mass = ((k / (k + 5.0)) * var.array() + 1e-3 * (5.0 / (k + 5.0))).matrix();
      if (o.adapt_step_size) ch.da.restart(ch.eps);
    }
  }
}

// Runs every iteration for the chains chains[0..n) of one group, advancing them as one batch.
void run_group(const Model& model, const HmcOptions& o, Chain* chains, Index n, Matrix X, ProgressTicker& ticker) {
  const Index D = X.cols(), W = o.warmup, total = o.warmup + o.samples * o.thinning;
  std::vector<std::string> logp_errors, score_errors;
  Vector logp = guarded_log_p(model, X, logp_errors);
  Matrix S = guarded_score(model, X, score_errors);
  check_starting_values(model, o, chains, X, logp, S, logp_errors, score_errors);
  // Step size only in the first 15%, mass in 15%–50%, then step size alone again. (Stan's last
  // step-size-only window is 10%: too short for dual averaging to settle after its restart, which
  // left the accept statistic near 0.95 for a 0.8 target.)
  const bool adapt_mass = o.adapt_mass && W >= 20;
  const Index mass_begin = W * 15 / 100, mass_end = W / 2;

  Matrix P(n, D), X1(n, D), P1(n, D), S1(n, D);
  Vector eps(n), h0(n);
  std::vector<char> alive(static_cast<std::size_t>(n));
  std::vector<std::string> error(static_cast<std::size_t>(n));  // this iteration's component error, per row
  for (Index it = 0; it < total; ++it) {
    const bool warm = it < W;
    for (Index r = 0; r < n; ++r) {
      Chain& ch = chains[r];
      for (Index d = 0; d < D; ++d) P(r, d) = ch.rng.normal() / std::sqrt(ch.inv_mass[d]);
      eps[r] = ch.eps * (1.0 + o.step_size_jitter * (2.0 * ch.rng.uniform() - 1.0));
      h0[r] = -logp[r] + 0.5 * (P.row(r).array().square() * ch.inv_mass.transpose().array()).sum();
      alive[static_cast<std::size_t>(r)] = 1;
      error[static_cast<std::size_t>(r)].clear();
    }
    Matrix inv_mass(n, D);
    for (Index r = 0; r < n; ++r) inv_mass.row(r) = chains[r].inv_mass.transpose();
    X1 = X;
    P1 = P;
    S1 = S;
    leapfrog(
        [&](const Matrix& Y) {
          Matrix G = guarded_score(model, Y, score_errors);
          if (G.rows() != n || G.cols() != D)
            throw Error("HMC on " + who(model, o) + ": the model returned a score of the wrong shape");
          return G;
        },
        X, eps, inv_mass, o.leapfrog_steps, X1, P1, S1, alive,
        [&](Index r) {
          const auto a = static_cast<std::size_t>(r);
          if (!score_errors[a].empty()) error[a] = score_errors[a];
        });
    const Vector logp1 = guarded_log_p(model, X1, logp_errors);
    if (logp1.size() != n)
      throw Error("HMC on " + who(model, o) + ": the model returned log p~ of the wrong size");
    const bool keep = !warm && (it - W + 1) % o.thinning == 0;
    for (Index r = 0; r < n; ++r) {
      Chain& ch = chains[r];
      double accept_stat = 0;
      const auto a = static_cast<std::size_t>(r);
      if (alive[a] && !logp_errors[a].empty()) error[a] = logp_errors[a];
      bool divergent = !alive[a] || !std::isfinite(logp1[r]);
      if (!error[a].empty()) {
        ++ch.error_divergences;
        if (ch.first_error.empty()) ch.first_error = error[a];
      }
      if (!divergent) {
        const double h1 = -logp1[r] + 0.5 * (P1.row(r).array().square() * ch.inv_mass.transpose().array()).sum();
        const double dh = h1 - h0[r];
        if (!std::isfinite(dh) || std::abs(dh) > o.max_energy_error) divergent = true;
        else accept_stat = dh <= 0 ? 1.0 : std::exp(-dh);
      }
      const double u = ch.rng.uniform();  // drawn every iteration: the stream does not depend on outcomes
      const bool accept = !divergent && u < accept_stat;
      if (accept) {
        X.row(r) = X1.row(r);
        S.row(r) = S1.row(r);
        logp[r] = logp1[r];
      }
      if (warm) {
        ch.warmup_divergences += divergent;
        adapt_chain(ch, o, X, r, accept_stat, it, adapt_mass, mass_begin, mass_end);
      } else {
        ch.accepted += accept;
        ch.accept_stat_sum += accept_stat;
        ch.divergences += divergent;
        if (keep) ch.draws.row((it - W) / o.thinning) = X.row(r);
      }
    }
    if ((it + 1) % 16 == 0 || it + 1 == total) ticker.tick(n * (it % 16 + 1));
  }
}

std::vector<std::vector<Vector>> split_coordinates(const std::vector<Matrix>& draws, Index& half) {
  half = draws.empty() ? 0 : draws[0].rows() / 2;
  const Index D = draws.empty() ? 0 : draws[0].cols();
  std::vector<std::vector<Vector>> out(static_cast<std::size_t>(D));
  for (const Matrix& m : draws) {
    if (m.rows() != draws[0].rows() || m.cols() != D)
      throw Error("HMC diagnostics: chains of unequal length or dimension");
    for (Index d = 0; d < D; ++d) {
      out[static_cast<std::size_t>(d)].push_back(m.col(d).head(half));
      out[static_cast<std::size_t>(d)].push_back(m.col(d).tail(half));  // drops the middle draw if odd
    }
  }
  return out;
}

// Geyer's initial monotone sequence over several chains, as in Stan's compute_effective_sample_size.
double ess_of(const std::vector<Vector>& ch) {
  const Index M = static_cast<Index>(ch.size()), N = ch[0].size();
  Vector means(M), chain_var(M);
  std::vector<Vector> centred;
  for (Index m = 0; m < M; ++m) {
    means[m] = ch[m].mean();
    centred.push_back((ch[m].array() - means[m]).matrix());
    chain_var[m] = centred.back().squaredNorm() / static_cast<double>(N - 1);
  }
  const double mean_var = chain_var.mean();
  double var_plus = mean_var * static_cast<double>(N - 1) / static_cast<double>(N);
  if (M > 1) var_plus += (means.array() - means.mean()).square().sum() / static_cast<double>(M - 1);
  if (!(var_plus > 0) || !std::isfinite(var_plus)) return kNaN;
  auto acov_mean = [&](Index t) {  // biased (1/N) autocovariance at lag t, averaged over chains
    double s = 0;
    for (const Vector& c : centred) s += c.head(N - t).dot(c.tail(N - t)) / static_cast<double>(N);
    return s / static_cast<double>(M);
  };
  std::vector<double> rho(static_cast<std::size_t>(N + 3), 0.0);
  auto at = [&](Index t) -> double& { return rho[static_cast<std::size_t>(t)]; };
  at(0) = 1;
  double rho_even = 1, rho_odd = 1 - (mean_var - acov_mean(1)) / var_plus;
  at(1) = rho_odd;
  Index t = 1;
  while (t < N - 5 && rho_even + rho_odd > 0) {
    rho_even = 1 - (mean_var - acov_mean(t + 1)) / var_plus;
    rho_odd = 1 - (mean_var - acov_mean(t + 2)) / var_plus;
    if (rho_even + rho_odd >= 0) {
      at(t + 1) = rho_even;
      at(t + 2) = rho_odd;
    }
    t += 2;
  }
  const Index max_t = t;
  if (rho_even > 0) at(max_t + 1) = rho_even;
  for (t = 1; t <= max_t - 3; t += 2) {  // initial positive → initial monotone sequence
    if (at(t + 1) + at(t + 2) > at(t - 1) + at(t)) {
      at(t + 1) = (at(t - 1) + at(t)) / 2;
      at(t + 2) = at(t + 1);
    }
  }
  double tau = -1 + at(max_t + 1);
  for (Index i = 0; i < max_t; ++i) tau += 2 * at(i);
  const double total = static_cast<double>(M * N);
  return total / std::max(tau, 1.0 / std::log10(total));
}

double r_hat_of(const std::vector<Vector>& ch) {
  const Index M = static_cast<Index>(ch.size()), N = ch[0].size();
  Vector means(M), vars(M);
  for (Index m = 0; m < M; ++m) {
    means[m] = ch[m].mean();
    vars[m] = (ch[m].array() - means[m]).square().sum() / static_cast<double>(N - 1);
  }
  const double W = vars.mean();
  const double B = static_cast<double>(N) * (means.array() - means.mean()).square().sum() / static_cast<double>(M - 1);
  if (!(W > 0) || !std::isfinite(W)) return kNaN;
  return std::sqrt(((N - 1.0) / N * W + B / N) / W);
}

}  // namespace

void leapfrog(const std::function<Matrix(const Matrix&)>& score, const Matrix& X0, const Vector& eps,
              const Matrix& inv_mass, Index steps, Matrix& X1, Matrix& P1, Matrix& S1,
              std::vector<char>& alive, const std::function<void(Index)>& on_divergence) {
  const Index n = X0.rows();
  for (Index l = 0; l < steps; ++l) {
    for (Index r = 0; r < n; ++r) {
      if (!alive[static_cast<std::size_t>(r)]) continue;
      P1.row(r) += 0.5 * eps[r] * S1.row(r);
      X1.row(r).array() += eps[r] * inv_mass.row(r).array() * P1.row(r).array();
    }
    S1 = score(X1);
    for (Index r = 0; r < n; ++r) {
      auto a = static_cast<std::size_t>(r);
      if (!alive[a]) continue;
      if (!row_finite(X1, r) || !row_finite(S1, r)) {
        if (on_divergence) on_divergence(r);
        // The trajectory left the region where the score is finite: a divergence. Park the row at
        // its (finite) start so later batch evaluations stay well defined.
        alive[a] = 0;
        X1.row(r) = X0.row(r);
        continue;
      }
      P1.row(r) += 0.5 * eps[r] * S1.row(r);
    }
  }
}

Vector effective_sample_size(const std::vector<Matrix>& draws) {
  Index half = 0;
  auto coords = split_coordinates(draws, half);
  Vector out = Vector::Constant(static_cast<Index>(coords.size()), kNaN);
  if (half < 4) return out;
  for (std::size_t d = 0; d < coords.size(); ++d) out[static_cast<Index>(d)] = ess_of(coords[d]);
  return out;
}

Vector split_r_hat(const std::vector<Matrix>& draws) {
  Index half = 0;
  auto coords = split_coordinates(draws, half);
  Vector out = Vector::Constant(static_cast<Index>(coords.size()), kNaN);
  if (half < 4) return out;
  for (std::size_t d = 0; d < coords.size(); ++d) out[static_cast<Index>(d)] = r_hat_of(coords[d]);
  return out;
}

void validate(const HmcOptions& o, Index dim) {
  auto num = [](double v) { std::ostringstream os; os << v; return os.str(); };
  if (o.chains < 1) bad_option("chains", "an integer >= 1", std::to_string(o.chains));
  if (o.warmup < 0) bad_option("warmup", "an integer >= 0", std::to_string(o.warmup));
  if (o.samples < 0) bad_option("samples", "an integer >= 0", std::to_string(o.samples));
  if (o.leapfrog_steps < 1) bad_option("leapfrog_steps", "an integer >= 1", std::to_string(o.leapfrog_steps));
  if (!(o.step_size > 0) || !std::isfinite(o.step_size)) bad_option("step_size", "a number > 0", num(o.step_size));
  if (!(o.target_acceptance > 0 && o.target_acceptance < 1))
    bad_option("target_acceptance", "a number in (0, 1)", num(o.target_acceptance));
  if (!(o.step_size_jitter >= 0 && o.step_size_jitter < 1))
    bad_option("step_size_jitter", "a number in [0, 1)", num(o.step_size_jitter));
  if (o.thinning < 1) bad_option("thinning", "an integer >= 1", std::to_string(o.thinning));
  if (o.chains_per_batch < 1) bad_option("chains_per_batch", "an integer >= 1", std::to_string(o.chains_per_batch));
  if (!(o.max_energy_error > 0)) bad_option("max_energy_error", "a number > 0", num(o.max_energy_error));
  // Counts whose products index the output and the progress: overflow would be undefined behaviour.
  Index per_chain = 0, total = 0;
  if (__builtin_mul_overflow(o.samples, o.thinning, &per_chain) ||
      __builtin_add_overflow(per_chain, o.warmup, &per_chain) ||
      __builtin_mul_overflow(per_chain, o.chains, &total) || total > kMaxDraws)
    bad_option("samples", "chains x (warmup + samples x thinning) at most " + std::to_string(kMaxDraws),
               std::to_string(o.chains) + " x (" + std::to_string(o.warmup) + " + " +
                   std::to_string(o.samples) + " x " + std::to_string(o.thinning) + ")");
  if (o.init == HmcInit::Points && o.init_points.rows() == 0 && !(o.init_rows && o.init_rows->rows() > 0))
    bad_option("init_points", "at least one starting point when init is Points", "none");
  if (o.init_points.rows() == 0 && o.init_rows && dim >= 0 && o.init_rows->cols() != dim)
    bad_option("init_rows", std::to_string(dim) + " columns (the model dimension)", std::to_string(o.init_rows->cols()));
  if (o.init_points.rows() > 0) {
    if (dim >= 0 && o.init_points.cols() != dim)
      bad_option("init_points", std::to_string(dim) + " columns (the model dimension)",
                 std::to_string(o.init_points.cols()));
    for (Index r = 0; r < o.init_points.rows(); ++r)
      if (!row_finite(o.init_points, r)) bad_option("init_points", "finite values", "a non-finite value in row " + std::to_string(r));
  }
}

Matrix run_hmc(const Model& model, RandomStream& rng, const HmcOptions& o, const Context& context,
               HmcDiagnostics* diag) {
  const Index D = model.dim();
  validate(o, D);
  if (o.samples < 1) bad_option("samples", "an integer >= 1 (kept draws per chain)", std::to_string(o.samples));
  const RandomStream root = rng.derive(rng());
  const Matrix X0 = starting_points(model, o, root.derive("init"));

  std::vector<Chain> chains(static_cast<std::size_t>(o.chains));
  for (Index c = 0; c < o.chains; ++c) {
    Chain& ch = chains[static_cast<std::size_t>(c)];
    ch.id = c;
    ch.rng = root.derive(static_cast<std::uint64_t>(c));
    ch.eps = o.step_size;
    ch.da.restart(o.step_size);
    ch.inv_mass = Vector::Ones(D);
    ch.var_mean = Vector::Zero(D);
    ch.var_m2 = Vector::Zero(D);
    ch.draws.resize(o.samples, D);
  }
  const Index groups = (o.chains + o.chains_per_batch - 1) / o.chains_per_batch;
  auto first_chain = [&](Index g) { return std::min(g * o.chains_per_batch, o.chains); };
  // The groups are shared between the processes of a distributed run (kef/distributed_reduce.hpp):
  // each runs its groups' chains, from the chains' own streams, and every process receives every
  // chain's draws and statistics, so every one holds the single-process result. Progress counts
  // this process's chains.
  const auto [own_first, own_last] = own_items(groups, context, groups);
  ProgressTicker ticker(
      o, (first_chain(own_last) - first_chain(own_first)) * (o.warmup + o.samples * o.thinning));
  std::vector<std::vector<Chain>> ran = distributed_parts(
      groups, context, [] { return std::vector<Chain>(); },
      [&](Index g, std::vector<Chain>& part) {
        const Index first = first_chain(g), n = first_chain(g + 1) - first;
        part.assign(chains.begin() + first, chains.begin() + first + n);
        run_group(model, o, part.data(), n, X0.middleRows(first, n), ticker);
      },
      [](std::vector<Chain>& part) { return std::tie(part); });
  for (Index g = 0; g < groups; ++g)
    for (std::size_t j = 0; j < ran[static_cast<std::size_t>(g)].size(); ++j)
      chains[static_cast<std::size_t>(first_chain(g)) + j] = std::move(ran[static_cast<std::size_t>(g)][j]);
  if (o.progress) o.progress->done(o.progress_task, "sampled");

  Matrix out(o.samples * o.chains, D);
  std::vector<Matrix> draws;
  for (Index c = 0; c < o.chains; ++c) {
    const Chain& ch = chains[static_cast<std::size_t>(c)];
    for (Index s = 0; s < o.samples; ++s) out.row(s * o.chains + c) = ch.draws.row(s);
    draws.push_back(ch.draws);
  }
  if (diag) {
    HmcDiagnostics& d = *diag;
    d = HmcDiagnostics{};
    d.ran = true;
    d.chains = o.chains;
    d.warmup = o.warmup;
    d.samples = o.samples;
    d.inverse_mass.resize(o.chains, D);
    const double proposals = static_cast<double>(o.samples * o.thinning);
    for (Index c = 0; c < o.chains; ++c) {
      const Chain& ch = chains[static_cast<std::size_t>(c)];
      d.acceptance_rate.push_back(static_cast<double>(ch.accepted) / proposals);
      d.mean_accept_stat.push_back(ch.accept_stat_sum / proposals);
      d.step_size.push_back(ch.eps);
      d.divergences.push_back(ch.divergences);
      d.warmup_divergences += ch.warmup_divergences;
      d.error_divergences += ch.error_divergences;
      if (d.first_error.empty()) d.first_error = ch.first_error;
      d.inverse_mass.row(c) = ch.inv_mass.transpose();
    }
    d.ess = effective_sample_size(draws);
    d.r_hat = split_r_hat(draws);
  }
  return out;
}

Matrix draw_samples(const Model& model, Index n, RandomStream& rng, const HmcOptions& options,
                    const Context& context, HmcDiagnostics* diagnostics) {
  if (diagnostics) *diagnostics = HmcDiagnostics{};
  if (n < 1) throw ConfigError("draw_samples: the number of samples must be >= 1, got " + std::to_string(n));
  if (n > kMaxDraws)
    throw ConfigError("draw_samples: the number of samples must be at most " + std::to_string(kMaxDraws) +
                      ", got " + std::to_string(n));
  validate(options, model.dim());
  if (model.can_sample()) {
    if (diagnostics) diagnostics->approximate = model.facets().has(Facet::ApproximateSampler);
    Matrix X = model.sample(n, rng);
    if (X.rows() != n || X.cols() != model.dim())
      throw Error("model " + model.type_name() + ": sample(" + std::to_string(n) + ") returned " +
                  std::to_string(X.rows()) + " x " + std::to_string(X.cols()));
    return X;
  }
  HmcOptions o = options;
  // ceil(n / chains) without forming n + chains - 1, which overflows for n near the Index maximum.
  const Index per_chain = n / o.chains + (n % o.chains != 0 ? 1 : 0);
  if (o.samples == 0) o.samples = per_chain;
  if (o.samples < per_chain)
    bad_option("samples", "at least " + std::to_string(per_chain) + " draws per chain for " + std::to_string(n) +
                              " samples from " + std::to_string(o.chains) + " chains (or 0: as many as needed)",
               std::to_string(o.samples));
  Matrix all = run_hmc(model, rng, o, context, diagnostics);
  return all.topRows(n);
}

double HmcDiagnostics::mean_acceptance() const {
  if (acceptance_rate.empty()) return kNaN;
  double s = 0;
  for (double a : acceptance_rate) s += a;
  return s / static_cast<double>(acceptance_rate.size());
}

double HmcDiagnostics::min_ess() const {
  // NaN when any coordinate has no estimate: a minimum over the others would overstate mixing.
  return ess.size() == 0 || ess.hasNaN() ? kNaN : ess.minCoeff();
}

double HmcDiagnostics::max_r_hat() const { return r_hat.size() == 0 || r_hat.hasNaN() ? kNaN : r_hat.maxCoeff(); }

Index HmcDiagnostics::total_divergences() const {
  Index s = 0;
  for (Index d : divergences) s += d;
  return s;
}

std::vector<Index> HmcDiagnostics::stuck_chains() const {
  std::vector<Index> out;
  if (samples <= 0) return out;
  for (std::size_t c = 0; c < acceptance_rate.size(); ++c)
    if (acceptance_rate[c] == 0.0) out.push_back(static_cast<Index>(c));
  return out;
}

std::string HmcDiagnostics::stuck_chains_text() const {
  std::ostringstream os;
  os.precision(3);
  const std::vector<Index> stuck = stuck_chains();
  for (std::size_t i = 0; i < stuck.size(); ++i) {
    const auto c = static_cast<std::size_t>(stuck[i]);
    os << (i ? ", " : "") << "chain " << stuck[i];
    if (c < step_size.size()) os << " (step size " << step_size[c] << ")";
  }
  return os.str();
}

std::string HmcDiagnostics::summary() const {
  if (!ran) return approximate ? "HMC did not run (the model's approximate sampler)" : "HMC did not run (exact sampler)";
  std::ostringstream os;
  os.precision(3);
  const auto [lo, hi] = std::minmax_element(step_size.begin(), step_size.end());
  os << "HMC: " << chains << " chains x (" << warmup << " warm-up + " << samples << " kept draws); acceptance "
     << mean_acceptance() << "; step size " << (lo == step_size.end() ? kNaN : *lo) << ".."
     << (hi == step_size.end() ? kNaN : *hi) << "; min ESS " << min_ess() << "; max split-R^ " << max_r_hat()
     << "; divergences " << total_divergences() << " (warm-up " << warmup_divergences << ")";
  if (error_divergences > 0)
    os << "; " << error_divergences << " of all divergences where the model threw (first: " << first_error
       << ")";
  const std::string stuck = stuck_chains_text();
  if (!stuck.empty()) os << "; accepted nothing after warm-up: " << stuck;
  return os.str();
}

}  // namespace kef
