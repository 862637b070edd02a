// kef::minimize_lbfgs (Ceres behind the wrapper): minima, bounds, and the checks that keep Ceres's
// aborting CHECKs unreachable.
#include "lbfgs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

double rosenbrock(const Vector& x, Vector* g) {
  const double a = 1.0 - x[0], b = x[1] - x[0] * x[0];
  if (g) {
    (*g)[0] = -2.0 * a - 400.0 * x[0] * b;
    (*g)[1] = 200.0 * b;
  }
  return a * a + 100.0 * b * b;
}

TEST(Lbfgs, FindsTheRosenbrockMinimum) {
  LbfgsOptions o;
  o.max_iterations = 500;
  const LbfgsResult r = minimize_lbfgs(rosenbrock, Eigen::Vector2d(-1.2, 1.0), o);
  EXPECT_TRUE(r.converged) << r.message;
  EXPECT_NEAR(r.x[0], 1.0, 1e-6);
  EXPECT_NEAR(r.x[1], 1.0, 1e-6);
  EXPECT_LT(r.value, 1e-12);
  EXPECT_GT(r.evaluations, r.iterations);
}

// (x − 3)² on [−1, 2]: the minimum is on the upper bound, and the result says so without leaving the box.
TEST(Lbfgs, ReportsAMinimumOnABound) {
  LbfgsOptions o;
  o.lower = Vector::Constant(1, -1.0);
  o.upper = Vector::Constant(1, 2.0);
  o.bound_tolerance = 1e-3;
  const LbfgsResult r = minimize_lbfgs(
      [](const Vector& x, Vector* g) {
        if (g) (*g)[0] = 2.0 * (x[0] - 3.0);
        return (x[0] - 3.0) * (x[0] - 3.0);
      },
      Vector::Constant(1, 0.0), o);
  EXPECT_LE(r.x[0], 2.0);
  EXPECT_GT(r.x[0], 2.0 - 3e-3);
  EXPECT_TRUE(r.at_upper[0]);
  EXPECT_FALSE(r.at_lower[0]);
}

TEST(Lbfgs, InteriorMinimumIsNotOnABound) {
  LbfgsOptions o;
  o.lower = Vector::Constant(1, -1.0);
  o.upper = Vector::Constant(1, 5.0);
  const LbfgsResult r = minimize_lbfgs(
      [](const Vector& x, Vector* g) {
        if (g) (*g)[0] = 2.0 * (x[0] - 3.0);
        return (x[0] - 3.0) * (x[0] - 3.0);
      },
      Vector::Constant(1, 0.0), o);
  EXPECT_NEAR(r.x[0], 3.0, 1e-6);
  EXPECT_FALSE(r.at_upper[0]);
  EXPECT_FALSE(r.at_lower[0]);
}

TEST(Lbfgs, RefusesBadInputBeforeCeres) {
  LbfgsOptions o;
  o.context = "test objective";
  const Vector nan_start = Vector::Constant(2, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(
      test::contains(test::message_of<NumericalError>([&] { minimize_lbfgs(rosenbrock, nan_start, o); }),
                     "test objective: L-BFGS start is not finite"));
  EXPECT_TRUE(test::contains(test::message_of<NumericalError>([&] {
                               minimize_lbfgs([](const Vector&, Vector*) { return std::nan(""); },
                                              Eigen::Vector2d(0, 0), o);
                             }),
                             "not finite at the start"));
  LbfgsOptions b = o;
  b.lower = Eigen::Vector2d(0, 0);
  b.upper = Eigen::Vector2d(1, 0);
  EXPECT_TRUE(test::contains(
      test::message_of<ConfigError>([&] { minimize_lbfgs(rosenbrock, Eigen::Vector2d(0.5, 0), b); }),
      "bounds of parameter 1 are [0, 0]"));
  b.upper = Eigen::Vector2d(1, 1);
  EXPECT_TRUE(test::contains(
      test::message_of<NumericalError>([&] { minimize_lbfgs(rosenbrock, Eigen::Vector2d(2, 0.5), b); }),
      "outside the bounds"));
  b.lower = Vector(1);
  b.lower << 0;
  EXPECT_TRUE(test::contains(
      test::message_of<ConfigError>([&] { minimize_lbfgs(rosenbrock, Eigen::Vector2d(0.5, 0.5), b); }),
      "bounds have sizes 1 and 2"));
  LbfgsOptions it = o;
  it.max_iterations = 0;
  EXPECT_TRUE(test::contains(
      test::message_of<ConfigError>([&] { minimize_lbfgs(rosenbrock, Eigen::Vector2d(0, 0), it); }),
      "max_iterations"));
  LbfgsOptions tol = o;
  tol.gradient_tolerance = -1;
  EXPECT_TRUE(test::contains(
      test::message_of<ConfigError>([&] { minimize_lbfgs(rosenbrock, Eigen::Vector2d(0, 0), tol); }),
      "gradient_tolerance"));
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { minimize_lbfgs(rosenbrock, Vector(), o); }),
                             "at least one parameter"));
}

// An error thrown by the objective mid-run reaches the caller (never unwinds through Ceres).
TEST(Lbfgs, RethrowsTheObjectivesError) {
  int calls = 0;
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               minimize_lbfgs(
                                   [&](const Vector& x, Vector* g) {
                                     if (++calls > 3) throw DataError("objective: refused");
                                     return rosenbrock(x, g);
                                   },
                                   Eigen::Vector2d(-1.2, 1.0), LbfgsOptions{});
                             }),
                             "objective: refused"));
}

}  // namespace
}  // namespace kef
