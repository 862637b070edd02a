// Bayesian kernel learning for the Gaussian-mixture kernel (docs/math.md §9.6): the prior covariance
// against a numerical self-convolution of k, the split pseudolikelihood against the dense mn-dimensional
// Gaussian built from kernel/gaussian_mixture's own values and input derivatives, its gradient in
// every kernel parameter and log τ² against central differences, R = 1 (and equal length scales)
// against the Gaussian case, thread-count independence, the mode finder, and bad input.
#include "bkl_mixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "bkl_reference.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using test::from_rows;

Vector vec(std::initializer_list<double> v) {
  Vector out(static_cast<Index>(v.size()));
  Index i = 0;
  for (double x : v) out[i++] = x;
  return out;
}

// θ = (v, log σ) for weights ρ (up to scale) and length scales σ.
Vector theta_of(const Vector& weights, const Vector& sigma) {
  Vector th(2 * sigma.size());
  th << weights.array().log().matrix(), sigma.array().log().matrix();
  return th;
}

// k(x, y) of the mixture, by its definition.
double mixture_k(const Eigen::RowVectorXd& x, const Eigen::RowVectorXd& y, const Vector& rho,
                 const Vector& sigma) {
  double k = 0.0;
  for (Index r = 0; r < sigma.size(); ++r)
    k += rho[r] * std::exp(-(x - y).squaredNorm() / (2.0 * sigma[r] * sigma[r]));
  return k;
}

TEST(BklMixture, CovarianceIsTheSelfConvolutionOfTheKernelWithUnitAmplitude) {
  // r(x, y) ∝ ∫ k(x, u) k(u, y) du, by a Riemann sum on a fine grid (exact to rounding for Gaussians
  // on a wide enough grid), normalised by its value at x = y: D = 1 and D = 2.
  const Vector rho = vec({0.2, 0.5, 0.3}), sigma = vec({0.4, 1.0, 2.2});
  for (Index D : {1, 2}) {
    // Step 0.05 (D = 1) or 0.1 (D = 2) against a narrowest integrand width of 0.28: the Riemann sum of a
    // Gaussian is exact to ~exp(−2π²w²/h²), far below rounding; ±30 leaves tails below e^{−80}.
    const double h = D == 1 ? 0.05 : 0.1, lim = 30.0;
    const Index g = static_cast<Index>(2 * lim / h) + 1;
    auto conv = [&](const Eigen::RowVectorXd& x, const Eigen::RowVectorXd& y) {
      double sum = 0.0;
      Eigen::RowVectorXd u(D);
      for (Index a = 0; a < g; ++a) {
        u[0] = -lim + h * static_cast<double>(a);
        if (D == 1) {
          sum += mixture_k(x, u, rho, sigma) * mixture_k(u, y, rho, sigma);
          continue;
        }
        for (Index c = 0; c < g; ++c) {
          u[1] = -lim + h * static_cast<double>(c);
          sum += mixture_k(x, u, rho, sigma) * mixture_k(u, y, rho, sigma);
        }
      }
      return sum;
    };
    Matrix P(3, D);
    P.setZero();
    P(1, 0) = 0.7;
    P(2, 0) = -1.9;
    if (D == 2) {
      P(1, 1) = -0.4;
      P(2, 1) = 1.3;
    }
    const Matrix r = bkl_mixture_covariance(P, P, sigma, 7.0 * rho);  // weights normalised inside
    const double diag = conv(P.row(0), P.row(0));
    for (Index i = 0; i < 3; ++i) {
      EXPECT_NEAR(r(i, i), 1.0, 1e-14);
      for (Index j = 0; j < 3; ++j)
        EXPECT_NEAR(r(i, j), conv(P.row(i), P.row(j)) / diag, 1e-10) << D << " " << i << j;
    }
  }
}

