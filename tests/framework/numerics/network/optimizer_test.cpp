// RMSprop and global-norm clipping against hand-computed values; the Optimizer base's checks through
// RMSprop (Adam's are in tests/framework/numerics/adam_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kef/adam.hpp"
#include "kef/error.hpp"
#include "kef/network/rmsprop.hpp"

namespace kef {
namespace {

TEST(RmsProp, TwoStepsByHand) {
  RmsProp opt(RmsPropOptions{.learning_rate = 0.1, .alpha = 0.9, .epsilon = 1e-8});
  Vector theta(2), g(2);
  theta << 1.0, -2.0;
  g << 2.0, -0.5;
  // v = 0.1 g² = (0.4, 0.025); θ − 0.1 g/(√v + ε).
  const Vector t1 = opt.step(theta, g);
  EXPECT_NEAR(t1[0], 1.0 - 0.1 * 2.0 / (std::sqrt(0.4) + 1e-8), 1e-15);
  EXPECT_NEAR(t1[1], -2.0 + 0.1 * 0.5 / (std::sqrt(0.025) + 1e-8), 1e-15);
  Vector g2(2);
  g2 << 1.0, 3.0;
  // v = 0.9 (0.4, 0.025) + 0.1 (1, 9) = (0.46, 0.9225).
  const Vector t2 = opt.step(t1, g2);
  EXPECT_NEAR(t2[0], t1[0] - 0.1 * 1.0 / (std::sqrt(0.46) + 1e-8), 1e-15);
  EXPECT_NEAR(t2[1], t1[1] - 0.1 * 3.0 / (std::sqrt(0.9225) + 1e-8), 1e-15);
  EXPECT_EQ(opt.steps(), 2);
  opt.reset();
  EXPECT_EQ(opt.steps(), 0);
  EXPECT_NEAR(opt.step(theta, g)[0], t1[0], 1e-15);  // a first step again
}

TEST(RmsProp, ChecksAreTheOptimizerBasesAndOptionsAreValidated) {
  RmsProp opt(RmsPropOptions{}, "model.dual");
  opt.set_parameter_names({"w0", "w1"});
  Vector g(2);
  g << 1.0, std::numeric_limits<double>::quiet_NaN();
  try {
    opt.step(Vector::Zero(2), g);
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gradient[1] (w1)"), std::string::npos) << what;
    EXPECT_NE(what.find("model.dual"), std::string::npos) << what;
  }
  EXPECT_EQ(opt.steps(), 0);
  opt.step(Vector::Zero(2), Vector::Ones(2));
  EXPECT_THROW(opt.step(Vector::Zero(3), Vector::Ones(3)), Error);
  EXPECT_THROW(RmsProp(RmsPropOptions{.learning_rate = 0.0}), ConfigError);
  EXPECT_THROW(RmsProp(RmsPropOptions{.alpha = 1.0}), ConfigError);
  EXPECT_THROW(RmsProp(RmsPropOptions{.epsilon = -1.0}), ConfigError);
}

TEST(ClipGlobalNorm, ScalesAllGroupsTogetherOnlyAboveTheBound) {
  Vector a(2), b(1);
  a << 3.0, 4.0;
  b << 12.0;  // joint norm 13
  Vector* both[] = {&a, &b};
  EXPECT_DOUBLE_EQ(clip_global_norm(both, 6.5), 13.0);
  const double f = 6.5 / (13.0 + 1e-6);
  EXPECT_DOUBLE_EQ(a[0], 3.0 * f);
  EXPECT_DOUBLE_EQ(a[1], 4.0 * f);
  EXPECT_DOUBLE_EQ(b[0], 12.0 * f);
  EXPECT_NEAR(std::sqrt(a.squaredNorm() + b.squaredNorm()), 6.5, 1e-6);
  Vector c(2);
  c << 0.3, 0.4;
  EXPECT_DOUBLE_EQ(clip_global_norm(c, 5.0), 0.5);
  EXPECT_EQ(c[0], 0.3);  // below the bound: untouched
  EXPECT_EQ(c[1], 0.4);
  EXPECT_THROW(clip_global_norm(c, 0.0), Error);
  c[0] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(clip_global_norm(c, 1.0), NumericalError);
}

TEST(Adam, IsAnOptimizer) {
  Adam adam(AdamOptions{.learning_rate = 0.5});
  Optimizer& opt = adam;
  Vector theta(1), g(1);
  theta << 1.0;
  g << -3.0;
  EXPECT_NEAR(opt.step(theta, g)[0], 1.5, 1e-7);  // first step: lr · sign
  EXPECT_EQ(opt.steps(), 1);
}

// The update against its formula written out here, bit for bit, and against Kingma & Ba's form to
// rounding, over several steps and sizes (odd sizes leave scalar remainders to the vector loops);
// step_in_place gives the same bits as step; a refused in-place step leaves θ and the state untouched.
TEST(Adam, UpdateIsItsFormulaBitForBitInPlaceOrNot) {
  const AdamOptions o{.learning_rate = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8};
  for (Index n : {1, 255, 256, 257, 1000}) {
    Adam copy(o), in_place(o);
    Vector theta = Vector::LinSpaced(n, -1.0, 2.0), theta2 = theta, ref = theta, textbook = theta;
    Vector m = Vector::Zero(n), v = Vector::Zero(n);
    for (int t = 1; t <= 4; ++t) {
      Vector g(n);
      for (Index i = 0; i < n; ++i)
        g[i] = std::sin(0.37 * static_cast<double>(i * t) + 0.1) * (t % 2 ? 1.0 : 1e-3);
      m = o.beta1 * m + (1.0 - o.beta1) * g;
      v = o.beta2 * v + (1.0 - o.beta2) * g.cwiseAbs2();
      // (m/c1)/(√(v/c2) + ε) with the corrections as scalar factors, in this order of operations.
      const double step = o.learning_rate / (1.0 - std::pow(o.beta1, t));
      const double inv_sqrt_c2 = 1.0 / std::sqrt(1.0 - std::pow(o.beta2, t));
      ref.array() -= step * m.array() / (v.array().sqrt() * inv_sqrt_c2 + o.epsilon);
      // Kingma & Ba's m̂ / (√v̂ + ε): the same number up to rounding.
      const auto m_hat = m.array() / (1.0 - std::pow(o.beta1, t));
      const auto v_hat = v.array() / (1.0 - std::pow(o.beta2, t));
      textbook.array() -= o.learning_rate * m_hat / (v_hat.sqrt() + o.epsilon);
      theta = copy.step(theta, g);
      in_place.step_in_place(theta2, g);
      for (Index i = 0; i < n; ++i) {
        ASSERT_EQ(theta[i], ref[i]) << "n " << n << " step " << t << " i " << i;
        ASSERT_EQ(theta2[i], ref[i]) << "n " << n << " step " << t << " i " << i;
        ASSERT_NEAR(theta[i], textbook[i], 1e-15 * (1.0 + std::abs(textbook[i]))) << "n " << n << " i " << i;
      }
    }
    Vector bad = theta2, g = Vector::Ones(n);
    g[n - 1] = std::numeric_limits<double>::infinity();
    EXPECT_THROW(in_place.step_in_place(bad, g), NumericalError);
    EXPECT_EQ(in_place.steps(), 4);
    for (Index i = 0; i < n; ++i) ASSERT_EQ(bad[i], theta2[i]);
  }
}

TEST(RmsProp, InPlaceIsTheSameStep) {
  RmsProp a(RmsPropOptions{.learning_rate = 0.1, .alpha = 0.9, .epsilon = 1e-8}), b = a;
  Vector theta(3), g(3);
  theta << 1.0, -2.0, 0.5;
  g << 2.0, -0.5, 1e-3;
  Vector t2 = theta;
  for (int k = 0; k < 3; ++k) {
    theta = a.step(theta, g);
    b.step_in_place(t2, g);
    for (Index i = 0; i < 3; ++i) ASSERT_EQ(theta[i], t2[i]) << k << " " << i;
    g = -0.5 * g;
  }
}

}  // namespace
}  // namespace kef
