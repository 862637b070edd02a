// DKEF's meta-gradient through the closed-form fit, for every parameter group, against central
// differences of the validation loss itself.
#include "closed_form_gradient.hpp"

#include <gtest/gtest.h>

#include "kef/error.hpp"
#include "kef/lite_system.hpp"
#include "gradient_check.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using Problem = test::MetaProblem;

Problem make_problem(const std::string& kernel_toml, std::uint64_t seed) {
  return test::make_meta_problem(kernel_toml, "type = \"gaussian\"\nstd = 1.5", 2, 12, 9, 5, seed, "closed-form");
}

double loss(const Problem& p, const Kernel& k, const Matrix& Z, double la, double lc) {
  return closed_form_validation_loss(k, *p.base, p.train, p.validation, Z, la, lc, Context(1, 1));
}

void check_all_groups(const std::string& kernel_toml) {
  Problem p = make_problem(kernel_toml, 5);
  ClosedFormGradient g = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la,
                                                         p.lc, Context(1, 1));
  EXPECT_NEAR(g.loss, loss(p, *p.kernel, p.Z, p.la, p.lc), 1e-12);
  // Central differences with h = 1e-5 on a smooth O(1) function: error ~ 1e-9; relative 1e-6 leaves
  // room for the condition number of the solve.
  auto tol = [](const Vector& fd) { return 1e-6 * std::max(1.0, fd.cwiseAbs().maxCoeff()); };

  KernelPtr probe = make_problem(kernel_toml, 5).kernel;
  Vector fd_k = test::numerical_gradient(
      [&](const Vector& t) {
        probe->set_parameters(t);
        return loss(p, *probe, p.Z, p.la, p.lc);
      },
      p.kernel->parameters());
  EXPECT_TRUE(test::gradients_agree(g.kernel, fd_k, 1e-6)) << "kernel parameters";

  Eigen::Map<const Vector> z0(p.Z.data(), p.Z.size());
  Vector fd_z = test::numerical_gradient(
      [&](const Vector& z) { return loss(p, *p.kernel, Eigen::Map<const Matrix>(z.data(), p.Z.rows(), 2), p.la, p.lc); },
      Vector(z0));
  Eigen::Map<const Vector> gz(g.inducing.data(), g.inducing.size());
  EXPECT_TRUE(test::gradients_agree(gz, fd_z, 1e-6)) << "inducing points";

  Vector ll(2);
  ll << std::log(p.la), std::log(p.lc);
  Vector fd_l = test::numerical_gradient(
      [&](const Vector& l) { return loss(p, *p.kernel, p.Z, std::exp(l[0]), std::exp(l[1])); }, ll);
  EXPECT_NEAR(g.log_lambda_alpha, fd_l[0], tol(fd_l)) << "log lambda_alpha";
  EXPECT_NEAR(g.log_lambda_c, fd_l[1], tol(fd_l)) << "log lambda_C";
}

TEST(ClosedFormGradient, GaussianKernelEveryGroupMatchesCentralDifferences) {
  check_all_groups("type = \"gaussian\"\nsigma = 0.9");
}

TEST(ClosedFormGradient, DeepKernelEveryGroupMatchesCentralDifferences) {
  check_all_groups("type = \"deep\"\ncomponents = 2\nlayers = 2\nwidth = 3\nsigma_init = [0.7, 1.4]");
}

TEST(ClosedFormGradient, DeepLinearKernelEveryGroupMatchesCentralDifferences) {
  check_all_groups("type = \"deep\"\ncomponents = 1\nlayers = 2\nwidth = 3\non = \"linear\"");
}

TEST(ClosedFormGradient, AlphaIsTheLiteSolution) {
  // The dense fit inside the meta-gradient and the chunked lite system are two implementations of
  // the same closed form: they must agree.
  Problem p = make_problem("type = \"gaussian\"\nsigma = 0.9", 6);
  ClosedFormGradient g = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la,
                                                         p.lc, Context(1, 1));
  LiteAccumulateOptions opt;
  opt.chunk_rows = 5;
  LiteSolution ref =
      solve_lite_system(accumulate_lite_system(*p.kernel, *p.base, p.train, p.Z, opt, Context(1, 1)),
                        Matrix(), p.la, 0.0, p.lc);
  EXPECT_LT((g.alpha - ref.alpha).cwiseAbs().maxCoeff(), 1e-10 * std::max(1.0, ref.alpha.cwiseAbs().maxCoeff()));
  EXPECT_THROW(closed_form_validation_gradient(*p.kernel, *p.base, Matrix(0, 2), p.validation, p.Z, p.la,
                                               p.lc, Context(1, 1)),
               DataError);
}

}  // namespace
}  // namespace kef

