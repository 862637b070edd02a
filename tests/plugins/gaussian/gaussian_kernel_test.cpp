// Every analytic derivative of the Gaussian kernel against central differences.
#include <gtest/gtest.h>

#include "kef/config.hpp"
#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

test::PointPair random_points(Index n, Index m, Index d, std::uint64_t seed) {
  return test::random_points(n, m, d, seed, "kernel-test");
}

// Central differences with h = 1e-5 have truncation error O(h²·k''') ~ 1e-10 and rounding error
// ~ 1e-16/h = 1e-11 for O(1) values; 1e-7 absolute leaves a wide margin for both.
constexpr double kTol = 1e-7;
constexpr double kStep = 1e-5;

TEST(GaussianKernel, ValueMatchesDefinition) {
  auto k = test::gaussian_kernel(0.8);
  auto p = random_points(5, 4, 3, 1);
  Matrix G = k->gram(p.X, p.Y);
  for (Index n = 0; n < 5; ++n)
    for (Index m = 0; m < 4; ++m)
      EXPECT_NEAR(G(n, m), std::exp(-(p.X.row(n) - p.Y.row(m)).squaredNorm() / (2 * 0.64)), 1e-14);
}

TEST(GaussianKernel, FirstAndSecondDerivativesMatchCentralDifferences) {
  auto k = test::gaussian_kernel(0.9);
  auto p = random_points(6, 5, 3, 2);
  KernelStacks st;
  k->derivatives(p.X, p.Y, 2, st);
  EXPECT_TRUE(st.value.isApprox(k->gram(p.X, p.Y), 1e-14));
  const test::KernelDerivativeErrors e = test::kernel_derivative_errors(*k, p.X, p.Y, kStep);
  EXPECT_LT(e.d1, kTol);
  // The second difference loses more digits (rounding ~ 1e-16/h² = 1e-6).
  EXPECT_LT(e.d2_from_gram, 2e-5);
  // The second derivative also equals the difference of the analytic first derivative.
  EXPECT_LT(e.d2_from_d1, kTol);
}

TEST(GaussianKernel, CrossDerivativesMatchCentralDifferencesInY) {
  auto k = test::gaussian_kernel(1.1);
  auto p = random_points(4, 3, 3, 3);
  EXPECT_LT(test::cross_derivative_error(*k, p.X, p.Y, kStep), kTol);
}

// ∂²_x∂²_y k and ∂_x∂²_y k (d2xdy with X and Y swapped) for the Nyström second-derivative basis, at a
// narrow and a wide length scale; and the fourth-order stack is symmetric under swapping X and Y.
TEST(GaussianKernel, SecondCrossDerivativesMatchCentralDifferencesInY) {
  for (double sigma : {0.7, 1.6}) {
    auto k = test::gaussian_kernel(sigma);
    EXPECT_TRUE(k->capabilities().cross_second_derivatives);
    auto p = random_points(4, 3, 3, 3);
    EXPECT_LT(test::cross_second_derivative_error(*k, p.X, p.Y, kStep), kTol) << "sigma " << sigma;
    Matrix xy, yx;
    k->cross_second_derivatives(p.X, p.Y, xy);
    k->cross_second_derivatives(p.Y, p.X, yx);
    EXPECT_LT((xy - yx.transpose()).cwiseAbs().maxCoeff(), 1e-13);
  }
}

// A scalar loss L = Σ Ā ⊙ stacks; backward() must give dL/dlogσ and dL/dY.
TEST(GaussianKernel, BackwardMatchesCentralDifferences) {
  auto k = test::gaussian_kernel(0.7);
  auto p = random_points(5, 4, 2, 4);
  RandomStream rng(5, "adjoints");
  KernelStacks adj;
  adj.value = rng.normal_matrix(5, 4);
  adj.d1 = rng.normal_matrix(10, 4);
  adj.d2 = rng.normal_matrix(10, 4);
  Vector gp = Vector::Zero(1);
  Matrix gy = Matrix::Zero(4, 2);
  k->backward(p.X, p.Y, adj, &gp, &gy);

  Vector theta = k->parameters();
  auto fd_param = test::numerical_gradient(
      [&](const Vector& t) {
        auto kk = test::gaussian_kernel(1.0);
        kk->set_parameters(t);
        return test::stack_adjoint_loss(*kk, p.X, p.Y, adj);
      },
      theta);
  EXPECT_NEAR(gp[0], fd_param[0], 1e-6 * std::max(1.0, std::abs(fd_param[0])));

  EXPECT_LT((gy - test::stack_adjoint_loss_gradient_y(*k, p.X, p.Y, adj)).cwiseAbs().maxCoeff(), 1e-6);

  // Only some adjoints present: the empty ones count as zero.
  KernelStacks only_d2;
  only_d2.d2 = adj.d2;
  Vector gp2 = Vector::Zero(1);
  k->backward(p.X, p.Y, only_d2, &gp2, nullptr);
  auto fd2 = test::numerical_gradient(
      [&](const Vector& t) {
        auto kk = test::gaussian_kernel(1.0);
        kk->set_parameters(t);
        KernelStacks st;
        kk->derivatives(p.X, p.Y, 2, st);
        return (adj.d2.array() * st.d2.array()).sum();
      },
      theta);
  EXPECT_NEAR(gp2[0], fd2[0], 1e-6 * std::max(1.0, std::abs(fd2[0])));
}

// The interface's default gram_times is gram(X, Y)·b, and refuses a coefficient vector of the wrong size.
TEST(GaussianKernel, DefaultGramTimesIsTheGramTimesTheVector) {
  auto k = test::gaussian_kernel(0.8);
  RandomStream rng(5, "gram-times");
  const Matrix X = rng.normal_matrix(9, 3), Y = rng.normal_matrix(7, 3);
  const Vector b = rng.normal_matrix(7, 1).col(0);
  EXPECT_EQ((k->gram_times(X, Y, b) - k->gram(X, Y) * b).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_THROW(k->gram_times(X, Y, Vector::Ones(6)), Error);
}

TEST(GaussianKernel, ParametersRoundTripAndAreValidated) {
  auto k = test::gaussian_kernel(2.0);
  EXPECT_NEAR(k->parameters()[0], std::log(2.0), 1e-15);
  EXPECT_THROW(k->set_parameters(Vector::Zero(2)), Error);
  EXPECT_THROW(test::plugin_registry().make_kernel(test::config_from("type = \"gaussian\"\nsigma = -1"), {}),
               ConfigError);
}

}  // namespace
}  // namespace kef