// log N(vec Φ; 0, 1 1ᵀ ⊗ R_zz + τ² I) + Σ_i ½ log det(J_iᵀ J_i), with Φ and J_i from the registry's
// kernel/gaussian_mixture (its gram and its input-derivative stacks) at parameters θ, and R_zz from
// bkl_mixture_covariance (checked against the convolution above).
double dense_loglik(const Matrix& X, const Matrix& Z, const Vector& theta, double tau2) {
  const Index n = X.rows(), m = Z.rows(), D = X.cols(), R = theta.size() / 2;
  KernelPtr k =
      test::plugin_registry().make_kernel(test::config_from("type = \"gaussian_mixture\"\nsigma = [" +
                                                            std::string(R == 1   ? "1.0"
                                                                        : R == 2 ? "1.0, 2.0"
                                                                                 : "1.0, 2.0, 3.0") +
                                                            "]"),
                                          {});
  EXPECT_EQ(k->parameter_count(), 2 * R);
  k->set_parameters(theta);
  KernelStacks st;
  k->derivatives(X, Z, 1, st);  // value n x m, d1 (D·n) x m
  const Vector rho = (theta.head(R).array() - theta.head(R).maxCoeff()).exp().matrix();
  const Matrix Rzz = bkl_mixture_covariance(Z, Z, theta.tail(R).array().exp().matrix(), rho);
  Matrix C(m * n, m * n);
  for (Index i = 0; i < n; ++i)
    for (Index i2 = 0; i2 < n; ++i2) C.block(i * m, i2 * m, m, m) = Rzz;
  C.diagonal().array() += tau2;
  Vector v(m * n);
  double jac = 0.0;
  for (Index i = 0; i < n; ++i) {
    Matrix J(m, D);
    for (Index l = 0; l < m; ++l) {
      v[i * m + l] = st.value(i, l);
      for (Index d = 0; d < D; ++d) J(l, d) = st.d1(d * n + i, l);
    }
    jac += 0.5 * std::log((J.transpose() * J).determinant());
  }
  Eigen::LLT<Matrix> llt(C);
  const Matrix L = llt.matrixL();
  const double logdet = 2.0 * L.diagonal().array().log().sum();
  return -0.5 *
             (v.dot(llt.solve(v)) + logdet + static_cast<double>(m * n) * std::log(2.0 * std::numbers::pi)) +
         jac;
}

TEST(BklMixturePseudolikelihood, ClosedFormMatchesTheDenseGaussian) {
  const Context ctx(1);
  const auto p = test::random_points(7, 4, 2, 21, "bklmix-dense");
  const BklMixturePseudolikelihood L(p.X, p.Y, 3);
  for (const auto& [th, tau2] : {std::pair{theta_of(vec({0.2, 0.5, 0.3}), vec({0.4, 1.0, 2.2})), 0.05},
                                 {theta_of(vec({1.0, 1.0, 1.0}), vec({0.8, 0.9, 3.0})), 0.7},
                                 {theta_of(vec({0.01, 0.9, 0.09}), vec({2.0, 0.6, 1.2})), 2.0}}) {
    const double dense = dense_loglik(p.X, p.Y, th, tau2);
    EXPECT_NEAR(L.value(th, std::log(tau2), nullptr, ctx), dense, 1e-9 * std::abs(dense)) << th.transpose();
  }
  // Two components, more landmarks than rows, D = 3.
  const auto q = test::random_points(4, 6, 3, 22, "bklmix-dense-2");
  const BklMixturePseudolikelihood L2(q.X, q.Y, 2);
  const Vector th = theta_of(vec({0.3, 0.7}), vec({0.7, 1.6}));
  const double dense = dense_loglik(q.X, q.Y, th, 0.2);
  EXPECT_NEAR(L2.value(th, std::log(0.2), nullptr, ctx), dense, 1e-9 * std::abs(dense));
}

