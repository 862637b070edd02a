// kernel/gaussian_mixture (DKEF's KEF-G with R Gaussian components): the value against the pair-by-pair
// definition, every input derivative, the parameter and inducing-point gradients and DKEF's meta-gradient
// through it against central differences, and a dkef fit that learns its bandwidths and weights.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "closed_form_gradient.hpp"
#include "kef/config.hpp"
#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/linalg.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "gradient_check.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

const std::string kMixture =
    "type = \"gaussian_mixture\"\nsigma = [0.6, 1.1, 2.3]\nweights = [0.2, 0.5, 0.3]";

KernelPtr make(const std::string& toml) {
  return test::plugin_registry().make_kernel(test::config_from(toml), BuildContext{});
}

// The kernel of kMixture with its parameters moved off the configured values, so no test sits at a
// symmetric point (equal weights).
KernelPtr moved_mixture() {
  KernelPtr k = make(kMixture);
  RandomStream rng(7, "mixture-params");
  k->set_parameters(k->parameters() + 0.2 * rng.normal_matrix(k->parameter_count(), 1).col(0));
  return k;
}

// k(x, y) from the parameters, one pair at a time.
double by_definition(const Vector& theta, const Vector& x, const Vector& y) {
  const Index R = theta.size() / 2;
  const Vector w = theta.head(R).array().exp();
  double k = 0.0;
  for (Index r = 0; r < R; ++r) {
    const double s = std::exp(theta[R + r]);
    k += w[r] / w.sum() * std::exp(-(x - y).squaredNorm() / (2 * s * s));
  }
  return k;
}

TEST(GaussianMixtureKernel, ValueMatchesTheDefinitionPairByPair) {
  KernelPtr k = moved_mixture();
  const auto p = test::random_points(7, 5, 3, 1, "mixture");
  const Matrix G = k->gram(p.X, p.Y);
  for (Index n = 0; n < 7; ++n)
    for (Index m = 0; m < 5; ++m)
      EXPECT_NEAR(G(n, m), by_definition(k->parameters(), p.X.row(n).transpose(), p.Y.row(m).transpose()),
                  1e-15);
  EXPECT_EQ(k->parameter_count(), 6);
  EXPECT_EQ(k->parameter_names()[0], "logit_0");
  EXPECT_EQ(k->parameter_names()[5], "log_sigma_2");
  // The configured weights are normalised: logits log(0.2), log(0.5), log(0.3).
  const Vector theta = make(kMixture)->parameters();
  EXPECT_NEAR(theta[1] - theta[0], std::log(2.5), 1e-15);
  EXPECT_NEAR(std::exp(theta[4]), 1.1, 1e-15);
}

TEST(GaussianMixtureKernel, OneComponentIsTheGaussianKernel) {
  const auto p = test::random_points(6, 4, 2, 2, "mixture");
  KernelPtr one = make("type = \"gaussian_mixture\"\nsigma = [0.8]");
  KernelPtr gauss = make("type = \"gaussian\"\nsigma = 0.8");
  KernelStacks a, b;
  one->derivatives(p.X, p.Y, 2, a);
  gauss->derivatives(p.X, p.Y, 2, b);
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.d1, b.d1);
  EXPECT_EQ(a.d2, b.d2);
}

