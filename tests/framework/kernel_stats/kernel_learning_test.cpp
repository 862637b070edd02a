// Bayesian kernel learning (docs/math.md §9): the O(m³ + nmD) pseudolikelihood against the dense
// mn-dimensional Gaussian, its gradient against central differences, values against the NumPy anchor
// (bkl_reference.hpp, written by make_reference.py), the mode finder, the refusal of an optimum on a
// bound, HMC against the mode, thread-count independence, and bad input.
#include "kef/kernel_learning.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "bkl_reference.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using test::from_rows;

// log N(vec Φ; 0, 1 1ᵀ ⊗ R_zz + τ² I) + Σ_i ½ log det(J_iᵀ J_i), straight from the definitions: vec Φ
// stacks the columns φ(x_i) = k(Z, x_i), J_i[l, d] = ∂k(x_i, z_l)/∂x_d = −(x_id − z_ld) k_il / ℓ².
double dense_loglik(const Matrix& X, const Matrix& Z, double ell, double tau2) {
  const Index n = X.rows(), m = Z.rows(), D = X.cols();
  auto k = [&](const auto& a, const auto& b, double s) {
    return std::exp(-(a - b).squaredNorm() / (2 * s * s));
  };
  Matrix R(m, m);
  for (Index j = 0; j < m; ++j)
    for (Index l = 0; l < m; ++l) R(j, l) = k(Z.row(j), Z.row(l), std::sqrt(2.0) * ell);
  Matrix C(m * n, m * n);
  for (Index i = 0; i < n; ++i)
    for (Index i2 = 0; i2 < n; ++i2) C.block(i * m, i2 * m, m, m) = R;
  C.diagonal().array() += tau2;
  Vector v(m * n);
  double jac = 0.0;
  for (Index i = 0; i < n; ++i) {
    Matrix J(m, D);
    for (Index l = 0; l < m; ++l) {
      const double kil = k(X.row(i), Z.row(l), ell);
      v[i * m + l] = kil;
      J.row(l) = -(X.row(i) - Z.row(l)) * kil / (ell * ell);
    }
    jac += 0.5 * std::log((J.transpose() * J).determinant());
  }
  Eigen::LLT<Matrix> llt(C);
  const Matrix L = llt.matrixL();
  const double logdet = 2.0 * L.diagonal().array().log().sum();
  const double quad = v.dot(llt.solve(v));
  return -0.5 * (quad + logdet + static_cast<double>(m * n) * std::log(2.0 * std::numbers::pi)) + jac;
}

TEST(BklPseudolikelihood, ClosedFormMatchesTheDenseGaussian) {
  const auto p = test::random_points(7, 3, 2, 11, "bkl-dense");
  const Context ctx(1);
  const BklPseudolikelihood L(p.X, p.Y);
  for (auto [ell, tau2] : {std::pair{0.7, 0.05}, {1.5, 0.3}, {1.0, 2.0}}) {
    const double dense = dense_loglik(p.X, p.Y, ell, tau2);
    const double fast = L.value(std::log(ell), std::log(tau2), nullptr, ctx);
    EXPECT_NEAR(fast, dense, 1e-9 * std::abs(dense)) << "ell " << ell << " tau2 " << tau2;
  }
  // A second shape: more landmarks than rows, D = 3.
  const auto q = test::random_points(4, 6, 3, 12, "bkl-dense-2");
  const BklPseudolikelihood L2(q.X, q.Y);
  EXPECT_NEAR(L2.value(std::log(0.9), std::log(0.2), nullptr, ctx), dense_loglik(q.X, q.Y, 0.9, 0.2),
              1e-9 * std::abs(dense_loglik(q.X, q.Y, 0.9, 0.2)));
}

TEST(BklPseudolikelihood, GradientMatchesCentralDifferences) {
  const auto p = test::random_points(60, 9, 3, 5, "bkl-grad");
  const Context ctx(1);
  const BklPseudolikelihood L(p.X, p.Y);
  for (auto [ell, tau2] : {std::pair{0.5, 0.02}, {1.0, 1.0}, {2.5, 0.1}, {6.0, 5.0}}) {
    const Vector at(Eigen::Vector2d(std::log(ell), std::log(tau2)));
    Vector g(2);
    L.value(at[0], at[1], &g, ctx);
    const Vector fd = test::numerical_gradient(
        [&](const Vector& x) { return L.value(x[0], x[1], nullptr, ctx); }, at, 1e-5);
    for (int k = 0; k < 2; ++k)
      EXPECT_NEAR(g[k], fd[k], 1e-6 * std::max(1.0, std::abs(fd[k]))) << "coordinate " << k << " ell " << ell;
  }
}

