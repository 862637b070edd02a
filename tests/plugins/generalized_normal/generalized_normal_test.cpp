// The generalised normal base measure: derivatives and the backward pass against central differences,
// the smoothed cusp at x = μ, normalisation by quadrature, and the sampler's moments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gn_test_util.hpp"
#include "kef/error.hpp"

namespace kef::generalized_normal {
namespace {

using test_util::make;

// Points with every |x_d − μ_d| ≥ 0.1, on both sides of μ, so that central differences never cross
// the cusp.
Matrix points_away_from_mean(const Vector& mu, Index n, std::uint64_t seed) {
  RandomStream rng(seed, "points");
  Matrix X(n, mu.size());
  for (Index i = 0; i < n; ++i)
    for (Index d = 0; d < mu.size(); ++d) {
      const double u = 0.1 + 2.0 * rng.uniform();
      X(i, d) = mu[d] + (rng.uniform() < 0.5 ? -u : u);
    }
  return X;
}

double rel_err(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

TEST(GeneralizedNormal, DerivativesMatchCentralDifferences) {
  for (const char* beta : {"1.3", "2.0", "3.7", "[1.3, 2.0, 3.7]"}) {
    SCOPED_TRACE(beta);
    auto q = make(std::string("mean = [0.5, -1.0, 2.0]\nstd = [1.7, 0.6, 1.1]\nbeta = ") + beta);
    Matrix X = points_away_from_mean(q->coordinates(3).mu, 9, 1);
    Matrix d1, d2;
    q->derivatives(X, d1, d2);
    const double h = 1e-5;
    for (Index d = 0; d < 3; ++d) {
      Matrix Xp = X, Xm = X;
      Xp.col(d).array() += h;
      Xm.col(d).array() -= h;
      Vector fd1 = (q->log_density(Xp) - q->log_density(Xm)) / (2 * h);
      Matrix a1, a2, b1, b2;
      q->derivatives(Xp, a1, a2);
      q->derivatives(Xm, b1, b2);
      Vector fd2 = (a1.col(d) - b1.col(d)) / (2 * h);
      for (Index n = 0; n < X.rows(); ++n) {
        EXPECT_LT(rel_err(d1(n, d), fd1[n]), 1e-7) << "n=" << n << " d=" << d;
        EXPECT_LT(rel_err(d2(n, d), fd2[n]), 1e-6) << "n=" << n << " d=" << d;
      }
    }
  }
}

// f(θ) = Σ a_log ⊙ log q0 + Σ A1 ⊙ d1 + Σ A2 ⊙ d2 as a function of the parameters.
double objective(GeneralizedNormalBaseMeasure& q, const Vector& theta, const Matrix& X, const Vector& al,
                 const Matrix& a1, const Matrix& a2) {
  q.set_parameters(theta);
  Matrix d1, d2;
  q.derivatives(X, d1, d2);
  double f = 0.0;
  if (al.size()) f += al.dot(q.log_density(X));
  if (a1.size()) f += (a1.array() * d1.array()).sum();
  if (a2.size()) f += (a2.array() * d2.array()).sum();
  return f;
}

void expect_backward_matches(GeneralizedNormalBaseMeasure& q, const Matrix& X, const Vector& al,
                             const Matrix& a1, const Matrix& a2, double h, double tol) {
  const Vector theta = q.parameters();
  Vector grad;
  q.backward(X, al, a1, a2, grad);
  Vector fd = kef::test::numerical_gradient(
      [&](const Vector& t) { return objective(q, t, X, al, a1, a2); }, theta, h);
  q.set_parameters(theta);
  ASSERT_EQ(grad.size(), theta.size());
  const auto names = q.parameter_names();
  for (Index i = 0; i < grad.size(); ++i)
    EXPECT_LT(std::abs(grad[i] - fd[i]) / std::max(1.0, std::abs(fd[i])), tol)
        << names[static_cast<std::size_t>(i)] << ": analytic " << grad[i] << ", numerical " << fd[i];
}

TEST(GeneralizedNormal, BackwardMatchesCentralDifferencesForEveryAdjoint) {
  auto q = make("mean = [0.5, -1.0, 2.0]\nstd = [1.7, 0.6, 1.1]\nbeta = [1.3, 2.0, 3.7]");
  const Index N = 11, D = 3;
  Matrix X = points_away_from_mean(q->coordinates(D).mu, N, 2);
  RandomStream rng(3, "adjoints");
  const Vector al = rng.normal_matrix(N, 1).col(0);
  const Matrix a1 = rng.normal_matrix(N, D), a2 = rng.normal_matrix(N, D);
  const Vector none_v;
  const Matrix none_m;
  {
    SCOPED_TRACE("log density");
    expect_backward_matches(*q, X, al, none_m, none_m, 1e-6, 1e-6);
  }
  {
    SCOPED_TRACE("first derivatives");
    expect_backward_matches(*q, X, none_v, a1, none_m, 1e-6, 1e-6);
  }
  {
    SCOPED_TRACE("second derivatives");
    expect_backward_matches(*q, X, none_v, none_m, a2, 1e-6, 1e-6);
  }
  {
    SCOPED_TRACE("all three");
    expect_backward_matches(*q, X, al, a1, a2, 1e-6, 1e-6);
  }
}

TEST(GeneralizedNormal, BackwardOfTheLogNormaliserAlone) {
  // One point and only the log-density adjoint: the b gradient carries ψ(1/β) from the normaliser;
  // β from near 1 to 8 takes ψ's argument from 0.125 to 0.95.
  for (double beta : {1.05, 1.3, 2.0, 3.7, 8.0}) {
    SCOPED_TRACE(beta);
    auto q = make("mean = 0.2\nstd = 0.8\nbeta = " + std::to_string(beta), 1);
    Matrix X(1, 1);
    X(0, 0) = 1.2;
    expect_backward_matches(*q, X, Vector::Ones(1), Matrix(), Matrix(), 1e-6, 1e-7);
  }
}

TEST(GeneralizedNormal, NoNaNForNonIntegerBetaBelowTheMean) {
  auto q = make("mean = 1.0\nstd = 0.7\nbeta = [1.3, 2.5]", 2);
  Matrix X(3, 2);
  X << 0.5, 0.5, -1.0, -1.0, -9.0, -9.0;  // all below μ
  Matrix d1, d2;
  q->derivatives(X, d1, d2);
  Vector lp = q->log_density(X), grad;
  q->backward(X, Vector::Ones(3), Matrix::Ones(3, 2), Matrix::Ones(3, 2), grad);
  EXPECT_TRUE(lp.allFinite() && d1.allFinite() && d2.allFinite() && grad.allFinite());
  EXPECT_TRUE((d1.array() > 0.0).all()) << "the score points back up towards μ";
  EXPECT_TRUE((d2.array() < 0.0).all());
  // Symmetry: the mirrored points above μ have the same density and opposite score.
  Matrix Y = (2.0 * Matrix::Ones(3, 2)) - X;
  Matrix e1, e2;
  q->derivatives(Y, e1, e2);
  EXPECT_LT((q->log_density(Y) - lp).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((e1 + d1).cwiseAbs().maxCoeff(), 1e-12);
}

// The cusp (β < 2): within r0 = ε α of μ the log density is the quadratic matching value and slope.
TEST(GeneralizedNormal, CuspIsFiniteContinuousAndConsistent) {
  for (double beta : {1.05, 1.3, 1.9, 2.0, 3.7}) {
    SCOPED_TRACE(beta);
    auto q = make("mean = 0.4\nstd = 0.9\nbeta = " + std::to_string(beta), 1);
    const auto c = q->coordinates(1);
    const double alpha = std::pow(2.0 * std::exp(2.0 * c.log_sigma[0]), 1.0 / beta);
    const double r0 = kCuspRadius * alpha;
    Matrix X(6, 1);
    X << 0.4, 0.4 + 0.3 * r0, 0.4 - 0.3 * r0, 0.4 + r0 * (1 - 1e-9), 0.4 + r0 * (1 + 1e-9), 0.4 - 2.0 * r0;
    Matrix d1, d2;
    q->derivatives(X, d1, d2);
    Vector lp = q->log_density(X);
    ASSERT_TRUE(lp.allFinite() && d1.allFinite() && d2.allFinite());
    EXPECT_EQ(d1(0, 0), 0.0);
    const double expected_d2 = -beta * std::pow(kCuspRadius, beta - 2.0) / (alpha * alpha);
    EXPECT_NEAR(d2(0, 0), expected_d2, 1e-12 * std::abs(expected_d2));
    // Value and slope are continuous across r0.
    EXPECT_NEAR(lp[3], lp[4], 1e-12);
    EXPECT_NEAR(d1(3, 0), d1(4, 0), 1e-8 * std::abs(d1(4, 0)) + 1e-300);
    // Inside, d2 is the derivative of d1 and d1 the derivative of log q0.
    const double h = 1e-3 * r0;
    for (Index n : {0, 1, 2}) {
      Matrix Xp = X.row(n), Xm = X.row(n);
      Xp(0, 0) += h;
      Xm(0, 0) -= h;
      Matrix a1, a2, b1, b2;
      q->derivatives(Xp, a1, a2);
      q->derivatives(Xm, b1, b2);
      EXPECT_NEAR((a1(0, 0) - b1(0, 0)) / (2 * h), d2(n, 0), 1e-6 * std::abs(d2(n, 0)));
    }
    // The backward pass inside the cusp, with steps small enough to stay inside.
    Matrix Xin = X.topRows(3);
    expect_backward_matches(*q, Xin, Vector::Ones(3), Matrix::Constant(3, 1, 0.7),
                            Matrix::Constant(3, 1, -0.3), 1e-3 * r0, 1e-5);
  }
}

// Trapezoid rule on [μ − L, μ + L] with a node at μ (where the β < 2 integrand has its cusp).
double integrate_1d(const GeneralizedNormalBaseMeasure& q, double mu, double L, Index half) {
  const Index n = 2 * half + 1;
  Matrix X(n, 1);
  for (Index i = 0; i < n; ++i) X(i, 0) = mu + L * static_cast<double>(i - half) / static_cast<double>(half);
  Vector p = q.log_density(X).array().exp();
  return (p.sum() - 0.5 * (p[0] + p[n - 1])) * L / static_cast<double>(half);
}

TEST(GeneralizedNormal, IsNormalisedIn1D) {
  for (double beta : {1.1, 1.3, 2.0, 3.7, 6.0}) {
    SCOPED_TRACE(beta);
    auto q = make("mean = -0.3\nstd = 0.6\nbeta = " + std::to_string(beta), 1);
    const double alpha = std::pow(2.0 * 0.36, 1.0 / beta);
    // Tail mass beyond t α is Γ(1/β, t^β) / Γ(1/β) < e^{−40} for t^β = 40.
    const double L = alpha * std::pow(40.0, 1.0 / beta);
    EXPECT_NEAR(integrate_1d(*q, -0.3, L, 200000), 1.0, 1e-8);
  }
}

TEST(GeneralizedNormal, IsNormalisedIn2D) {
  auto q = make("mean = [0.5, -1.0]\nstd = [0.8, 1.3]\nbeta = [1.4, 3.0]", 2);
  const double mu[2] = {0.5, -1.0}, sd[2] = {0.8, 1.3}, beta[2] = {1.4, 3.0};
  const Index half = 600, n = 2 * half + 1;
  double L[2], h[2];
  for (int d = 0; d < 2; ++d) {
    L[d] = std::pow(2.0 * sd[d] * sd[d], 1.0 / beta[d]) * std::pow(30.0, 1.0 / beta[d]);
    h[d] = L[d] / half;
  }
  Matrix X(n * n, 2);
  Vector w(n * n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) {
      X(i * n + j, 0) = mu[0] + h[0] * static_cast<double>(i - half);
      X(i * n + j, 1) = mu[1] + h[1] * static_cast<double>(j - half);
      w[i * n + j] = (i == 0 || i == n - 1 ? 0.5 : 1.0) * (j == 0 || j == n - 1 ? 0.5 : 1.0);
    }
  const double integral = w.dot(q->log_density(X).array().exp().matrix()) * h[0] * h[1];
  EXPECT_NEAR(integral, 1.0, 1e-5);
}

TEST(GeneralizedNormal, SamplesHaveTheRightMoments) {
  auto q = make("mean = [1.0, -2.0, 0.5]\nstd = [0.5, 1.5, 1.0]\nbeta = [1.3, 2.0, 3.7]");
  RandomStream rng(3, "sample");
  const Index N = 40000;
  Matrix S = q->sample(N, 3, rng);
  ASSERT_TRUE(S.allFinite());
  const auto c = q->coordinates(3);
  for (Index d = 0; d < 3; ++d) {
    SCOPED_TRACE(d);
    const double mu = c.mu[d], sigma = std::exp(c.log_sigma[d]), beta = c.beta[d];
    const double alpha = std::pow(2.0 * sigma * sigma, 1.0 / beta);
    // Var x = α² Γ(3/β) / Γ(1/β).
    const double var = alpha * alpha * std::exp(std::lgamma(3.0 / beta) - std::lgamma(1.0 / beta));
    EXPECT_NEAR(S.col(d).mean(), mu, 5.0 * std::sqrt(var / N));
    // |x − μ|^β = α^β G with G ~ Gamma(1/β, 1): mean α^β/β = 2σ²/β, variance α^{2β}/β.
    const double ab = 2.0 * sigma * sigma;
    const double m = (S.col(d).array() - mu).abs().pow(beta).mean();
    EXPECT_NEAR(m, ab / beta, 5.0 * ab / std::sqrt(beta * N));
    const double s2 = (S.col(d).array() - S.col(d).mean()).square().mean();
    EXPECT_NEAR(s2, var, 0.05 * var);
    const double above = (S.col(d).array() > mu).cast<double>().mean();
    EXPECT_NEAR(above, 0.5, 5.0 * 0.5 / std::sqrt(double(N)));
  }
}

TEST(GeneralizedNormal, SamplingIsReproducibleAndPrefixStable) {
  auto q = make("beta = 1.5");
  RandomStream a(5, "s"), b(5, "s");
  Matrix S1 = q->sample(100, 2, a), S2 = q->sample(60, 2, b);
  EXPECT_EQ(S1.topRows(60), S2);
}

// Brute-force twins of the vectorised paths: log q0 with std::pow per coordinate, and the sampler
// against the textbook draw μ ± α G^{1/β}, G = RandomStream::gamma(1/β), from a copy of the stream
// (the fast sampler reads the same variates: G = G₁ W^β and G^{1/β} = G₁^{1/β} W). Both differ only by
// rounding: a few ulp of exp/log/pow, relative 1e-13 is a wide margin.
TEST(GeneralizedNormal, VectorisedDensityAndSamplerMatchTheirScalarTwins) {
  auto q = make("mean = [1.0, -2.0, 0.5]\nstd = [0.5, 1.5, 1.0]\nbeta = [1.3, 2.0, 3.7]");
  const auto c = q->coordinates(3);
  RandomStream rng(8, "twin");
  Matrix X = 2.0 * rng.normal_matrix(257, 3);
  X(0, 0) = 1.0;   // exactly at the mean
  X(1, 1) = -2.0 + 1e-9;  // inside the cusp
  const Vector fast = q->log_density(X);
  for (Index n = 0; n < X.rows(); ++n) {
    double want = 0.0;
    for (Index d = 0; d < 3; ++d) {
      const double beta = c.beta[d], sigma = std::exp(c.log_sigma[d]);
      const double alpha = std::pow(2.0 * sigma * sigma, 1.0 / beta);
      const double r = std::abs(X(n, d) - c.mu[d]);
      const double log_norm = std::log(beta / (2.0 * alpha * std::tgamma(1.0 / beta)));
      if (r >= kCuspRadius * alpha)  // outside the smoothed cusp (CuspIsFiniteContinuousAndConsistent covers it)
        want += -std::pow(r, beta) / (2.0 * sigma * sigma) + log_norm;
      else
        want = std::numeric_limits<double>::quiet_NaN();
    }
    if (std::isnan(want)) continue;
    EXPECT_NEAR(fast[n], want, 1e-13 * std::max(1.0, std::abs(want))) << "row " << n;
  }
  RandomStream a(9, "s");
  RandomStream b = a;
  const Matrix S = q->sample(500, 3, a);
  for (Index i = 0; i < 500; ++i)
    for (Index d = 0; d < 3; ++d) {
      const double beta = c.beta[d], sigma = std::exp(c.log_sigma[d]);
      const double alpha = std::pow(2.0 * sigma * sigma, 1.0 / beta);
      const double g = b.gamma(1.0 / beta);
      const double sign = b.uniform() < 0.5 ? -1.0 : 1.0;
      const double want = c.mu[d] + alpha * sign * std::pow(g, 1.0 / beta);
      EXPECT_NEAR(S(i, d), want, 1e-13 * std::max(1.0, std::abs(want))) << i << ", " << d;
    }
}

}  // namespace
}  // namespace kef::generalized_normal