TEST(GaussianMixtureKernel, InputDerivativesMatchCentralDifferences) {
  KernelPtr k = moved_mixture();
  const auto p = test::random_points(6, 5, 3, 3, "mixture");
  const Index N = 6, D = 3;
  const double h = 1e-5;
  KernelStacks st;
  k->derivatives(p.X, p.Y, 2, st);
  EXPECT_LT((st.value - k->gram(p.X, p.Y)).cwiseAbs().maxCoeff(), 1e-15);
  for (Index d = 0; d < D; ++d) {
    Matrix Xp = p.X, Xm = p.X;
    Xp.col(d).array() += h;
    Xm.col(d).array() -= h;
    const Matrix Gp = k->gram(Xp, p.Y), Gm = k->gram(Xm, p.Y), G0 = k->gram(p.X, p.Y);
    EXPECT_LT((st.d1.middleRows(d * N, N) - (Gp - Gm) / (2 * h)).cwiseAbs().maxCoeff(), 1e-8) << d;
    EXPECT_LT((st.d2.middleRows(d * N, N) - (Gp - 2 * G0 + Gm) / (h * h)).cwiseAbs().maxCoeff(), 2e-5) << d;
    // The second derivative also as the central difference of the analytic first derivative.
    KernelStacks sp, sm;
    k->derivatives(Xp, p.Y, 1, sp);
    k->derivatives(Xm, p.Y, 1, sm);
    EXPECT_LT(
        (st.d2.middleRows(d * N, N) - (sp.d1 - sm.d1).middleRows(d * N, N) / (2 * h)).cwiseAbs().maxCoeff(),
        1e-8)
        << d;
  }
  EXPECT_LT(test::cross_derivative_error(*k, p.X, p.Y, 1e-5), 1e-7);
  EXPECT_TRUE(k->capabilities().cross_second_derivatives);
  EXPECT_LT(test::cross_second_derivative_error(*k, p.X, p.Y, 1e-5), 1e-7);
}

TEST(GaussianMixtureKernel, RadialProfileMatchesTheGramAndItsDerivatives) {
  KernelPtr k = moved_mixture();
  const RadialProfile* profile = k->radial_profile();
  ASSERT_NE(profile, nullptr);
  const auto p = test::random_points(5, 4, 2, 4, "mixture");
  const Matrix r = squared_distances(p.X, p.Y);
  Matrix phi, dphi, d2phi;
  profile->evaluate(r, &phi, &dphi, &d2phi);
  EXPECT_LT((phi - k->gram(p.X, p.Y)).cwiseAbs().maxCoeff(), 1e-15);
  const double h = 1e-5;
  Matrix fp, fm, dp, dm;
  profile->evaluate(r.array() + h, &fp, &dp, nullptr);
  profile->evaluate(r.array() - h, &fm, &dm, nullptr);
  EXPECT_LT((dphi - (fp - fm) / (2 * h)).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_LT((d2phi - (dp - dm) / (2 * h)).cwiseAbs().maxCoeff(), 1e-9);
}

TEST(GaussianMixtureKernel, BackwardMatchesCentralDifferencesForEveryParameterAndY) {
  KernelPtr k = moved_mixture();
  const auto p = test::random_points(6, 4, 2, 5, "mixture");
  RandomStream rng(9, "adjoints");
  const Index N = 6, M = 4, D = 2;
  // Every combination of present and absent adjoints (an empty adjoint counts as zero).
  for (int mask = 1; mask < 8; ++mask) {
    KernelStacks adj;
    if (mask & 1) adj.value = rng.normal_matrix(N, M);
    if (mask & 2) adj.d1 = rng.normal_matrix(N * D, M);
    if (mask & 4) adj.d2 = rng.normal_matrix(N * D, M);
    Vector g;
    Matrix gY;
    k->backward(p.X, p.Y, adj, &g, &gY);
    KernelPtr probe = moved_mixture();
    const Vector fd = test::numerical_gradient(
        [&](const Vector& t) {
          probe->set_parameters(t);
          return test::stack_adjoint_loss(*probe, p.X, p.Y, adj);
        },
        k->parameters());
    ASSERT_EQ(g.size(), 6);
    EXPECT_TRUE(test::gradients_agree(g, fd, 1e-7))
        << "mask " << mask;
    const Matrix fdY = test::stack_adjoint_loss_gradient_y(*k, p.X, p.Y, adj);
    EXPECT_TRUE(test::gradients_agree(gY, fdY, 1e-7))
        << "mask " << mask;
  }
  // Gradients accumulate into what the caller passes.
  KernelStacks adj;
  adj.value = rng.normal_matrix(N, M);
  Vector g1, g2 = Vector::Ones(6);
  k->backward(p.X, p.Y, adj, &g1, nullptr);
  k->backward(p.X, p.Y, adj, &g2, nullptr);
  EXPECT_LT((g2 - g1 - Vector::Ones(6)).cwiseAbs().maxCoeff(), 1e-14);
}

TEST(GaussianMixtureKernel, DkefMetaGradientMatchesCentralDifferences) {
  test::MetaProblem p =
      test::make_meta_problem(kMixture, "type = \"gaussian\"\nstd = 1.5", 2, 12, 9, 5, 5, "mixture-meta");
  const ClosedFormGradient g = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation, p.Z,
                                                               p.la, p.lc, Context(1, 1));
  KernelPtr probe =
      test::make_meta_problem(kMixture, "type = \"gaussian\"\nstd = 1.5", 2, 12, 9, 5, 5, "mixture-meta")
          .kernel;
  const Vector fd = test::numerical_gradient(
      [&](const Vector& t) {
        probe->set_parameters(t);
        return closed_form_validation_loss(*probe, *p.base, p.train, p.validation, p.Z, p.la, p.lc,
                                           Context(1, 1));
      },
      p.kernel->parameters());
  EXPECT_TRUE(test::gradients_agree(g.kernel, fd, 1e-6));
}

