#include "kef/bayesian_witness.hpp"

#include <algorithm>
#include <boost/math/special_functions/erf.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"
#include "kernel_embedding.hpp"

namespace kef {
namespace {

void check_sample(const Matrix& S, const std::string& where, const char* name) {
  if (S.rows() < 1 || S.cols() < 1)
    throw DataError(where + ": " + name + " has no data (" + std::to_string(S.rows()) + " x " +
                    std::to_string(S.cols()) + ")");
  check_finite(S, where + ": " + name);
}

void check_inputs(const Matrix& X, const Matrix& Y, const Matrix& points, const WitnessOptions& o) {
  const std::string& w = o.where;
  if (!(o.level > 0.0 && o.level < 1.0))
    throw ConfigError(w + ": level must be in (0, 1), got " + number_text(o.level));
  if (!(o.tau2 > 0.0) || !std::isfinite(o.tau2))
    throw ConfigError(w + ": tau2 must be a positive number, got " + number_text(o.tau2));
  check_sample(X, w, "X");
  check_sample(Y, w, "Y");
  if (Y.cols() != X.cols())
    throw DataError(w + ": Y has " + std::to_string(Y.cols()) + " columns, X has " +
                    std::to_string(X.cols()) + " (the witness compares two samples of the same dimension)");
  if (points.rows() < 1) throw DataError(w + ": no points to evaluate the witness at");
  if (points.cols() != X.cols())
    throw DataError(w + ": the points have " + std::to_string(points.cols()) + " columns, the samples " +
                    std::to_string(X.cols()));
  check_finite(points, w + ": points");
}

// Mean and variance of μ_P − μ_Q at the points for one ℓ: the two posteriors are independent.
void witness_moments(const Matrix& X, const Matrix& Y, const Matrix& points, double ell,
                     const WitnessOptions& o, Vector& mean, Vector& var) {
  const BayesianKernelEmbedding p(X, ell, o.tau2, o.where + " (X)"), q(Y, ell, o.tau2, o.where + " (Y)");
  mean = p.mean(points) - q.mean(points);
  var = p.variance(points) + q.variance(points);
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The q-quantile of Σ_k w_k N(m_k, s_k²) (Σ w_k = 1) by bisection on its CDF, which is continuous and
// increasing where any s_k > 0 (a component with s_k = 0 is a step at m_k). The bracket
// [min m_k − 10 s_k, max m_k + 10 s_k] holds every quantile with q in [1e-20, 1 − 1e-20].
double mixture_quantile(const std::vector<double>& w, const std::vector<double>& m,
                        const std::vector<double>& s, double q) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t k = 0; k < m.size(); ++k) {
    lo = std::min(lo, m[k] - 10.0 * s[k]);
    hi = std::max(hi, m[k] + 10.0 * s[k]);
  }
  auto cdf = [&](double x) {
    double F = 0.0;
    for (std::size_t k = 0; k < m.size(); ++k)
      F += w[k] * (s[k] > 0.0 ? normal_cdf((x - m[k]) / s[k]) : (x >= m[k] ? 1.0 : 0.0));
    return F;
  };
  // A fixed number of halvings (width 2^-60 of the bracket's): the same steps on any machine.
  for (int it = 0; it < 60 && hi > lo; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (cdf(mid) < q)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

WitnessPosterior bayesian_witness(const Matrix& X, const Matrix& Y, const Matrix& points, double lengthscale,
                                  const WitnessOptions& options, const Context& /*context*/) {
  check_inputs(X, Y, points, options);
  if (!(lengthscale > 0.0) || !std::isfinite(lengthscale))
    throw ConfigError(options.where + ": the length scale must be a positive number, got " +
                      number_text(lengthscale));
  WitnessPosterior r;
  Vector var;
  witness_moments(X, Y, points, lengthscale, options, r.mean, var);
  r.sd = var.cwiseSqrt();
  // The central band of N(mean, sd²): P(|Z| <= z) = level for z = √2 erf⁻¹(level).
  const double z = std::sqrt(2.0) * boost::math::erf_inv(options.level);
  r.lower = r.mean - z * r.sd;
  r.upper = r.mean + z * r.sd;
  r.lengthscales = 1;
  return r;
}

WitnessPosterior bayesian_witness(const Matrix& X, const Matrix& Y, const Matrix& points,
                                  const Vector& log_lengthscales, const WitnessOptions& options,
                                  const Context& context) {
  check_inputs(X, Y, points, options);
  if (log_lengthscales.size() < 1) throw ConfigError(options.where + ": no draws of log ℓ to integrate over");
  check_finite(log_lengthscales, options.where + ": draws of log ℓ");
  // HMC repeats a draw when it rejects a proposal: each distinct ℓ is computed once and weighted by
  // its count. Sorted, so the mixture's sums run in an order fixed by the draws alone.
  std::vector<double> a(log_lengthscales.data(), log_lengthscales.data() + log_lengthscales.size());
  std::sort(a.begin(), a.end());
  std::vector<double> ell, weight;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i > 0 && a[i] == a[i - 1]) {
      weight.back() += 1.0;
      continue;
    }
    ell.push_back(std::exp(a[i]));
    weight.push_back(1.0);
  }
  for (double& w : weight) w /= static_cast<double>(a.size());
  const Index K = static_cast<Index>(ell.size()), P = points.rows();
  Matrix means(P, K), vars(P, K);
  parallel_for(K, context.threads(), [&](Index k) {
    Vector m, v;
    witness_moments(X, Y, points, ell[static_cast<std::size_t>(k)], options, m, v);
    means.col(k) = m;
    vars.col(k) = v;
  });
  WitnessPosterior r;
  r.lengthscales = static_cast<Index>(a.size());
  r.mean = Vector::Zero(P);
  Vector within = Vector::Zero(P);
  for (Index k = 0; k < K; ++k) {
    r.mean += weight[static_cast<std::size_t>(k)] * means.col(k);
    within += weight[static_cast<std::size_t>(k)] * vars.col(k);
  }
  // Total variance: the draws' average variance plus the variance of their means.
  Vector between = Vector::Zero(P);
  for (Index k = 0; k < K; ++k)
    between += weight[static_cast<std::size_t>(k)] * (means.col(k) - r.mean).array().square().matrix();
  r.sd = (within + between).cwiseSqrt();
  r.lower.resize(P);
  r.upper.resize(P);
  const double tail = 0.5 * (1.0 - options.level);
  parallel_for(P, context.threads(), [&](Index j) {
    std::vector<double> m(static_cast<std::size_t>(K)), s(static_cast<std::size_t>(K));
    for (Index k = 0; k < K; ++k) {
      m[static_cast<std::size_t>(k)] = means(j, k);
      s[static_cast<std::size_t>(k)] = std::sqrt(vars(j, k));
    }
    r.lower[j] = mixture_quantile(weight, m, s, tail);
    r.upper[j] = mixture_quantile(weight, m, s, 1.0 - tail);
  });
  return r;
}

LearnedWitness bayesian_witness_bkl(const Matrix& X, const Matrix& Y, const Matrix& points, BklOptions bkl,
                                    const WitnessOptions& options, const Context& context) {
  // Checked before BKL runs: a dimension mismatch should be named as such, not as a BKL failure.
  check_inputs(X, Y, points, options);
  Matrix pooled(X.rows() + Y.rows(), X.cols());
  pooled << X, Y;
  bkl.tau2 = options.tau2;
  LearnedWitness r;
  r.bkl = bkl_bandwidth(pooled, bkl, context.child("bkl"));
  r.witness = bkl.method == BklMethod::Hmc ? bayesian_witness(X, Y, points, r.bkl.draws, options, context)
                                           : bayesian_witness(X, Y, points, r.bkl.sigma, options, context);
  return r;
}

}  // namespace kef
