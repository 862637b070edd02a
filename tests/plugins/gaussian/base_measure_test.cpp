// The Gaussian base measure: derivatives against central differences, normalisation, sampling.
#include <gtest/gtest.h>

#include <numbers>

#include "kef/base_measure.hpp"
#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

BaseMeasurePtr make_base(const std::string& keys) {
  return test::plugin_registry().make_base_measure(test::config_from("type = \"gaussian\"\n" + keys),
                                                   BuildContext{});
}

TEST(GaussianBaseMeasure, DerivativesMatchCentralDifferences) {
  auto q = make_base("mean = [0.5, -1.0, 2.0]\nstd = 1.7");
  RandomStream rng(1, "base");
  Matrix X = rng.normal_matrix(7, 3);
  Matrix d1, d2;
  q->derivatives(X, d1, d2);
  const double h = 1e-5;
  for (Index d = 0; d < 3; ++d) {
    Matrix Xp = X, Xm = X;
    Xp.col(d).array() += h;
    Xm.col(d).array() -= h;
    Vector fd1 = (q->log_density(Xp) - q->log_density(Xm)) / (2 * h);
    EXPECT_LT((d1.col(d) - fd1).cwiseAbs().maxCoeff(), 1e-8);
    Matrix a1, a2, b1, b2;
    q->derivatives(Xp, a1, a2);
    q->derivatives(Xm, b1, b2);
    EXPECT_LT((d2.col(d) - (a1.col(d) - b1.col(d)) / (2 * h)).cwiseAbs().maxCoeff(), 1e-8);
  }
}

TEST(GaussianBaseMeasure, IsNormalisedIn1D) {
  auto q = make_base("mean = 0.3\nstd = 0.6");
  // Trapezoid rule on [−8, 8] with step 1e-3: error far below 1e-9 for this smooth density.
  const Index n = 16001;
  Matrix X(n, 1);
  for (Index i = 0; i < n; ++i) X(i, 0) = -8.0 + 16.0 * static_cast<double>(i) / (n - 1);
  Vector p = q->log_density(X).array().exp();
  double integral = (p.sum() - 0.5 * (p[0] + p[n - 1])) * 16.0 / (n - 1);
  EXPECT_NEAR(integral, 1.0, 1e-9);
}

TEST(GaussianBaseMeasure, SamplesHaveTheRightMoments) {
  auto q = make_base("mean = [1.0, -2.0]\nstd = 0.5");
  RandomStream rng(3, "sample");
  Matrix S = q->sample(40000, 2, rng);
  // Standard errors: 0.5/200 = 0.0025 for the mean; 5 of them.
  EXPECT_NEAR(S.col(0).mean(), 1.0, 0.0125);
  EXPECT_NEAR(S.col(1).mean(), -2.0, 0.0125);
  double var = (S.col(0).array() - S.col(0).mean()).square().mean();
  EXPECT_NEAR(var, 0.25, 0.25 * 5 * std::sqrt(2.0 / 40000));
}

TEST(GaussianBaseMeasure, MeanOfWrongLengthIsAConfigErrorNamingTheKey) {
  auto q = make_base("mean = [1.0, 2.0, 3.0]");
  try {
    q->check_dimension(2);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mean"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test:2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kef
