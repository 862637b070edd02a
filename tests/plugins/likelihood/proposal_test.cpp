// The proposals of the defensive mixture and of AIS: normalisation against quadrature and closed
// forms, gradients against central differences, samples against their distributions, the mixture
// against its brute-force formula, and importance sampling from a mixture through ProposalSource.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "kef/defensive_proposal.hpp"
#include "kef/importance_sampling.hpp"
#include "kef/linalg.hpp"
#include "kef/student_t_proposal.hpp"
#include "likelihood_support.hpp"

namespace kef::likelihood_test {
namespace {

Matrix spd2() {
  Matrix S(2, 2);
  S << 2.0, 0.6, 0.6, 0.5;
  return S;
}

// log ∫ exp(log q) by the midpoint rule on [−R, R]² with n² cells (2-D).
double log_integral_2d(const Proposal& q, double R, Index n, Vector centre = Vector::Zero(2)) {
  const double h = 2 * R / static_cast<double>(n);
  Matrix grid(n * n, 2);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j)
      grid.row(i * n + j) << centre[0] - R + (i + 0.5) * h, centre[1] - R + (j + 0.5) * h;
  return logsumexp(q.log_density(grid)) + 2 * std::log(h);
}

void expect_gradient_matches_differences(const Proposal& q, const Matrix& X, double tol) {
  const Matrix G = q.gradient(X);
  for (Index i = 0; i < X.rows(); ++i) {
    const Vector num = test::numerical_gradient(
        [&](const Vector& x) { return q.log_density(x.transpose())[0]; }, X.row(i).transpose(), 1e-5);
    for (Index d = 0; d < X.cols(); ++d)
      EXPECT_NEAR(G(i, d), num[d], tol * (1 + std::abs(num[d]))) << i << "," << d;
  }
}

TEST(StudentTProposal, IntegratesToOneAndItsTailMassIsTheClosedForm) {
  // D = 2: δ²/2 ~ F(2, ν), so P(δ > ρ) = (1 + ρ²/ν)^{−ν/2}; with ν = 4 the mass outside the box of
  // half-width 150 (δ > 150/sqrt(λ_max(Σ)) ≈ 104) is < 1e-7, and the midpoint rule is far more accurate.
  const StudentTProposal t(Vector::Zero(2), spd2(), 4.0);
  EXPECT_NEAR(log_integral_2d(t, 150.0, 1500), 0.0, 2e-4);
  // At the location: log Γ((ν+D)/2) − log Γ(ν/2) − (D/2) log(νπ) − (1/2) log|Σ|.
  const double expected = std::lgamma(3.0) - std::lgamma(2.0) - std::log(4.0 * std::numbers::pi) -
                          0.5 * std::log(spd2().determinant());
  EXPECT_NEAR(t.log_density(Matrix::Zero(1, 2))[0], expected, 1e-13);
}

TEST(StudentTProposal, GradientMatchesCentralDifferences) {
  Vector mu(2);
  mu << 0.5, -1.0;
  const StudentTProposal t(mu, spd2(), 3.0);
  RandomStream rng(1, "x");
  expect_gradient_matches_differences(t, 2.0 * rng.normal_matrix(6, 2), 1e-6);
}

TEST(StudentTProposal, SamplesFollowTheRadialLaw) {
  // Fraction of draws with δ² <= c against 1 − (1 + c/ν)^{−ν/2} (D = 2), within 4 binomial sd.
  const StudentTProposal t(Vector::Zero(2), spd2(), 3.0);
  RandomStream rng(2, "t");
  const Index n = 200000;
  const Matrix Y = t.sample(n, rng);
  const Matrix L = spd2().llt().matrixL();
  const Vector d2 = L.triangularView<Eigen::Lower>().solve(Y.transpose()).colwise().squaredNorm().transpose();
  for (double c : {0.3, 1.0, 4.0, 30.0}) {
    const double p = 1.0 - std::pow(1.0 + c / 3.0, -1.5);
    const double frac = static_cast<double>((d2.array() <= c).count()) / static_cast<double>(n);
    EXPECT_NEAR(frac, p, 4.0 * std::sqrt(p * (1 - p) / static_cast<double>(n))) << c;
  }
}

TEST(StudentTProposal, FitUsesTheDataMeanAndCovariance) {
  RandomStream rng(3, "fit");
  Matrix X = rng.normal_matrix(500, 2);
  X.col(1) = 3.0 * X.col(1).array() + 7.0;
  const StudentTProposal t = StudentTProposal::fit(X, 5.0);
  EXPECT_NEAR(t.location()[0], X.col(0).mean(), 1e-12);
  EXPECT_NEAR(t.location()[1], X.col(1).mean(), 1e-12);
  EXPECT_THROW(StudentTProposal::fit(X.topRows(1), 3.0), DataError);
}

TEST(GaussianCentresProposal, MatchesTheBruteForceMixtureAndIntegratesToOne) {
  Matrix C(3, 2);
  C << 0, 0, 2, 1, -1, 3;
  Vector h(2);
  h << 0.4, 0.7;
  const GaussianCentresProposal g(C, h);
  RandomStream rng(4, "x");
  const Matrix X = 2.0 * rng.normal_matrix(5, 2);
  const Vector lq = g.log_density(X);
  for (Index i = 0; i < X.rows(); ++i) {
    double sum = 0;
    for (Index m = 0; m < 3; ++m) {
      double e = 1.0;
      for (Index d = 0; d < 2; ++d)
        e *= std::exp(-0.5 * std::pow((X(i, d) - C(m, d)) / h[d], 2)) /
             (std::sqrt(2 * std::numbers::pi) * h[d]);
      sum += e / 3.0;
    }
    EXPECT_NEAR(lq[i], std::log(sum), 1e-12);
  }
  EXPECT_NEAR(log_integral_2d(g, 10.0, 800, Vector::Constant(2, 1.0)), 0.0, 1e-9);
  expect_gradient_matches_differences(g, X, 1e-6);
}

TEST(MixtureProposal, DensityGradientAndComponentFrequencies) {
  auto t = std::make_shared<StudentTProposal>(Vector::Zero(2), spd2(), 3.0);
  Matrix C(1, 2);
  C << 8.0, 8.0;
  auto g = std::make_shared<GaussianCentresProposal>(C, Vector::Constant(2, 0.5));
  const MixtureProposal mix({t, g}, {3.0, 1.0});
  EXPECT_NEAR(mix.weights()[0], 0.75, 1e-15);
  RandomStream rng(5, "x");
  const Matrix X = 3.0 * rng.normal_matrix(6, 2);
  const Vector lq = mix.log_density(X);
  for (Index i = 0; i < X.rows(); ++i) {
    const double brute =
        std::log(0.75 * std::exp(t->log_density(X.row(i))[0]) + 0.25 * std::exp(g->log_density(X.row(i))[0]));
    EXPECT_NEAR(lq[i], brute, 1e-12);
  }
  expect_gradient_matches_differences(mix, X, 1e-6);
  // The bump at (8, 8) is almost never reached by the t: draws near it count the bump's share.
  const Index n = 100000;
  const Matrix Y = mix.sample(n, rng);
  const double near = static_cast<double>(((Y.rowwise() - C.row(0)).rowwise().norm().array() < 3.0).count());
  EXPECT_NEAR(near / static_cast<double>(n), 0.25, 4.0 * std::sqrt(0.25 * 0.75 / n) + 1e-3);
  EXPECT_THROW(MixtureProposal({t, g}, {0.0, 0.0}), ConfigError);
  EXPECT_THROW(MixtureProposal({t, g}, {1.0, -1.0}), ConfigError);
}

TEST(DefensiveProposal, ImportanceSamplingFromTheMixtureRecoversAKnownNormaliser) {
  // p~ = exp(−‖x − μ‖²/2) with μ = (4, −3), far from q0 = N(0, 1): log Z = log 2π. The defensive
  // mixture (q0, a t and bumps fitted to data around μ) gets it within 4 of its standard errors.
  const Vector mu = (Vector(2) << 4.0, -3.0).finished();
  const BaseMeasurePtr q0 = gaussian_base(1.0);
  FunctionModel m(q0, 2, [mu, q0](const Matrix& X) -> Vector {
    return (-0.5 * (X.rowwise() - mu.transpose()).rowwise().squaredNorm()).eval() - q0->log_density(X);
  });
  RandomStream rng(6, "data");
  const Matrix data = rng.normal_matrix(400, 2).rowwise() + mu.transpose();
  RandomStream crng(6, "centres");
  const MixtureProposal mix =
      make_defensive_proposal(m.base_measure(), data, Matrix(0, 2), DefensiveOptions{}, crng);
  // q0, the t and one bump family per default bandwidth factor (1 and 0.25).
  EXPECT_EQ(mix.components().size(), 4u);
  const ProposalSource source(m, mix, "test");
  const MomentsRun run = sample_moments(source, RandomStream(7, "is"),
                                        ChunkPlan{200000, 4096, 0.0, nullptr, "t"}, Context(1, 2));
  const double se = run.moments.log_mean_stderr();
  EXPECT_LT(se, 0.01);
  EXPECT_NEAR(run.moments.log_mean(), std::log(2 * std::numbers::pi), 4 * se);
  // Without a base measure: the t and the two bump families.
  const MixtureProposal no_q0 =
      make_defensive_proposal(nullptr, data, Matrix(0, 2), DefensiveOptions{}, crng);
  EXPECT_EQ(no_q0.components().size(), 3u);
}

}  // namespace
}  // namespace kef::likelihood_test
