// The generalised normal base measure: digamma, keys and their errors, the parameter layout and
// set_parameters fixing D, and agreement with the Gaussian base measure at β = 2.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "gn_test_util.hpp"
#include "kef/error.hpp"

namespace kef::generalized_normal {
namespace {

using test_util::make;

constexpr double kEulerGamma = 0.57721566490153286061;

TEST(Digamma, KnownValues) {
  const double ln2 = std::numbers::ln2, pi = std::numbers::pi;
  EXPECT_NEAR(digamma(1.0), -kEulerGamma, 1e-15);
  EXPECT_NEAR(digamma(0.5), -kEulerGamma - 2.0 * ln2, 1e-15);
  EXPECT_NEAR(digamma(2.0), 1.0 - kEulerGamma, 1e-15);
  EXPECT_NEAR(digamma(1.0 / 3.0), -kEulerGamma - pi / (2.0 * std::sqrt(3.0)) - 1.5 * std::log(3.0), 1e-14);
  EXPECT_NEAR(digamma(0.25), -kEulerGamma - pi / 2.0 - 3.0 * ln2, 1e-14);
  // ψ(n) = −γ + H_{n−1}
  double harmonic = 0.0;
  for (int n = 1; n <= 30; ++n) {
    EXPECT_NEAR(digamma(n), -kEulerGamma + harmonic, 1e-14 * std::max(1.0, harmonic)) << n;
    harmonic += 1.0 / n;
  }
  // Small arguments: ψ(x) = −1/x − γ + (π²/6) x + O(x²).
  EXPECT_NEAR(digamma(1e-8), -1e8 - kEulerGamma + pi * pi / 6.0 * 1e-8, 1e-6);
}

TEST(Digamma, MatchesCentralDifferencesOfLgamma) {
  for (double x : {0.05, 0.125, 0.3, 0.77, 0.999, 1.5, 4.2, 9.99, 10.0, 12.5, 50.0, 1e3}) {
    const double h = 1e-5 * x;
    const double fd = (std::lgamma(x + h) - std::lgamma(x - h)) / (2 * h);
    EXPECT_NEAR(digamma(x), fd, 1e-7 * std::max(1.0, std::abs(fd))) << x;
  }
}

TEST(Digamma, RejectsArgumentsOutsideItsDomain) {
  EXPECT_THROW(digamma(0.0), NumericalError);
  EXPECT_THROW(digamma(-1.5), NumericalError);
  EXPECT_THROW(digamma(std::nan("")), NumericalError);
}

// Through the registry and the loaded plugin: validation of keys happens there.
BaseMeasurePtr make_registered(const std::string& keys, Index dim = -1) {
  BuildContext ctx;
  ctx.dim = dim;
  return kef::test::plugin_registry().make_base_measure(
      kef::test::config_from("type = \"generalized_normal\"\n" + keys), ctx);
}

void expect_config_error(const std::function<void()>& f, const std::string& key) {
  try {
    f();
    FAIL() << "expected a ConfigError naming " << key;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(GeneralizedNormalConfig, BadKeysAreConfigErrorsNamingTheKey) {
  expect_config_error([] { make_registered("beta = 1.0"); }, "beta");
  expect_config_error([] { make_registered("beta = [2.0, 0.5]"); }, "beta");
  expect_config_error([] { make_registered("std = -1.0"); }, "std");
  expect_config_error([] { make_registered("std = [1.0, 0.0]"); }, "std");
  expect_config_error([] { make_registered("betaa = 2.0"); }, "betaa");
  expect_config_error([] { make_registered("learn = 1"); }, "learn");
  expect_config_error([] { make_registered("mean = \"zero\""); }, "mean");
  // Lists of different lengths: the second one is named.
  expect_config_error([] { make_registered("mean = [1.0, 2.0, 3.0]\nstd = [1.0, 2.0]"); }, "std");
  // A list that does not match the data's dimension, at build time and at check_dimension.
  expect_config_error([] { make_registered("beta = [1.5, 2.5, 3.0]", 2); }, "beta");
  auto q = make_registered("mean = [1.0, 2.0, 3.0]");
  expect_config_error([&] { q->check_dimension(2); }, "mean");
  expect_config_error([&] { q->check_dimension(2); }, "test:2");  // file:line of the key
}

TEST(GeneralizedNormalConfig, DefaultsAndLearnFlag) {
  auto q = make("");
  EXPECT_TRUE(q->learnable());
  EXPECT_EQ(q->dim(), -1);
  EXPECT_EQ(q->parameter_count(), 0);
  EXPECT_FALSE(make("learn = false")->learnable());
  // The registered component is the same class with the same keys.
  auto r = make_registered("mean = 0.5", 3);
  EXPECT_EQ(r->parameter_count(), 9);
  EXPECT_EQ(r->type_name(), "generalized_normal");
  EXPECT_EQ(r->parameters().head(3), Vector::Constant(3, 0.5));
}

TEST(GeneralizedNormalConfig, ParameterLayoutIsMeanLogStdLogBetaMinusOne) {
  auto q = make("mean = [0.5, -1.0]\nstd = [2.0, 0.25]\nbeta = [1.5, 4.0]");
  ASSERT_EQ(q->dim(), 2);  // the lists fix D at construction
  Vector expected(6);
  expected << 0.5, -1.0, std::log(2.0), std::log(0.25), std::log(0.5), std::log(3.0);
  EXPECT_LT((q->parameters() - expected).cwiseAbs().maxCoeff(), 1e-15);
  const std::vector<std::string> names = {"mean_0",    "mean_1",    "log_std_0", "log_std_1",
                                          "log_beta_minus_one_0", "log_beta_minus_one_1"};
  EXPECT_EQ(q->parameter_names(), names);
}

TEST(GeneralizedNormalConfig, CheckDimensionFixesDAndBroadcastsScalars) {
  auto q = make("mean = 0.5\nstd = 2.0\nbeta = 3.0");
  RandomStream rng(1, "x");
  Matrix X = rng.normal_matrix(5, 4);
  const Vector before = q->log_density(X);  // evaluation alone does not fix D
  EXPECT_EQ(q->dim(), -1);
  q->check_dimension(4);
  EXPECT_EQ(q->dim(), 4);
  ASSERT_EQ(q->parameter_count(), 12);
  EXPECT_EQ(q->parameters().segment(0, 4), Vector::Constant(4, 0.5));
  EXPECT_EQ(q->parameters().segment(4, 4), Vector::Constant(4, std::log(2.0)));
  EXPECT_EQ(q->parameters().segment(8, 4), Vector::Constant(4, std::log(2.0)));
  EXPECT_LT((q->log_density(X) - before).cwiseAbs().maxCoeff(), 1e-12);
  // Now fixed: another dimension is an error.
  EXPECT_THROW(q->check_dimension(3), ConfigError);
  EXPECT_THROW(q->log_density(rng.normal_matrix(2, 3)), ConfigError);
}

TEST(GeneralizedNormalConfig, SetParametersFixesDLikeAReloadedModel) {
  // A fitted measure with learned, per-coordinate parameters ...
  auto fitted = make("mean = 0.0", 3);
  Vector theta(9);
  theta << 0.3, -0.7, 1.1, std::log(0.8), std::log(1.6), 0.0, std::log(0.4), 0.0, std::log(2.5);
  fitted->set_parameters(theta);
  // ... rebuilt, as ModelReader does, from its saved table with the dimension unknown.
  auto reloaded = make("mean = 0.0");
  ASSERT_EQ(reloaded->parameter_count(), 0);
  reloaded->set_parameters(fitted->parameters());
  EXPECT_EQ(reloaded->dim(), 3);
  EXPECT_EQ(reloaded->parameter_count(), 9);
  EXPECT_EQ(reloaded->parameters(), theta);
  RandomStream rng(2, "x");
  Matrix X = rng.normal_matrix(20, 3);
  Matrix a1, a2, b1, b2;
  fitted->derivatives(X, a1, a2);
  reloaded->derivatives(X, b1, b2);
  EXPECT_EQ(fitted->log_density(X), reloaded->log_density(X));
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NO_THROW(reloaded->check_dimension(3));
  EXPECT_THROW(reloaded->check_dimension(2), ConfigError);
  // Wrong lengths are errors, before and after D is known.
  EXPECT_THROW(make("")->set_parameters(Vector::Zero(5)), Error);
  EXPECT_THROW(make("")->set_parameters(Vector()), Error);
  EXPECT_THROW(reloaded->set_parameters(Vector::Zero(6)), Error);
  // Non-finite values name the parameter.
  Vector bad = theta;
  bad[4] = std::numeric_limits<double>::infinity();
  try {
    reloaded->set_parameters(bad);
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("log_std_1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(reloaded->parameters(), theta) << "a refused θ leaves the parameters unchanged";
}

TEST(GeneralizedNormalConfig, BetaTwoIsTheGaussianBaseMeasure) {
  auto gauss = kef::test::plugin_registry().make_base_measure(
      kef::test::config_from("type = \"gaussian\"\nmean = [0.5, -1.0, 2.0]\nstd = 1.7"), BuildContext{});
  auto gn = make("mean = [0.5, -1.0, 2.0]\nstd = 1.7\nbeta = 2.0");
  RandomStream rng(4, "x");
  Matrix X = 3.0 * rng.normal_matrix(50, 3);
  X(0, 0) = 0.5;  // exactly at μ: the cusp smoothing is exact at β = 2
  Matrix g1, g2, q1, q2;
  gauss->derivatives(X, g1, g2);
  gn->derivatives(X, q1, q2);
  EXPECT_LT((gauss->log_density(X) - gn->log_density(X)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((g1 - q1).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((g2 - q2).cwiseAbs().maxCoeff(), 1e-12);
}

}  // namespace
}  // namespace kef::generalized_normal