TEST(BklMixturePseudolikelihood, GradientInEveryParameterMatchesCentralDifferences) {
  const Context ctx(1);
  const auto p = test::random_points(60, 9, 3, 23, "bklmix-grad");
  const BklMixturePseudolikelihood L(p.X, p.Y, 3);
  for (const auto& [th, tau2] : {std::pair{theta_of(vec({0.2, 0.5, 0.3}), vec({0.5, 1.0, 2.5})), 0.02},
                                 {theta_of(vec({0.6, 0.1, 0.3}), vec({1.5, 0.7, 6.0})), 1.0},
                                 {theta_of(vec({0.05, 0.05, 0.9}), vec({3.0, 0.4, 1.1})), 5.0}}) {
    Vector at(7);
    at << th, std::log(tau2);
    Vector g(7);
    L.value(th, at[6], &g, ctx);
    const Vector fd = test::numerical_gradient(
        [&](const Vector& x) { return L.value(x.head(6), x[6], nullptr, ctx); }, at, 1e-5);
    for (Index k = 0; k < 7; ++k)
      EXPECT_NEAR(g[k], fd[k], 1e-6 * std::max(1.0, std::abs(fd[k])))
          << "coordinate " << k << " at " << at.transpose();
    // The logits' gradient sums to 0: a common shift of v does not change ρ.
    EXPECT_NEAR(g.head(3).sum(), 0.0, 1e-8 * std::max(1.0, g.head(3).cwiseAbs().maxCoeff()));
  }
}

TEST(BklMixturePseudolikelihood, OneComponentIsTheGaussianCase) {
  const Context ctx(1);
  const auto p = test::random_points(80, 10, 3, 24, "bklmix-one");
  const BklPseudolikelihood G(p.X, p.Y);
  const BklMixturePseudolikelihood M1(p.X, p.Y, 1), M2(p.X, p.Y, 2);
  for (auto [ell, tau2] : {std::pair{0.5, 0.02}, {1.0, 1.0}, {2.5, 0.1}, {6.0, 5.0}}) {
    Vector gg(2), g1(3), g2(5);
    const double want = G.value(std::log(ell), std::log(tau2), &gg, ctx);
    const double one = M1.value(vec({0.3, std::log(ell)}), std::log(tau2), &g1, ctx);
    // The Jacobian term's gradient is summed differently (Σ_l h ∂h q against the Gaussian's shortcut,
    // and a logit's as Σ_i Σ_l h² q − nD, a difference of numbers of size nD = 240): they agree to
    // rounding in the per-row solves with M_i (ill-conditioned at small ℓ), ~1e-8 relative.
    //
    // The rounding floor of those nD-sized sums at this point is measured by a quantity that is exactly
    // zero, the lone logit's gradient: the equivalences below are held to 4x that floor or 1e-8
    // relative, whichever is larger. (At ℓ = 0.5, τ² = 0.02 the floor is ~4e-5 in a -O1 build and
    // below 1e-8·nD in the Release build: the per-row solves are ill-conditioned there, and the
    // compiler's contraction of multiply-adds moves the last bits.) The floor itself must stay below
    // 1e-6·nD, i.e. ~1e-6 relative to the terms that cancel.
    const double nd = 80.0 * 3.0;
    EXPECT_NEAR(one, want, 1e-11 * std::abs(want)) << ell;
    EXPECT_NEAR(g1[0], 0.0, 1e-6 * nd) << ell;  // the lone logit does nothing
    const double floor = 4.0 * std::abs(g1[0]);
    EXPECT_NEAR(g1[1], gg[0], std::max(floor, 1e-8 * std::max(nd, std::abs(gg[0])))) << ell;  // ∂/∂log σ = ∂/∂log ℓ
    EXPECT_NEAR(g1[2], gg[1], 1e-9 * std::max(1.0, std::abs(gg[1])));
    // Two components with the same length scale are that Gaussian for any weights: the weights'
    // gradient vanishes and the length scales' gradients add up to the Gaussian's.
    const double two = M2.value(vec({0.4, -0.9, std::log(ell), std::log(ell)}), std::log(tau2), &g2, ctx);
    // 1e-10, not the one-component case's 1e-11: the two components' R is four weighted convolution
    // terms summed before the per-row solves, and clang's sanitizer build measured 3.5e-11 here at
    // ℓ = 0.5, τ² = 0.02 (GCC: below 1e-11). An empirical bound, not a derived one.
    EXPECT_NEAR(two, want, 1e-10 * std::abs(want)) << ell;
    EXPECT_NEAR(g2[0], 0.0, 1e-6 * nd) << ell;
    EXPECT_NEAR(g2[1], 0.0, 1e-6 * nd) << ell;
    EXPECT_NEAR(g2[2] + g2[3], gg[0], std::max(floor, 1e-8 * std::max(nd, std::abs(gg[0])))) << ell;
    EXPECT_NEAR(g2[2] + g2[3], g1[1], 1e-9 * std::abs(g1[1])) << ell;  // the mixture code agrees with itself
    EXPECT_NEAR(g2[4], gg[1], 1e-9 * std::max(1.0, std::abs(gg[1])));
  }
}

