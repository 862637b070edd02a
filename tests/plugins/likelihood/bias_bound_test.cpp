// The DKEF Proposition 1 bias bound against a direct evaluation for ratios r whose distribution is
// known in closed form, its 1/U decay, its scale invariance, and its "not available" paths.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "likelihood_support.hpp"

namespace kef::likelihood_test {
namespace {

// q0 = N(0, 1) in 1-D and f(x) = log(a + exp(μ + σx)): r = a + LogNormal(μ, σ²), so r >= a surely.
struct ShiftedLogNormal {
  double a = 0.5, mu = 0.0, sigma = 0.5;

  FunctionModel model() const {
    const double log_a = std::log(a), m = mu, sg = sigma;
    FunctionModel fm(gaussian_base(1.0), 1, [=](const Matrix& X) -> Vector {
      return X.col(0).unaryExpr([=](double x) {
        const double b = m + sg * x, hi = std::max(b, log_a), lo = std::min(b, log_a);
        return hi + std::log1p(std::exp(lo - hi));
      });
    });
    fm.with_lower_bound(log_a);
    return fm;
  }
  double z() const { return a + std::exp(mu + 0.5 * sigma * sigma); }
  double var() const { return std::expm1(sigma * sigma) * std::exp(2 * mu + sigma * sigma); }
  double fourth_central_moment() const {  // Var² · kurtosis of the log-normal (a shift changes neither)
    const double s2 = sigma * sigma;
    return var() * var() * (std::exp(4 * s2) + 2 * std::exp(3 * s2) + 3 * std::exp(2 * s2) - 3);
  }
  double quantile(double p) const { return a + std::exp(mu + sigma * normal_quantile(p)); }
  double density(double s) const {  // of r at s > a
    const double w = s - a, zz = (std::log(w) - mu) / sigma;
    return std::exp(-0.5 * zz * zz) / (std::sqrt(2 * std::numbers::pi) * sigma * w);
  }
  static double normal_quantile(double p) {  // bisection on Φ(z) = erfc(−z/√2)/2, to 1e-15
    double lo = -10, hi = 10;
    for (int i = 0; i < 200; ++i) {
      const double mid = 0.5 * (lo + hi);
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
  }
};

// Proposition 1 written out directly from the paper, in plain (unshifted) arithmetic.
double proposition1(double s, double rho, double Z, double var, double U, double a) {
  auto psi = [Z](double q) { return std::log(Z / q) + q / Z - 1; };
  const double t = 0.5 * (s + a);
  const double P = std::max(psi(a), psi(t));
  return psi(t) * var / ((Z - t) * (Z - t) * U) + P * std::pow(4 * rho * (1 - rho), U / 2);
}

constexpr Index kBoundSamples = 1000000;
constexpr double kPercentile = 0.4, kConfidence = 0.999;

std::string bound_keys(Index U) {
  const std::string n = std::to_string(kBoundSamples);
  return "samples = " + std::to_string(U) + "\nbound_percentile_samples = " + n + "\nbound_rho_samples = " + n +
         "\nbound_variance_samples = " + n;
}

// The estimator's bound uses ŝ (sample quantile), ρ̂ = p̂ + margin, Ẑ and V̂ from independent samples
// of n = 10^6. Their asymptotic sds: ŝ: sqrt(p(1−p)/n)/density(s); p̂ = F_n(ŝ): binomial noise
// sqrt(p(1−p)/n) plus F(ŝ) − p, which has the same sd through ŝ; Ẑ: sqrt(V/n); V̂: sqrt((μ4 − V²)/n).
// The delta method with partial derivatives of the formula (central differences) gives each
// input's share of the error; adding their absolute values bounds the sd even for correlated inputs
// (ŝ and p̂), and 4 times that is the tolerance.
void expect_matches_direct_evaluation(Index U) {
  ShiftedLogNormal d;
  const double n = static_cast<double>(kBoundSamples), pq = kPercentile * (1 - kPercentile);
  const double s = d.quantile(kPercentile), Z = d.z(), V = d.var();
  const double rho = kPercentile + std::sqrt(std::log(1 / (1 - kConfidence)) / (2 * n));
  const double u = static_cast<double>(U);
  const double exact = proposition1(s, rho, Z, V, u, d.a);

  const double theta[4] = {s, rho, Z, V};
  const double sd[4] = {std::sqrt(pq / n) / d.density(s), std::sqrt(2 * pq / n), std::sqrt(V / n),
                        std::sqrt((d.fourth_central_moment() - V * V) / n)};
  double spread = 0;
  for (int i = 0; i < 4; ++i) {
    double up[4], dn[4];
    std::copy(theta, theta + 4, up);
    std::copy(theta, theta + 4, dn);
    const double h = 1e-6 * theta[i];
    up[i] += h;
    dn[i] -= h;
    const double deriv = (proposition1(up[0], up[1], up[2], up[3], u, d.a) -
                          proposition1(dn[0], dn[1], dn[2], dn[3], u, d.a)) / (2 * h);
    spread += std::abs(deriv) * sd[i];
  }
  FunctionModel m = d.model();
  EvaluationResult r = run_q0_log_likelihood(m, Matrix::Zero(4, 1), bound_keys(U));
  const double bound = metric(r, "bias_bound");
  EXPECT_GT(bound, 0.0);
  EXPECT_NEAR(bound, exact, 4 * spread) << "U = " << U;
  EXPECT_LT(4 * spread, 0.1 * exact) << "the comparison would be too loose to mean anything";
}

TEST(BiasBound, MatchesProposition1WhereTheExponentialTermDominates) {
  // U = 64: (4ρ(1−ρ))^{32} ≈ 0.30, the exponential term is ~100x the variance term.
  expect_matches_direct_evaluation(64);
}

TEST(BiasBound, MatchesProposition1WhereTheVarianceTermDominates) {
  // U = 4096: (4ρ(1−ρ))^{2048} ≈ e^{−80}, only the variance term is left.
  expect_matches_direct_evaluation(4096);
}

TEST(BiasBound, ShrinksLikeOneOverU) {
  // s, ρ, Z and Var come from streams that do not depend on U, so with the exponential term below
  // e^{−150} (U >= 8192) the two bounds differ by exactly the factor 4 up to rounding.
  ShiftedLogNormal d;
  FunctionModel m = d.model();
  const std::string keys = "bound_percentile_samples = 100000\nbound_rho_samples = 100000\n"
                           "bound_variance_samples = 100000\n";
  const double b1 = metric(run_q0_log_likelihood(m, Matrix::Zero(2, 1), keys + "samples = 8192"), "bias_bound");
  const double b4 = metric(run_q0_log_likelihood(m, Matrix::Zero(2, 1), keys + "samples = 32768"), "bias_bound");
  EXPECT_GT(b4, 0.0);
  EXPECT_NEAR(b1 / b4, 4.0, 1e-9);
}

TEST(BiasBound, IsScaleInvariantAndDoesNotOverflow) {
  // r·e^{700}: Var[r] ~ e^{1400} overflows a double, but the bound depends only on ratios, so it
  // equals the unscaled one. The draws are the same; only rounding of log r (~700·2^-52 ≈ 1.6e-13
  // absolute, i.e. relative in r) differs, and the bound is a smooth function of the ratios.
  ShiftedLogNormal small, big;
  big.a = small.a * std::exp(700.0);
  big.mu = small.mu + 700.0;
  const std::string keys = "samples = 1000\nbound_percentile_samples = 20000\nbound_rho_samples = 20000\n"
                           "bound_variance_samples = 20000";
  FunctionModel ms = small.model(), mb = big.model();
  EvaluationResult rs = run_q0_log_likelihood(ms, Matrix::Zero(2, 1), keys);
  EvaluationResult rb = run_q0_log_likelihood(mb, Matrix::Zero(2, 1), keys);
  EXPECT_NEAR(metric(rb, "bias_bound") / metric(rs, "bias_bound"), 1.0, 1e-8);
  EXPECT_NEAR(metric(rb, "log_normalizer") - metric(rs, "log_normalizer"), 700.0, 1e-9);
}

TEST(BiasBound, RhoNotBelowOneHalfGivesANoteInsteadOfABound) {
  // With 10 proposals the Hoeffding margin sqrt(log(1000)/20) = 0.59 alone exceeds 1/2.
  ShiftedLogNormal d;
  FunctionModel m = d.model();
  EvaluationResult r = run_q0_log_likelihood(m, Matrix::Zero(2, 1), "samples = 1000\nbound_rho_samples = 10");
  EXPECT_FALSE(find_metric(r, "bias_bound"));
  EXPECT_TRUE(has_note(r, "not below 1/2"));
  EXPECT_TRUE(find_metric(r, "log_normalizer"));
}

TEST(BiasBound, AViolatedLowerBoundIsReportedNotUsed) {
  // The model claims r >= 2a·e ≈ 2.7, false for most proposals (the median of r is a + 1 = 1.5).
  ShiftedLogNormal d;
  FunctionModel m = d.model();
  m.with_lower_bound(std::log(2 * d.a) + 1.0);
  EvaluationResult r = run_q0_log_likelihood(m, Matrix::Zero(2, 1), "samples = 1000");
  EXPECT_FALSE(find_metric(r, "bias_bound"));
  EXPECT_TRUE(has_note(r, "claims log r >="));
}

}  // namespace
}  // namespace kef::likelihood_test
