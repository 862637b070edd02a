// Adam: convergence on a convex quadratic, the bias-corrected first step, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kef/adam.hpp"
#include "kef/error.hpp"

namespace kef {
namespace {

TEST(Adam, ConvergesToTheMinimiserOfAConvexQuadratic) {
  // f(θ) = ½ (θ − θ*)ᵀ A (θ − θ*), A SPD with condition number 100.
  Matrix B(3, 3);
  B << 1.0, 0.2, 0.0, 0.2, 3.0, 0.5, 0.0, 0.5, 10.0;
  const Matrix A = B * B.transpose() / 10.0;
  Vector target(3);
  target << 1.5, -2.0, 0.25;
  Adam adam(AdamOptions{.learning_rate = 0.02});
  Vector theta = Vector::Zero(3);
  for (int i = 0; i < 20000; ++i) theta = adam.step(theta, A * (theta - target));
  EXPECT_EQ(adam.steps(), 20000);
  // With a constant rate Adam only reaches a neighbourhood of θ* whose size is of the order of the
  // rate (its steps are about lr · m̂/√v̂, which does not vanish with the gradient), and where in it the
  // iterate ends depends on rounding (it differed between -O1 and -O3). So: near at the first rate,
  // then a second run at a rate whose whole neighbourhood is inside the tolerance.
  EXPECT_LT((theta - target).norm(), 0.1) << theta.transpose();
  Adam fine(AdamOptions{.learning_rate = 1e-5});
  for (int i = 0; i < 20000; ++i) theta = fine.step(theta, A * (theta - target));
  EXPECT_LT((theta - target).norm(), 1e-4) << theta.transpose();
}

TEST(Adam, FirstStepIsMinusLearningRateTimesSignOfTheGradient) {
  AdamOptions o;
  o.learning_rate = 0.1;
  o.epsilon = 1e-12;
  Adam adam(o);
  Vector theta(4), g(4);
  theta << 1.0, 2.0, 3.0, 4.0;
  g << 1e-3, -250.0, 7.0, 0.0;
  Vector expected(4);
  expected << 0.9, 2.1, 2.9, 4.0;  // a zero gradient leaves its parameter where it is
  EXPECT_LT((adam.step(theta, g) - expected).cwiseAbs().maxCoeff(), 1e-9);
  // Without bias correction the second step would be tiny; with it, a constant gradient keeps the
  // step at lr.
  Vector second = adam.step(expected, g);
  EXPECT_LT((second - expected - (expected - theta)).cwiseAbs().maxCoeff(), 1e-9);
  // reset() forgets the moments and the count.
  adam.reset();
  EXPECT_EQ(adam.steps(), 0);
  Vector g2(3);
  g2 << -5.0, 5.0, 1.0;
  Vector out = adam.step(Vector::Zero(3), g2);
  EXPECT_NEAR(out[0], 0.1, 1e-9);
  EXPECT_NEAR(out[1], -0.1, 1e-9);
  EXPECT_NEAR(out[2], -0.1, 1e-9);
  EXPECT_EQ(adam.steps(), 1);
}

TEST(Adam, NonFiniteGradientIsANumericalErrorNamingTheIndex) {
  Adam adam(AdamOptions{}, "model[0].estimator");
  adam.set_parameter_names({"a", "b", "log_sigma_1"});
  Vector theta = Vector::Zero(3), g = Vector::Ones(3);
  adam.step(theta, g);
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    g[2] = bad;
    try {
      adam.step(theta, g);
      FAIL() << "expected NumericalError";
    } catch (const NumericalError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("gradient[2]"), std::string::npos) << what;
      EXPECT_NE(what.find("log_sigma_1"), std::string::npos) << what;
      EXPECT_NE(what.find("model[0].estimator"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(adam.steps(), 1) << "a refused step does not count";
  EXPECT_THROW(adam.step(Vector::Zero(2), Vector::Zero(2)), Error);  // size changed
  EXPECT_THROW(adam.step(Vector::Zero(3), Vector::Zero(2)), Error);
}

TEST(Adam, OptionsAreValidated) {
  auto expect_error = [](AdamOptions o, const std::string& option) {
    try {
      Adam adam(o, "dkef");
      FAIL() << "expected ConfigError for " << option;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(option), std::string::npos) << what;
      EXPECT_NE(what.find("dkef"), std::string::npos) << what;
    }
  };
  expect_error(AdamOptions{.learning_rate = 0.0}, "learning_rate");
  expect_error(AdamOptions{.learning_rate = -1e-3}, "learning_rate");
  expect_error(AdamOptions{.learning_rate = std::nan("")}, "learning_rate");
  expect_error(AdamOptions{.beta1 = 1.0}, "beta1");
  expect_error(AdamOptions{.beta1 = -0.1}, "beta1");
  expect_error(AdamOptions{.beta2 = 1.0}, "beta2");
  expect_error(AdamOptions{.beta2 = std::nan("")}, "beta2");
  expect_error(AdamOptions{.epsilon = 0.0}, "epsilon");
  EXPECT_NO_THROW(Adam(AdamOptions{.beta1 = 0.0, .beta2 = 0.0}));
}

}  // namespace
}  // namespace kef
