// DDE's f over random Fourier features (`random_features = m`; plugins/dde/dde_core.hpp): the features'
// inner products approximate the Gaussian kernel, the input gradient and Laplacian and the f step's
// gradient (with the features' RKHS norm ‖α‖²) agree with central differences, and the estimator fits,
// saves and reloads such a model bit for bit; random features and inducing points together are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "dde_core.hpp"
#include "dde_estimator.hpp"
#include "dde_model.hpp"
#include "expansion_check.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "test_support.hpp"

namespace kef::dde {
namespace {

KernelExpansion features(Index m, Index D, double gamma, std::uint64_t seed) {
  RandomStream rng(seed, "features");
  KernelExpansion f;
  f.gamma = gamma;
  f.omega = std::sqrt(2.0 * gamma) * rng.normal_matrix(m, D);
  f.phase.resize(m);
  for (Index j = 0; j < m; ++j) f.phase(j) = 2.0 * std::numbers::pi * rng.uniform();
  f.alpha = rng.normal_matrix(m, 1).col(0);
  return f;
}

TEST(DdeRandomFeatures, InnerProductsApproximateTheGaussianKernel) {
  RandomStream rng(1, "rows");
  const Matrix X = rng.normal_matrix(10, 2), Y = rng.normal_matrix(10, 2);
  const double gamma = 0.35;
  const KernelExpansion f = features(40000, 2, gamma, 2);
  const Matrix approx = f.gram(X) * f.gram(Y).transpose();
  // Each entry is a mean of m = 40000 terms of variance at most 1/2 (as 2 cos(u) cos(v) averages):
  // standard error ≤ 0.0036; 5 of them is 0.018.
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < Y.rows(); ++j)
      EXPECT_NEAR(approx(i, j), std::exp(-gamma * (X.row(i) - Y.row(j)).squaredNorm()), 0.018)
          << i << ", " << j;
}

TEST(DdeRandomFeatures, InputGradientAndLaplacianAgainstCentralDifferences) {
  RandomStream rng(3, "rows");
  const KernelExpansion f = features(30, 3, 0.6, 4);
  const Matrix Y = rng.normal_matrix(5, 3);
  test_check::expect_derivatives_match_central_differences(f, Y);
  // Values against the definition.
  double direct = 0.0;
  for (Index j = 0; j < 30; ++j)
    direct += f.alpha[j] * std::sqrt(2.0 / 30.0) * std::cos(f.omega.row(j).dot(Y.row(0)) + f.phase[j]);
  EXPECT_NEAR(f.values(Y.row(0))[0], direct, 1e-13 * (1 + std::abs(direct)));
  EXPECT_DOUBLE_EQ(f.rkhs_norm2(), f.alpha.squaredNorm());
}

TEST(DdeRandomFeatures, FStepGradientWithTheFeatureNorm) {
  RandomStream rng(5, "rows");
  const Matrix batch = rng.normal_matrix(10, 2), xq = rng.normal_matrix(12, 2);
  Architecture arch{2, 4, 8, 2, 2};
  TrainerOptions o;
  o.eta = 0.3;
  Trainer t(features(20, 2, 0.5, 6), make_generator(arch), make_dual(arch), Vector::Constant(2, -3.0),
            Vector::Constant(2, 3.0), o, "test");
  Vector g;
  const double loss = t.f_loss(batch, xq, &g);
  const Vector alpha = t.f().alpha;
  // The loss's penalty is (η/2)‖α‖²: the definition, independently.
  EXPECT_NEAR(loss, -t.f().values(batch).mean() + t.f().values(xq).mean() + 0.5 * 0.3 * alpha.squaredNorm(),
              1e-12);
  const Vector num = test::numerical_gradient(
      [&](const Vector& a) {
        t.f().alpha = a;
        return t.f_loss(batch, xq, nullptr);
      },
      alpha);
  EXPECT_LT((g - num).norm(), 1e-8 * num.norm());
}

TEST(DdeRandomFeatures, EstimatorFitsSavesAndReloadsBitwise) {
  RandomStream rng(7, "blobs");
  Matrix train = 0.5 * rng.normal_matrix(120, 2);
  for (Index i = 0; i < 120; i += 2) train(i, 0) += 2.0;
  const Matrix probe = rng.normal_matrix(20, 2);
  const std::string keys =
      "type = \"dde\"\niterations = 20\nwidth = 16\nnoise_dim = 8\nbatch_size = 40\nlearning_rate = 1e-3\n"
      "random_features = 64\ndiagnostic_samples = 0\n";
  DdeEstimator est(test::config_from(keys));
  Context context = Context(3, 1).child("fit");
  FitReport report;
  const Matrix none(0, 2);
  const ModelPtr model = est.fit(FitInput{train, none, context, report});
  EXPECT_EQ(report.values.at("random_features"), 64.0);
  const auto& m = dynamic_cast<const DdeModel&>(*model);
  ASSERT_TRUE(m.expansion().random_features());
  EXPECT_EQ(m.expansion().omega.rows(), 64);
  EXPECT_EQ(m.expansion().points.size(), 0);
  EXPECT_TRUE(test::contains(model->describe(), "64 random Fourier features")) << model->describe();
  const auto dir = test::temp_dir("dde-features") / "m";
  save_model(*model, dir);
  const ModelPtr back = load_model(dir, test::plugin_registry());
  EXPECT_EQ(back->log_unnormalized(probe), model->log_unnormalized(probe));
  EXPECT_EQ(back->score(probe), model->score(probe));
  RandomStream r1(9, "draw"), r2(9, "draw");
  EXPECT_EQ(back->sample(30, r1), model->sample(30, r2));

  EXPECT_THROW(DdeEstimator(test::config_from(keys + "inducing_points = 10\n")), ConfigError);
  try {
    DdeEstimator bad(test::config_from(keys + "inducing_points = 10\n"));
  } catch (const ConfigError& e) {
    EXPECT_TRUE(test::contains(e.what(), "random_features")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "inducing_points")) << e.what();
  }
}

}  // namespace
}  // namespace kef::dde