TEST(BklPseudolikelihood, MatchesTheNumpyAnchor) {
  const Matrix X = from_rows(bkl_reference::kSmallX), Z = from_rows(bkl_reference::kSmallZ);
  const Context ctx(1);
  const BklPseudolikelihood L(X, Z);
  for (const auto& row : bkl_reference::kSmallValues) {
    Vector g(2);
    const double v = L.value(std::log(row[0]), std::log(row[1]), &g, ctx);
    EXPECT_NEAR(v, row[2], 1e-10 * std::abs(row[2])) << "ell " << row[0] << " tau2 " << row[1];
    EXPECT_NEAR(g[0], row[3], 1e-8 * std::max(1.0, std::abs(row[3])));
    EXPECT_NEAR(g[1], row[4], 1e-8 * std::max(1.0, std::abs(row[4])));
  }
}

// Tiny ℓ: the Jacobian's weights are concentrated on fewer than D landmarks for some row, so log L is
// −inf (as in the anchor), not NaN and not an exception.
TEST(BklPseudolikelihood, TinyLengthscaleIsMinusInfinity) {
  const auto p = test::random_points(20, 5, 3, 2, "bkl-tiny");
  const BklPseudolikelihood L(p.X, p.Y);
  Vector g(2);
  const double v = L.value(std::log(1e-3), 0.0, &g, Context(1));
  EXPECT_TRUE(std::isinf(v) && v < 0);
}

TEST(BklPseudolikelihood, IndependentOfTheThreadCount) {
  const auto p = test::random_points(997, 40, 4, 9, "bkl-threads");
  const BklPseudolikelihood L(p.X, p.Y);
  Vector g1(2);
  const double v1 = L.value(0.1, -1.0, &g1, Context(1, 1));
  for (int threads : {2, 3, 5}) {
    Vector g(2);
    const double v = L.value(0.1, -1.0, &g, Context(1, threads));
    EXPECT_EQ(v, v1) << threads;
    EXPECT_EQ(g[0], g1[0]) << threads;
    EXPECT_EQ(g[1], g1[1]) << threads;
  }
  BklOptions o;
  o.landmarks = 30;
  const BklResult a = bkl_bandwidth(p.X, o, Context(4, 1));
  const BklResult b = bkl_bandwidth(p.X, o, Context(4, 3));
  EXPECT_EQ(a.sigma, b.sigma);
  EXPECT_EQ(a.profile.log_likelihood, b.profile.log_likelihood);
}

// The anchor's fixed-τ² (τ² = 1) maximisation on a two-scale mixture: kef's mode finder (profile, then
// L-BFGS through Ceres) finds the same interior optimum.
TEST(BklBandwidth, ModeMatchesTheAnchorsOptimumWithTauFixed) {
  ASSERT_EQ(bkl_reference::kMixtureOptAtBound, 0);
  const Matrix X = from_rows(bkl_reference::kMixtureX), Z = from_rows(bkl_reference::kMixtureZ);
  BklOptions o;
  o.landmark_points = Z;
  o.tau2 = 1.0;
  o.context = "test";
  const BklResult r = bkl_bandwidth(X, o, Context(1));
  EXPECT_EQ(r.method, "mode");
  // The anchor's scipy L-BFGS-B stops at a relative decrease of ~2e-9 of log L (factr 1e7) and prints
  // 6 digits, so its ℓ is good to ~1e-4 relative here; kef's optimum must be at least as high, within
  // that decrease, and stationary.
  const double want = bkl_reference::kMixtureOptLengthscale, want_ll = bkl_reference::kMixtureOptLoglik;
  EXPECT_NEAR(r.sigma, want, 1e-3 * want);
  EXPECT_GE(r.log_likelihood, want_ll - 1e-10 * std::abs(want_ll));
  EXPECT_LE(r.log_likelihood, want_ll + 1e-8 * std::abs(want_ll));
  const BklPseudolikelihood L(X, Z);
  Vector g(2);
  L.value(std::log(r.sigma), 0.0, &g, Context(1));
  EXPECT_LT(std::abs(g[0]), 1e-3) << "d log L / d log l at the mode";
  EXPECT_EQ(r.rows, X.rows());
  EXPECT_EQ(r.landmarks, Z.rows());
  // The profile is reported, brackets the optimum, and no profile point beats it.
  ASSERT_EQ(r.profile.lengthscale.size(), static_cast<std::size_t>(o.profile_points));
  EXPECT_LT(r.profile.lengthscale.front(), r.sigma);
  EXPECT_GT(r.profile.lengthscale.back(), r.sigma);
  for (double v : r.profile.log_likelihood) EXPECT_LE(v, r.log_likelihood + 1e-9 * std::abs(v));
  EXPECT_TRUE(test::contains(r.provenance, "τ² fixed at 1"));
  EXPECT_TRUE(test::contains(r.provenance, "flat prior on log ℓ"));
}