TEST(GaussianMixtureKernel, BadKeysAreConfigErrors) {
  EXPECT_THROW(make("type = \"gaussian_mixture\"\nsigma = [1, 2]\nweights = [1]"), ConfigError);
  EXPECT_THROW(make("type = \"gaussian_mixture\"\nsigma = [1, -2]"), ConfigError);
  EXPECT_THROW(make("type = \"gaussian_mixture\"\nsigma = [1, 2]\nweights = [1, 0]"), ConfigError);
  EXPECT_EQ(make("type = \"gaussian_mixture\"")->parameter_count(), 6)
      << "DKEF's three components by default";
}

// KEF-G with R = 3 trained by DKEF's meta-learning on banana: the bandwidths and weights move, and
// the saved model reloads.
TEST(GaussianMixtureKernel, DkefLearnsTheBandwidthsAndWeights) {
  namespace fs = std::filesystem;
  const fs::path dir = test::temp_dir("mixture-dkef");
  std::ofstream(dir / "p.toml") << test::PipelineText()
      .seed(2)
      .banana(1500, 300, 200)
      .model("name = \"kefg3\"\n[model.estimator]\ntype = \"dkef\"\ninducing_points = 50\nmax_steps = 150\nstage2_steps = 20\n[model.kernel]\ntype = \"gaussian_mixture\"\n[model.base_measure]\ntype = \"gaussian\"\nstd = 4.0")
      .evaluate("fisher_divergence")
      .str();
  std::string out;
  const int status = test::run_command(test::kef_executable() + " run " + (dir / "p.toml").string() +
                                           " --quiet --output " + (dir / "out").string(),
                                       &out);
  ASSERT_EQ(status, 0) << out;
  std::ifstream in(dir / "out" / "results.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["models"]["kefg3"]["metrics"]["fisher_divergence"].is_number());
  const fs::path params = dir / "out" / "models" / "kefg3" / "kernel_parameters.npy";
  ASSERT_TRUE(fs::exists(params));
  const Matrix learned = read_npy(params);
  ASSERT_EQ(learned.size(), 6);
  const Vector initial = make("type = \"gaussian_mixture\"")->parameters();
  const Vector theta = Eigen::Map<const Vector>(learned.data(), 6);
  // Meta-learning moved the weights off equal and every bandwidth off DKEF's initial values.
  EXPECT_GT((theta.head(3).array() - theta.head(3).mean()).abs().maxCoeff(), 1e-3) << theta.transpose();
  for (Index r = 0; r < 3; ++r) EXPECT_GT(std::abs(theta[3 + r] - initial[3 + r]), 1e-3) << theta.transpose();
  std::string score_out;
  std::ofstream(dir / "pts.csv") << "x0,x1\n0.1,0.2\n1,-1\n";
  EXPECT_EQ(
      test::run_command(test::kef_executable() + " score " + (dir / "out" / "models" / "kefg3").string() +
                            " --data " + (dir / "pts.csv").string() + " --out " + (dir / "s.npy").string(),
                        &score_out),
      0)
      << score_out;
}

}  // namespace
}  // namespace kef
