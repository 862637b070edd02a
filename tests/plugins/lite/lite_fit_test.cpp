// The lite estimator end to end: Gaussian data gives a Gaussian score, models save and reload, and
// the chosen inducing points depend only on the seed.
#include <gtest/gtest.h>

#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/score_matching.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

struct Fitted {
  ModelPtr model;
  FitReport report;
};

Fitted fit_lite(const Matrix& train, const std::string& keys, std::uint64_t seed, int threads = 2) {
  Registry& reg = test::plugin_registry();
  auto kernel = reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 3.0"), {});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 3.0"), {});
  auto est = reg.make_estimator(test::config_from("type = \"lite\"\n" + keys), EstimatorParts{kernel, base, &reg}, {});
  Context context = Context(seed, threads).child("fit");
  Fitted f;
  Matrix empty(0, train.cols());
  FitInput in{train, empty, context, f.report};
  f.model = est->fit(in);
  return f;
}

TEST(LiteFit, GaussianDataWithAWideKernelGivesAGaussianScore) {
  RandomStream rng(1, "gaussian-data");
  Matrix train = rng.normal_matrix(4000, 2);
  Matrix test = rng.normal_matrix(2000, 2);
  Fitted f = fit_lite(train, "inducing_points = 100\nlambda_alpha = 1e-4", 7);
  // Compare with the true score −x on the test points: the Fisher divergence of the base measure
  // alone (std 3 instead of 1) is ½ E‖x − x/9‖² = ½·2·(8/9)² ≈ 0.79; the fit must remove almost all.
  Matrix s = f.model->score(test);
  double fisher = 0.5 * (s + test).rowwise().squaredNorm().mean();
  EXPECT_LT(fisher, 0.02);
  // Held-out score matching close to the truth's J = E Σ_d (−1 + ½x_d²) = −1 for D = 2.
  double J = score_matching_loss(*f.model, test, Context(1, 2));
  EXPECT_NEAR(J, -1.0, 0.05);
}

TEST(LiteFit, SavedModelReloadsWithIdenticalOutputs) {
  RandomStream rng(2, "data");
  Matrix train = rng.normal_matrix(500, 3);
  Fitted f = fit_lite(train, "inducing_points = 40\nlambda_alpha = 1e-3\nlambda_c = 1e-3", 3);
  auto dir = test::temp_dir("lite-save") / "model";
  save_model(*f.model, dir);
  ModelPtr back = load_model(dir, test::plugin_registry());
  Matrix X = rng.normal_matrix(50, 3);
  EXPECT_EQ((back->log_unnormalized(X) - f.model->log_unnormalized(X)).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((back->score(X) - f.model->score(X)).cwiseAbs().maxCoeff(), 0.0);
  Matrix alpha = read_npy(dir / "alpha.npy");
  EXPECT_EQ(alpha.rows(), 40);
  EXPECT_EQ(read_npy(dir / "inducing_points.npy").cols(), 3);
}

TEST(LiteFit, ResultsDependOnTheSeedButNotOnThreads) {
  RandomStream rng(3, "data");
  Matrix train = rng.normal_matrix(800, 2);
  Matrix X = rng.normal_matrix(20, 2);
  auto a = fit_lite(train, "inducing_points = 30", 5, 1).model->log_unnormalized(X);
  auto b = fit_lite(train, "inducing_points = 30", 5, 2).model->log_unnormalized(X);
  auto c = fit_lite(train, "inducing_points = 30", 6, 2).model->log_unnormalized(X);
  EXPECT_EQ((a - b).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_GT((a - c).cwiseAbs().maxCoeff(), 0.0);
}

TEST(LiteFit, TooManyInducingPointsIsAConfigErrorNamingTheKey) {
  Matrix train = Matrix::Random(20, 2);
  try {
    fit_lite(train, "inducing_points = 50", 1);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("inducing_points"), std::string::npos) << msg;
    EXPECT_NE(msg.find("only 20 training rows"), std::string::npos) << msg;
  }
}

TEST(LiteFit, NeedsExactlyOneWayToChooseInducingPoints) {
  Registry& reg = test::plugin_registry();
  auto kernel = reg.make_kernel(test::config_from("type = \"gaussian\""), {});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\""), {});
  EXPECT_THROW(reg.make_estimator(test::config_from("type = \"lite\""), EstimatorParts{kernel, base, &reg}, {}),
               ConfigError);
  EXPECT_THROW(reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = 3\ninducing_points_file = \"z.npy\""),
                                  EstimatorParts{kernel, base, &reg}, {}),
               ConfigError);
}

}  // namespace
}  // namespace kef