// An optimum outside the prior's box is refused with a message naming the bound, never returned.
TEST(BklBandwidth, RefusesAnOptimumOnABound) {
  const Matrix X = from_rows(bkl_reference::kMixtureX), Z = from_rows(bkl_reference::kMixtureZ);
  BklOptions o;
  o.landmark_points = Z;
  o.context = "model[0].kernel.sigma";
  // log L increases over [0.55, 0.9] x the optimum (the anchor's profile: a lower local mode near ℓ ≈ 2.5).
  o.lower = 0.55 * bkl_reference::kMixtureOptLengthscale;
  o.upper = 0.9 * bkl_reference::kMixtureOptLengthscale;
  std::string msg = test::message_of<DataError>([&] { bkl_bandwidth(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(
      msg, "model[0].kernel.sigma: the pseudolikelihood's maximum over ℓ is on the upper bound"))
      << msg;
  EXPECT_TRUE(test::contains(msg, "no interior optimum")) << msg;
  o.lower = 2.0 * bkl_reference::kMixtureOptLengthscale;
  o.upper = 2.5 * bkl_reference::kMixtureOptLengthscale;
  msg = test::message_of<DataError>([&] { bkl_bandwidth(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "on the lower bound")) << msg;
}

// HMC over log ℓ (flat prior, τ² fixed): the posterior concentrates at the optimiser's mode. With
// n = 300 rows the posterior of log ℓ is close to normal, so its median lies within a fraction of a
// posterior standard deviation of the mode, and the draws' spread is positive. (A subset of the
// mixture with 30 landmarks keeps the ~20000 evaluations cheap under the sanitizers.)
TEST(BklBandwidth, HmcPosteriorAgreesWithTheMode) {
  const Matrix X = from_rows(bkl_reference::kMixtureX).topRows(300);
  const Matrix Z = from_rows(bkl_reference::kMixtureZ).topRows(30);
  BklOptions o;
  o.landmark_points = Z;
  o.method = BklMethod::Hmc;
  o.hmc.warmup = 100;
  o.hmc.samples = 100;
  const BklResult r = bkl_bandwidth(X, o, Context(3));
  EXPECT_EQ(r.method, "hmc");
  ASSERT_EQ(r.draws.size(), 4 * 100);
  const double mean = r.draws.mean();
  const double sd = std::sqrt((r.draws.array() - mean).square().sum() / (r.draws.size() - 1));
  EXPECT_GT(sd, 0.0);
  EXPECT_LT(std::abs(std::log(r.sigma) - std::log(r.mode)), 0.5 * sd + 1e-3) << r.hmc_summary;
  EXPECT_LT(std::abs(mean - std::log(r.mode)), 0.5 * sd + 1e-3) << r.hmc_summary;
  EXPECT_LE(r.posterior_q05, r.sigma);
  EXPECT_GE(r.posterior_q95, r.sigma);
  EXPECT_TRUE(test::contains(r.provenance, "HMC")) << r.provenance;
}

TEST(BklBandwidth, DrawnLandmarksDependOnTheSeed) {
  const Matrix X = from_rows(bkl_reference::kMixtureX);
  BklOptions o;
  o.landmarks = 60;
  const BklResult a = bkl_bandwidth(X, o, Context(1)), b = bkl_bandwidth(X, o, Context(1));
  const BklResult c = bkl_bandwidth(X, o, Context(2));
  EXPECT_EQ(a.sigma, b.sigma);
  EXPECT_NE(a.sigma, c.sigma);
  EXPECT_EQ(a.rows, X.rows() - 60);
  EXPECT_EQ(a.landmarks, 60);
}

TEST(BklBandwidth, RefusesBadInputNamingTheOption) {
  const auto p = test::random_points(50, 5, 3, 1, "bkl-bad");
  BklOptions o;
  o.context = "ctx";
  o.landmarks = 50;
  std::string msg = test::message_of<DataError>([&] { bkl_bandwidth(p.X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: 50 rows for landmarks = 50")) << msg;
  o.landmarks = 2;
  msg = test::message_of<ConfigError>([&] { bkl_bandwidth(p.X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: landmarks must be at least D = 3, got 2")) << msg;
  o.landmarks = 10;
  o.tau2 = 0.0;
  msg = test::message_of<ConfigError>([&] { bkl_bandwidth(p.X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: tau2 must be a positive number")) << msg;
  o.tau2 = 1.0;
  o.lower = 2.0;
  o.upper = 1.0;
  msg = test::message_of<ConfigError>([&] { bkl_bandwidth(p.X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: lower and upper")) << msg;
  o.lower = o.upper = 0.0;
  o.landmark_points = Matrix::Zero(4, 2);
  msg = test::message_of<ConfigError>([&] { bkl_bandwidth(p.X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: landmark_points have 2 columns, the data 3")) << msg;
  Matrix bad = p.X;
  bad(3, 1) = std::nan("");
  o.landmark_points.resize(0, 0);
  msg = test::message_of<DataError>([&] { bkl_bandwidth(bad, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: data: non-finite value nan at row 3, column 1")) << msg;
}

}  // namespace
}  // namespace kef