TEST(BklMixturePseudolikelihood, IndependentOfTheThreadCount) {
  const auto p = test::random_points(997, 40, 4, 25, "bklmix-threads");
  const BklMixturePseudolikelihood L(p.X, p.Y, 3);
  const Vector th = theta_of(vec({0.2, 0.5, 0.3}), vec({0.6, 1.2, 3.0}));
  Vector g1(7);
  const double v1 = L.value(th, -1.0, &g1, Context(1, 1));
  for (int threads : {2, 3, 5}) {
    Vector g(7);
    EXPECT_EQ(L.value(th, -1.0, &g, Context(1, threads)), v1) << threads;
    for (Index k = 0; k < 7; ++k) EXPECT_EQ(g[k], g1[k]) << threads << " coordinate " << k;
  }
  BklMixtureOptions o;
  o.landmarks = 30;
  o.sigma = {1.0, 3.0};
  const BklMixtureResult a = bkl_mixture_kernel(p.X, o, Context(4, 1));
  const BklMixtureResult b = bkl_mixture_kernel(p.X, o, Context(4, 3));
  EXPECT_EQ(a.sigma, b.sigma);
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.profile.log_likelihood, b.profile.log_likelihood);
}

TEST(BklMixturePseudolikelihood, TinyLengthscalesAreMinusInfinityAndBadInputIsRefused) {
  const auto p = test::random_points(20, 5, 3, 26, "bklmix-tiny");
  const BklMixturePseudolikelihood L(p.X, p.Y, 2);
  Vector g(5);
  const double v = L.value(vec({0.0, 0.0, std::log(1e-3), std::log(2e-3)}), 0.0, &g, Context(1));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  EXPECT_TRUE(g.array().isNaN().all());
  EXPECT_THROW(L.value(vec({0.0, 0.0, 0.0}), 0.0, nullptr, Context(1)), Error);  // 3 of 4 parameters
  EXPECT_THROW(BklMixturePseudolikelihood(p.X, p.Y, 0), ConfigError);
  EXPECT_THROW(BklMixturePseudolikelihood(p.X, p.Y.leftCols(2), 2), DataError);
}

// The anchor's two-scale data (bkl_reference.hpp): with one component the mode finder finds the
// Gaussian case's optimum (bkl_bandwidth, itself checked against the anchor).
TEST(BklMixtureKernel, OneComponentFindsTheGaussianMode) {
  const Matrix X = from_rows(bkl_reference::kMixtureX), Z = from_rows(bkl_reference::kMixtureZ);
  BklOptions g;
  g.landmark_points = Z;
  const BklResult want = bkl_bandwidth(X, g, Context(1));
  BklMixtureOptions o;
  o.landmark_points = Z;
  o.learn_sigma = true;
  o.sigma = {1.3 * want.sigma};
  const BklMixtureResult r = bkl_mixture_kernel(X, o, Context(1));
  ASSERT_EQ(r.sigma.size(), 1u);
  EXPECT_NEAR(r.sigma[0], want.sigma, 1e-4 * want.sigma);
  EXPECT_EQ(r.weights[0], 1.0);
  EXPECT_NEAR(r.log_likelihood, want.log_likelihood, 1e-9 * std::abs(want.log_likelihood));
  EXPECT_GT(r.log_likelihood, r.start_log_likelihood);
  EXPECT_EQ(r.rows, X.rows());
  EXPECT_EQ(r.landmarks, Z.rows());
  // The profile along the common scale is the Gaussian's profile in ℓ = c·σ̂: its best point is the
  // grid point nearest c = 1, and none beats the mode.
  ASSERT_EQ(r.profile.lengthscale.size(), 33u);
  for (double v : r.profile.log_likelihood) EXPECT_LE(v, r.log_likelihood + 1e-9 * std::abs(v));
  const BklPseudolikelihood L(X, Z);
  std::size_t near = 0;
  for (std::size_t k = 0; k < r.profile.lengthscale.size(); ++k)
    if (std::abs(std::log(r.profile.lengthscale[k])) < std::abs(std::log(r.profile.lengthscale[near])))
      near = k;
  for (std::size_t k : {near - 3, near, near + 3}) {
    const double want_k = L.value(std::log(r.profile.lengthscale[k] * r.sigma[0]), 0.0, nullptr, Context(1));
    ASSERT_TRUE(std::isfinite(want_k)) << k;
    EXPECT_NEAR(r.profile.log_likelihood[k], want_k, 1e-9 * std::abs(want_k)) << k;
  }
  EXPECT_TRUE(test::contains(r.provenance, "1-component Gaussian mixture")) << r.provenance;
}

