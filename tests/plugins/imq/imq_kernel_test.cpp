// Every analytic derivative of kernel/imq against central differences, and its key checks.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

KernelPtr make_imq(double c, double beta) {
  return test::plugin_registry().make_kernel(
      test::config_from("type = \"imq\"\nc = " + std::to_string(c) + "\nbeta = " + std::to_string(beta)),
      BuildContext{});
}

test::PointPair random_points(Index n, Index m, Index d, std::uint64_t seed) {
  return test::random_points(n, m, d, seed, "imq-test");
}

// Central differences with h = 1e-5: truncation h^2/6 * max|k'''| (max|k''''| for the differences of
// d2) and rounding eps*max|k|/h. With c >= 1 (u = c² + r² ≥ 1) and |β| ≤ 1, each m-th derivative of u^β
// is a sum of a few terms 2^m |β(β−1)...(β−m+1)| u^(β−m) δ^k with δ^k / u^(k/2) ≤ 1, below 10³ for
// m ≤ 4: truncation ≤ 2e-8 and rounding ≤ 2e-11, so 1e-7 holds with margin. Second differences of
// values add rounding 4ε/h² ≈ 1e-5, hence 2e-5 for them.
constexpr double kTol = 1e-7;
constexpr double kTol2 = 2e-5;
constexpr double kStep = 1e-5;

TEST(ImqKernel, ValueMatchesDefinition) {
  auto k = make_imq(1.3, -0.7);
  auto p = random_points(5, 4, 3, 1);
  Matrix G = k->gram(p.X, p.Y);
  for (Index n = 0; n < 5; ++n)
    for (Index m = 0; m < 4; ++m)
      EXPECT_NEAR(G(n, m), std::pow(1.69 + (p.X.row(n) - p.Y.row(m)).squaredNorm(), -0.7), 1e-14);
  EXPECT_TRUE(k->capabilities().cross_derivatives);
  EXPECT_TRUE(k->capabilities().bounded_unit);       // c ≥ 1: k ≤ c^(2β) ≤ 1
  EXPECT_FALSE(make_imq(0.8, -0.5)->capabilities().bounded_unit);
}

TEST(ImqKernel, FirstAndSecondDerivativesMatchCentralDifferences) {
  for (auto [c, beta] : {std::pair{1.0, -0.5}, std::pair{1.2, -1.0}}) {
    auto k = make_imq(c, beta);
    auto p = random_points(6, 5, 3, 2);
    KernelStacks st;
    k->derivatives(p.X, p.Y, 2, st);
    EXPECT_TRUE(st.value.isApprox(k->gram(p.X, p.Y), 1e-14));
    const test::KernelDerivativeErrors e = test::kernel_derivative_errors(*k, p.X, p.Y, kStep);
    EXPECT_LT(e.d1, kTol) << "beta " << beta;
    EXPECT_LT(e.d2_from_gram, kTol2) << "beta " << beta;
    EXPECT_LT(e.d2_from_d1, kTol) << "beta " << beta;
    KernelStacks only_value;
    k->derivatives(p.X, p.Y, 0, only_value);
    EXPECT_EQ(only_value.d1.size(), 0);
  }
}

TEST(ImqKernel, CrossDerivativesMatchCentralDifferencesInY) {
  for (auto [c, beta] : {std::pair{1.0, -0.5}, std::pair{1.2, -1.0}}) {
    auto k = make_imq(c, beta);
    auto p = random_points(4, 3, 3, 3);
    EXPECT_LT(test::cross_derivative_error(*k, p.X, p.Y, kStep), kTol) << "c = " << c << ", beta = " << beta;
  }
}

// ∂²_x∂²_y k (four derivatives of (c² + r)^β) and ∂_x∂²_y k (d2xdy with X and Y swapped).
TEST(ImqKernel, SecondCrossDerivativesMatchCentralDifferencesInY) {
  for (auto [c, beta] : {std::pair{1.0, -0.5}, std::pair{1.2, -1.0}, std::pair{0.8, -2.5}}) {
    auto k = make_imq(c, beta);
    EXPECT_TRUE(k->capabilities().cross_second_derivatives);
    auto p = random_points(4, 3, 3, 3);
    EXPECT_LT(test::cross_second_derivative_error(*k, p.X, p.Y, kStep), kTol)
        << "c = " << c << ", beta = " << beta;
  }
}

TEST(ImqKernel, RejectsNonNegativeBetaAndBadInputs) {
  try {
    make_imq(1.0, 0.0);
    FAIL() << "beta = 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("beta"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_imq(1.0, 0.5), ConfigError);
  EXPECT_THROW(make_imq(-1.0, -0.5), ConfigError);
  auto k = make_imq(1.0, -0.5);
  EXPECT_THROW(k->gram(Matrix::Zero(2, 3), Matrix::Zero(2, 2)), DataError);
}

}  // namespace
}  // namespace kef
