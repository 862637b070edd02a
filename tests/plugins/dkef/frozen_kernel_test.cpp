// DKEF stage 2's frozen-kernel fast path (kef::FrozenKernelMetaProblem) against its brute-force twin
// closed_form_validation_gradient, against central differences of its own loss, and for thread-count
// and memory-budget independence.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "closed_form_gradient.hpp"
#include "kef/error.hpp"
#include "gradient_check.hpp"
#include "test_support.hpp"

namespace kef::frozen_kernel_test {
namespace {

using Problem = test::MetaProblem;

// 60 training and 55 validation rows: three row blocks each, so the block-order reductions and the
// per-block q0 passes are exercised. q0 is the learnable generalised normal (9 parameters in D = 3).
Problem make_problem(const std::string& kernel_toml, std::uint64_t seed, double beta = 1.7) {
  return test::make_meta_problem(
      kernel_toml, "type = \"generalized_normal\"\nmean = 0.1\nstd = 1.5\nbeta = " + std::to_string(beta), 3, 60, 55,
      7, seed, "frozen-kernel");
}

const std::string kGaussian = "type = \"gaussian\"\nsigma = 0.9";
const std::string kDeep = "type = \"deep\"\ncomponents = 2\nlayers = 2\nwidth = 3\nsigma_init = [0.8, 1.6]";

// An upper bound on κ(A), A = G + λ_α I + λ_C U: λ_max ≤ trace(A), λ_min ≥ λ_α.
double condition_bound(const Problem& p) {
  KernelStacks st;
  p.kernel->derivatives(p.train, p.Z, 2, st);
  const double n = static_cast<double>(p.train.rows());
  const double trace =
      st.d1.squaredNorm() / n + p.la * static_cast<double>(p.Z.rows()) + p.lc * st.d2.squaredNorm() / n;
  return trace / p.la;
}

void expect_twin(const std::string& kernel_toml, bool base_learns, double beta = 1.7) {
  Problem p = make_problem(kernel_toml, 21, beta);
  const ClosedFormGradient ref = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation,
                                                                 p.Z, p.la, p.lc, Context(1, 2));
  const FrozenKernelMetaProblem fast(*p.kernel, *p.base, p.train, p.validation, p.Z, base_learns,
                                     Context(1, 2));
  EXPECT_EQ(fast.keeps_stacks(), base_learns);
  const FrozenKernelGradient g = fast.gradient(p.la, p.lc);
  // Both evaluate the same closed form, in different summation orders (per-block sums vs statistics
  // summed once; ½|B1v α + q1v|² expanded into a quadratic form). Each sum of ≤ 180 terms is off by at
  // most ~180 ε relative to its absolute size, and the solve amplifies relative errors by at most
  // κ(A); magnitudes here are O(1–10), so 1e3·ε·κ·max(1, |value|) bounds the difference.
  const double kappa = condition_bound(p);
  ASSERT_LT(kappa, 1e6);  // keeps the tolerance meaningful (well under 1e-6)
  const double eps = std::numeric_limits<double>::epsilon();
  auto tol = [&](double scale) { return 1e3 * eps * kappa * std::max(1.0, std::abs(scale)); };
  EXPECT_NEAR(g.loss, ref.loss, tol(ref.loss));
  EXPECT_NEAR(fast.loss(p.la, p.lc), ref.loss, tol(ref.loss));
  EXPECT_LT((g.alpha - ref.alpha).cwiseAbs().maxCoeff(), tol(ref.alpha.cwiseAbs().maxCoeff()));
  EXPECT_NEAR(g.log_lambda_alpha, ref.log_lambda_alpha, tol(ref.log_lambda_alpha));
  EXPECT_NEAR(g.log_lambda_c, ref.log_lambda_c, tol(ref.log_lambda_c));
  EXPECT_NEAR(g.jitter, ref.jitter, 0.0);
  ASSERT_EQ(g.base.size(), 9);
  if (base_learns)
    EXPECT_LT((g.base - ref.base).cwiseAbs().maxCoeff(), tol(ref.base.cwiseAbs().maxCoeff()));
  else
    EXPECT_EQ(g.base, Vector::Zero(9));
  EXPECT_NEAR(
      closed_form_validation_loss(*p.kernel, *p.base, p.train, p.validation, p.Z, 0.3, 0.004, Context(1, 1)),
      fast.loss(0.3, 0.004), tol(ref.loss));
}

TEST(FrozenKernel, GaussianKernelEqualsTheFullMetaGradient) {
  expect_twin(kGaussian, false);
  expect_twin(kGaussian, true);
  expect_twin(kGaussian, true, 2.0);  // the paper configs' initial β
}

TEST(FrozenKernel, DeepKernelEqualsTheFullMetaGradient) {
  expect_twin(kDeep, false);
  expect_twin(kDeep, true);
}

TEST(FrozenKernel, LambdaAndBaseGradientsMatchCentralDifferencesOfItsOwnLoss) {
  for (const std::string& k : {kGaussian, kDeep}) {
    Problem p = make_problem(k, 22);
    const FrozenKernelMetaProblem fast(*p.kernel, *p.base, p.train, p.validation, p.Z, true, Context(1, 1));
    const FrozenKernelGradient g = fast.gradient(p.la, p.lc);
    // h = 1e-5 central differences of a smooth O(1) loss: truncation ~1e-10, rounding ~1e-16/1e-5;
    // relative 1e-6 leaves room for the solve's conditioning.
    auto tol = [](const Vector& fd) { return 1e-6 * std::max(1.0, fd.cwiseAbs().maxCoeff()); };
    Vector ll(2);
    ll << std::log(p.la), std::log(p.lc);
    const Vector fd_l = test::numerical_gradient(
        [&](const Vector& l) { return fast.loss(std::exp(l[0]), std::exp(l[1])); }, ll);
    EXPECT_NEAR(g.log_lambda_alpha, fd_l[0], tol(fd_l)) << k;
    EXPECT_NEAR(g.log_lambda_c, fd_l[1], tol(fd_l)) << k;
    // q0's second derivative has |x − μ|^{β−2} (β = 1.7): a row near μ makes the loss's third
    // derivative in μ large, and h = 1e-5 leaves a truncation error of ~3e-5 here (it falls as h²;
    // the brute-force twin above agrees with the analytic value to rounding). h = 1e-7 keeps truncation
    // ~3e-9 and rounding ~ε·|J|/h ~ 1e-8, both well under the 1e-6 tolerance.
    const Vector q0 = p.base->parameters();
    const Vector fd_q = test::numerical_gradient(
        [&](const Vector& t) {
          p.base->set_parameters(t);
          return fast.loss(p.la, p.lc);
        },
        q0, 1e-7);
    p.base->set_parameters(q0);
    EXPECT_TRUE(test::gradients_agree(g.base, fd_q, 1e-6)) << k;
  }
}

TEST(FrozenKernel, BitwiseIdenticalForOneTwoThreeThreadsAndWithoutKeptStacks) {
  for (bool learns : {false, true}) {
    Problem p = make_problem(kDeep, 23);
    const FrozenKernelGradient ref =
        FrozenKernelMetaProblem(*p.kernel, *p.base, p.train, p.validation, p.Z, learns, Context(1, 1))
            .gradient(p.la, p.lc);
    for (int threads : {1, 2, 3}) {
      // Budget 0 forces the recompute-per-evaluation path when q0 learns.
      for (std::size_t budget : {FrozenKernelMetaProblem::kDefaultStackBudgetBytes, std::size_t{0}}) {
        const FrozenKernelMetaProblem fast(*p.kernel, *p.base, p.train, p.validation, p.Z, learns,
                                           Context(1, threads), budget);
        EXPECT_EQ(fast.keeps_stacks(), learns && budget > 0);
        const FrozenKernelGradient g = fast.gradient(p.la, p.lc);
        EXPECT_EQ(g.loss, ref.loss) << threads << " " << budget;
        EXPECT_EQ(g.alpha, ref.alpha) << threads << " " << budget;
        EXPECT_EQ(g.log_lambda_alpha, ref.log_lambda_alpha) << threads << " " << budget;
        EXPECT_EQ(g.log_lambda_c, ref.log_lambda_c) << threads << " " << budget;
        EXPECT_EQ(g.base, ref.base) << threads << " " << budget;
        EXPECT_EQ(fast.loss(p.la, p.lc), ref.loss) << threads << " " << budget;
      }
    }
  }
}

TEST(FrozenKernel, FrozenParametersMustNotChange) {
  Problem p = make_problem(kGaussian, 24);
  const FrozenKernelMetaProblem fast(*p.kernel, *p.base, p.train, p.validation, p.Z, false, Context(1, 1));
  Vector q0 = p.base->parameters();
  q0[0] += 0.1;
  p.base->set_parameters(q0);
  EXPECT_THROW(fast.loss(p.la, p.lc), std::logic_error);
  Problem k = make_problem(kGaussian, 25);
  const FrozenKernelMetaProblem frozen(*k.kernel, *k.base, k.train, k.validation, k.Z, true, Context(1, 1));
  Vector theta = k.kernel->parameters();
  theta[0] += 0.1;
  k.kernel->set_parameters(theta);
  EXPECT_THROW(frozen.loss(k.la, k.lc), std::logic_error);
  EXPECT_THROW(
      FrozenKernelMetaProblem(*p.kernel, *p.base, Matrix(0, 3), p.validation, p.Z, false, Context(1, 1))
          .loss(p.la, p.lc),
      DataError);
}

}  // namespace
}  // namespace kef::frozen_kernel_test