// Two components on the same data: the mode is a stationary point of log L in every free parameter
// (all of them, and the weights alone with the scales fixed), above the start.
TEST(BklMixtureKernel, ModeIsAStationaryPointInEveryFreeParameter) {
  const Matrix X = from_rows(bkl_reference::kMixtureX), Z = from_rows(bkl_reference::kMixtureZ);
  const BklMixturePseudolikelihood L(X, Z, 2);
  const double opt = bkl_reference::kMixtureOptLengthscale;
  const double single = bkl_reference::kMixtureOptLoglik;
  // |∂ log L| in the free coordinates at the mode (log L ≈ −3.5e4 here).
  auto stationary = [&](const BklMixtureResult& r, bool sigma_free) {
    Vector th(4), g(5);
    th << std::log(r.weights[0]), std::log(r.weights[1]), std::log(r.sigma[0]), std::log(r.sigma[1]);
    L.value(th, 0.0, &g, Context(1));
    EXPECT_LT(std::abs(g[0]), 1e-2) << "logit (the free log(ρ_1/ρ_2) has gradient g[0] = −g[1])";
    if (sigma_free) {
      EXPECT_LT(std::abs(g[2]), 1e-2) << "log σ_1";
      EXPECT_LT(std::abs(g[3]), 1e-2) << "log σ_2";
    }
  };
  // The weights alone, the scales fixed at the Gaussian optimum and 4x it (measured: ρ = 0.981, 0.019).
  BklMixtureOptions o;
  o.landmark_points = Z;
  o.sigma = {opt, 4.0 * opt};
  o.learn_sigma = false;
  const BklMixtureResult w = bkl_mixture_kernel(X, o, Context(1));
  EXPECT_TRUE(w.dropped_sigma.empty());
  EXPECT_EQ(w.sigma, o.sigma);  // fixed scales are reported exactly as given
  EXPECT_GT(w.weights[1], 1e-3);
  EXPECT_NEAR(w.weights[0] + w.weights[1], 1.0, 1e-15);
  EXPECT_GT(w.log_likelihood, w.start_log_likelihood);
  EXPECT_GE(w.log_likelihood, single);  // it contains the Gaussian optimum (ρ_2 → 0)
  stationary(w, false);
  // All four parameters from near the two modes of the Gaussian profile (measured: σ = 64.7, 5.41,
  // ρ = 0.24, 0.76, log L = −35066.3 against the Gaussian's −35076.4).
  o.learn_sigma = true;
  o.sigma = {opt, 2.5};
  const BklMixtureResult a = bkl_mixture_kernel(X, o, Context(1));
  EXPECT_TRUE(a.dropped_sigma.empty());
  EXPECT_GT(a.log_likelihood, w.log_likelihood);
  stationary(a, true);
  // ... but it is not the maximum: along the common scale through it, log L is far higher at smaller
  // scales (measured: −33266 at c = 0.049 against −35066), the ill-posedness that makes the weights
  // alone the default (docs/math.md §9.6).
  EXPECT_GT(*std::max_element(a.profile.log_likelihood.begin(), a.profile.log_likelihood.end()),
            a.log_likelihood + 1000.0);
}