namespace kef {
namespace {

// Batches of 60 and 55 rows span three row blocks each, so the block reductions are exercised; q0
// is the learnable generalised normal, so its gradient is checked too.
Problem make_blocked_problem(std::uint64_t seed) {
  Registry& reg = test::plugin_registry();
  Problem p;
  RandomStream rng(seed, "closed-form-blocked");
  p.kernel = reg.make_kernel(
      test::config_from("type = \"deep\"\ncomponents = 2\nlayers = 2\nwidth = 3\nsigma_init = [0.8, 1.6]"),
      BuildContext{3, &reg, &rng});
  Vector theta = p.kernel->parameters();
  theta += 0.1 * rng.normal_matrix(theta.size(), 1).col(0);
  p.kernel->set_parameters(theta);
  p.base = reg.make_base_measure(
      test::config_from("type = \"generalized_normal\"\nmean = 0.1\nstd = 1.5\nbeta = 1.7"), BuildContext{3, &reg});
  p.train = rng.normal_matrix(60, 3);
  p.validation = rng.normal_matrix(55, 3);
  p.Z = rng.normal_matrix(7, 3);
  return p;
}

TEST(ClosedFormGradient, BlockedBatchesMatchCentralDifferencesForEveryGroup) {
  Problem p = make_blocked_problem(11);
  ClosedFormGradient g = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la,
                                                         p.lc, Context(1, 2));
  auto L = [&](const Kernel& k, const BaseMeasure& b, const Matrix& Z, double la, double lc) {
    return closed_form_validation_loss(k, b, p.train, p.validation, Z, la, lc, Context(1, 2));
  };
  EXPECT_NEAR(g.loss, L(*p.kernel, *p.base, p.Z, p.la, p.lc), 1e-12 * std::max(1.0, std::abs(g.loss)));
  // As above: h = 1e-5 central differences of an O(1) smooth loss are accurate to ~1e-9.
  auto tol = [](const Vector& fd) { return 1e-6 * std::max(1.0, fd.cwiseAbs().maxCoeff()); };
  KernelPtr probe = make_blocked_problem(11).kernel;
  Vector fd_k = test::numerical_gradient(
      [&](const Vector& t) {
        probe->set_parameters(t);
        return L(*probe, *p.base, p.Z, p.la, p.lc);
      },
      p.kernel->parameters());
  EXPECT_TRUE(test::gradients_agree(g.kernel, fd_k, 1e-6)) << "kernel parameters";
  Eigen::Map<const Vector> z0(p.Z.data(), p.Z.size());
  Vector fd_z = test::numerical_gradient(
      [&](const Vector& z) { return L(*p.kernel, *p.base, Eigen::Map<const Matrix>(z.data(), p.Z.rows(), 3), p.la, p.lc); },
      Vector(z0));
  EXPECT_TRUE(test::gradients_agree(Eigen::Map<const Vector>(g.inducing.data(), g.inducing.size()), fd_z, 1e-6))
      << "inducing points";
  BaseMeasurePtr qprobe = make_blocked_problem(11).base;
  Vector fd_q = test::numerical_gradient(
      [&](const Vector& t) {
        qprobe->set_parameters(t);
        return L(*p.kernel, *qprobe, p.Z, p.la, p.lc);
      },
      p.base->parameters());
  ASSERT_EQ(g.base.size(), 9);
  EXPECT_TRUE(test::gradients_agree(g.base, fd_q, 1e-6)) << "base measure";
  Vector ll(2);
  ll << std::log(p.la), std::log(p.lc);
  Vector fd_l = test::numerical_gradient(
      [&](const Vector& l) { return L(*p.kernel, *p.base, p.Z, std::exp(l[0]), std::exp(l[1])); }, ll);
  EXPECT_NEAR(g.log_lambda_alpha, fd_l[0], tol(fd_l));
  EXPECT_NEAR(g.log_lambda_c, fd_l[1], tol(fd_l));
}

TEST(ClosedFormGradient, BitwiseIdenticalForOneTwoAndThreeThreads) {
  Problem p = make_blocked_problem(12);
  const ClosedFormGradient ref = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation,
                                                                 p.Z, p.la, p.lc, Context(1, 1));
  for (int threads : {2, 3}) {
    const ClosedFormGradient g = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation,
                                                                 p.Z, p.la, p.lc, Context(1, threads));
    EXPECT_EQ(g.loss, ref.loss) << threads;
    EXPECT_EQ(g.alpha, ref.alpha) << threads;
    EXPECT_EQ(g.kernel, ref.kernel) << threads;
    EXPECT_EQ(g.inducing, ref.inducing) << threads;
    EXPECT_EQ(g.base, ref.base) << threads;
    EXPECT_EQ(g.log_lambda_alpha, ref.log_lambda_alpha) << threads;
    EXPECT_EQ(g.log_lambda_c, ref.log_lambda_c) << threads;
    EXPECT_EQ(closed_form_validation_loss(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la, p.lc,
                                          Context(1, threads)),
              closed_form_validation_loss(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la, p.lc,
                                          Context(1, 1)));
  }
}

}  // namespace
}  // namespace kef