// Experiment 1's data (Flaxman et al. 2016; experiments/bkl/bkl_experiment1.py): a 3 x 3 grid of unit
// Gaussians with spacing 10 against the same grid with covariances of eigenvalue ratio ε = 4, pooled.
// With the scales 0.7, 3 and 14 fixed, the weight of 3 goes to the edge of the box: that component is
// dropped and the weights of 0.7 and 14 learned again (measured: 0.979 and 0.021). The refusal of a
// length scale on its bound is checked here too.
TEST(BklMixtureKernel, DropsAComponentTheDataDoNotUseAndRefusesAScaleOnABound) {
  RandomStream rng(100, "m");
  auto blobs = [&](double eps) {
    const double c = (eps - 1) / (eps + 1);
    const Matrix N = rng.normal_matrix(900, 2);
    Matrix out(900, 2);
    for (Index k = 0; k < 900; ++k) {
      const Index comp = k / 100;
      out(k, 0) = N(k, 0) + static_cast<double>(comp / 3) * 10.0;
      out(k, 1) = c * N(k, 0) + std::sqrt(1 - c * c) * N(k, 1) + static_cast<double>(comp % 3) * 10.0;
    }
    return out;
  };
  const Matrix P = blobs(1.0), Q = blobs(4.0);
  Matrix pooled(1800, 2);
  pooled << P, Q;
  BklMixtureOptions o;
  o.landmarks = 100;
  o.sigma = {0.7, 3.0, 14.0};
  const BklMixtureResult r = bkl_mixture_kernel(pooled, o, Context(0, 2));
  EXPECT_EQ(r.dropped_sigma, std::vector<double>{3.0});
  ASSERT_EQ(r.sigma.size(), 2u);
  EXPECT_EQ(r.sigma, (std::vector<double>{0.7, 14.0}));
  EXPECT_NEAR(r.weights[0], 0.979, 2e-3);
  EXPECT_TRUE(test::contains(r.provenance, "dropped the component(s) of starting σ = 3")) << r.provenance;
  // The same as learning the kept scales from the start (same landmarks, same equal starting weights).
  const BklMixtureResult one = [&] {
    BklMixtureOptions g = o;
    g.sigma = {0.7, 14.0};
    return bkl_mixture_kernel(pooled, g, Context(0, 2));
  }();
  EXPECT_EQ(one.weights, r.weights);
  // Learning the scales too: the widest component runs to the upper bound of its box (100 x the median
  // distance), which is refused, never returned (measured; docs/math.md §9.6).
  o.learn_sigma = true;
  o.context = "ctx";
  const std::string msg = test::message_of<DataError>([&] { bkl_mixture_kernel(pooled, o, Context(0, 2)); });
  EXPECT_TRUE(test::contains(msg, "ctx: the pseudolikelihood's maximum has σ_3 on the upper bound")) << msg;
  EXPECT_TRUE(test::contains(msg, "no interior optimum")) << msg;
}

TEST(BklMixtureKernel, RefusesAnOptimumOnABoundAndBadOptions) {
  const Matrix X = from_rows(bkl_reference::kMixtureX), Z = from_rows(bkl_reference::kMixtureZ);
  const double opt = bkl_reference::kMixtureOptLengthscale;
  BklMixtureOptions o;
  o.landmark_points = Z;
  o.context = "ctx";
  (void)opt;
  std::string msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "ctx: sigma: give the R length scales")) << msg;
  o.sigma = {1.0, 2.0};
  o.weights = {1.0};
  msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "weights has 1 values for 2 length scales")) << msg;
  o.weights = {1.0, -1.0};
  msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "weights[1]")) << msg;
  o.weights = {1.0, 1e-6};  // log(ρ_1/ρ_2) = 13.8, outside the logits' box
  msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "outside the prior's box")) << msg;
  o.weights.clear();
  o.sigma = {1.0, 1e6};
  o.learn_sigma = true;
  msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "σ_2 is 1e+06, outside the prior's box")) << msg;
  o.sigma = {1.0};
  o.learn_sigma = false;
  msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "nothing to learn")) << msg;
  o.learn_sigma = true;
  o.tau2 = 0.0;
  msg = test::message_of<ConfigError>([&] { bkl_mixture_kernel(X, o, Context(1)); });
  EXPECT_TRUE(test::contains(msg, "tau2")) << msg;
}

}  // namespace
}  // namespace kef
