// The estimators made, made_mog, maf, maf_mog through the loaded plugin: training learns, early
// stopping restores the best epoch, the validation curve is reported, results depend on the seed and
// not on the thread count, and bad input is refused naming its key.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

EstimatorPtr make(const std::string& keys) {
  Registry& reg = test::plugin_registry();
  return reg.make_estimator(test::config_from(keys), EstimatorParts{nullptr, nullptr, &reg}, {});
}

struct Fitted {
  ModelPtr model;
  FitReport report;
};

Fitted fit(const std::string& keys, const Matrix& train, const Matrix& valid, std::uint64_t seed = 5,
           int threads = 2) {
  auto est = make(keys);
  Context context = Context(seed, threads).child("fit");
  Fitted f;
  FitInput in{train, valid, context, f.report};
  f.model = est->fit(in);
  return f;
}

// The banana of maf_torch.py: x0 ~ N(0, 4), x1 | x0 ~ N(0.2 (x0² − 4), 1).
Matrix banana(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "banana");
  Matrix X = rng.normal_matrix(n, 2);
  X.col(0) *= 2.0;
  X.col(1) += 0.2 * (X.col(0).array().square() - 4.0).matrix();
  return X;
}
Vector banana_logpdf(const Matrix& X) {
  const Vector r = X.col(1).array() - 0.2 * (X.col(0).array().square() - 4.0);
  return (-0.5 * (X.col(0).array() / 2).square() - std::log(2.0) - 0.5 * r.array().square() -
          std::log(2 * std::numbers::pi))
      .matrix();
}

// The log-likelihood of the best Gaussian (the maximum-likelihood fit on the same training rows).
double gaussian_fit_loglik(const Matrix& train, const Matrix& test_rows) {
  const Vector mu = train.colwise().mean().transpose();
  const Matrix C = (train.rowwise() - mu.transpose()).transpose() * (train.rowwise() - mu.transpose()) /
                   static_cast<double>(train.rows());
  const Eigen::LLT<Matrix> llt(C);
  const Matrix Z = llt.matrixL().solve((test_rows.rowwise() - mu.transpose()).transpose());
  const double logdet = 2.0 * llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
  return (-0.5 * Z.colwise().squaredNorm().array() - 0.5 * logdet - std::log(2 * std::numbers::pi)).mean();
}

// Each kind learns the banana: better than the best Gaussian on held-out rows, below the truth (which
// no fit can beat by more than noise), the validation curve reported epoch by epoch.
TEST(FlowEstimator, EveryKindLearnsTheBanana) {
  const Matrix train = banana(1000, 1), valid = banana(200, 2), test_rows = banana(2000, 3);
  const double gauss = gaussian_fit_loglik(train, test_rows), truth = banana_logpdf(test_rows).mean();
  for (const char* keys :
       {"type = \"made\"\nhidden_units = [32, 32]\nmax_epochs = 40\nlearning_rate = 3e-3",
        "type = \"made_mog\"\nhidden_units = [32, 32]\ncomponents = 5\nmax_epochs = 40\nlearning_rate = 3e-3",
        "type = \"maf\"\nhidden_units = [32, 32]\nlayers = 3\nmax_epochs = 40\nlearning_rate = 3e-3",
        "type = \"maf_mog\"\nhidden_units = [32, 32]\nlayers = 2\ncomponents = 5\nmax_epochs = 40\n"
        "learning_rate = 3e-3\nbatch_norm = true",
        "type = \"real_nvp\"\nhidden_units = [32, 32]\nlayers = 4\nmax_epochs = 40\nlearning_rate = 3e-3"}) {
    SCOPED_TRACE(keys);
    const Fitted f = fit(keys, train, valid);
    const double ll = f.model->log_unnormalized(test_rows).mean();
    std::printf("test log-lik %.4f (best Gaussian %.4f, truth %.4f), best epoch %g of %ld\n", ll, gauss,
                truth, f.report.values.at("best_epoch"), f.report.iterations);
    EXPECT_GT(ll, gauss + 0.1);
    EXPECT_LT(ll, truth + 0.05);
    ASSERT_EQ(static_cast<long>(f.report.curve.size()), f.report.iterations);
    for (std::size_t i = 0; i < f.report.curve.size(); ++i)
      EXPECT_EQ(f.report.curve[i].first, static_cast<long>(i + 1));
    // The restored epoch's validation loss is the curve's minimum, and the model's own.
    double best = f.report.curve.front().second;
    for (const auto& [e, v] : f.report.curve) best = std::min(best, v);
    EXPECT_EQ(f.report.values.at("best_validation_loss"), best);
    EXPECT_NEAR(-f.model->log_unnormalized(valid).mean(), best, 1e-12 * std::abs(best));
    EXPECT_TRUE(f.model->facets().contains(
        {Facet::LogDensity, Facet::NormalizedDensity, Facet::Score, Facet::Laplacian, Facet::Sampler}));
    EXPECT_EQ(f.model->log_normalizer(), 0.0);
  }
}

// Early stopping: with patience P the run stops P epochs after its best one, and that epoch's
// parameters are the model's (its validation loss, not the last epoch's).
TEST(FlowEstimator, EarlyStoppingRestoresTheBestEpoch) {
  const Matrix train = banana(200, 4), valid = banana(40, 5);
  // A large learning rate on few rows overfits quickly, so the validation loss turns up early.
  const Fitted f =
      fit("type = \"made\"\nhidden_units = [64, 64]\nlearning_rate = 3e-2\npatience = 3\n"
          "max_epochs = 500\nbatch_size = 20",
          train, valid);
  const long best = static_cast<long>(f.report.values.at("best_epoch"));
  ASSERT_LT(f.report.iterations, 500) << "expected early stopping";
  EXPECT_EQ(f.report.iterations, best + 3);
  const double best_loss = f.report.curve[static_cast<std::size_t>(best - 1)].second;
  EXPECT_NEAR(-f.model->log_unnormalized(valid).mean(), best_loss, 1e-12 * std::abs(best_loss));
  EXPECT_GT(f.report.curve.back().second, best_loss);
}

// Results depend on the seed, not on the thread count; a saved model reloads bitwise.
TEST(FlowEstimator, SeedNotThreadsDecidesAndSavedModelsReloadBitwise) {
  const Matrix train = banana(2500, 6), valid = banana(1500, 7), probe = banana(50, 8);
  const std::string keys =
      "type = \"maf\"\nhidden_units = [16, 16]\nlayers = 2\nmax_epochs = 3\nbatch_norm = true\nlearning_rate "
      "= 1e-3";
  const Fitted a = fit(keys, train, valid, 5, 1), b = fit(keys, train, valid, 5, 2),
               c = fit(keys, train, valid, 6, 2);
  EXPECT_EQ(a.model->log_unnormalized(probe), b.model->log_unnormalized(probe));
  EXPECT_EQ(a.report.curve, b.report.curve);
  EXPECT_NE(a.model->log_unnormalized(probe), c.model->log_unnormalized(probe));
  const auto dir = test::temp_dir("flow-estimator-save") / "m";
  save_model(*a.model, dir);
  const ModelPtr back = load_model(dir, test::plugin_registry());
  EXPECT_EQ(back->log_unnormalized(probe), a.model->log_unnormalized(probe));
  EXPECT_EQ(back->score(probe), a.model->score(probe));
}

// 1-D data: handled (each MADE's conditional is unconditional, a layer is an affine map), the fit is
// a density and learns a bimodal shape with the mixture base.
TEST(FlowEstimator, OneDimensionalDataIsHandled) {
  RandomStream rng(12, "bimodal");
  auto bimodal = [&](Index n) {
    Matrix X = rng.normal_matrix(n, 1) * 0.5;
    for (Index i = 0; i < n; ++i) X(i, 0) += (rng.uniform() < 0.5 ? -2.0 : 2.0);
    return X;
  };
  const Matrix train = bimodal(1000), valid = bimodal(200), test_rows = bimodal(2000);
  const Fitted mog =
      fit("type = \"maf_mog\"\nhidden_units = [8]\nlayers = 1\ncomponents = 3\nmax_epochs = 60\n"
          "learning_rate = 1e-2",
          train, valid);
  const Fitted maf = fit("type = \"maf\"\nhidden_units = [8]\nlayers = 2\nmax_epochs = 5", train, valid);
  const Index G = 20000;
  Matrix x(G, 1);
  for (Index i = 0; i < G; ++i) x(i, 0) = -20 + (i + 0.5) * 40.0 / G;
  EXPECT_NEAR(mog.model->log_unnormalized(x).array().exp().sum() * 40.0 / G, 1.0, 1e-6);
  EXPECT_NEAR(maf.model->log_unnormalized(x).array().exp().sum() * 40.0 / G, 1.0, 1e-6);
  // A flow of affine layers is a Gaussian; the mixture base is not limited to one.
  EXPECT_GT(mog.model->log_unnormalized(test_rows).mean(),
            maf.model->log_unnormalized(test_rows).mean() + 0.3);
}

// The kinds the test above leaves out on D = 1: a MADE's hidden units see no input (degree 0), so made
// is a Gaussian and made_mog a mixture; a Real NVP coupling layer of D = 1 is either the identity
// (mask 1) or an affine map whose scale and shift nets see only zeros (mask 0), so the flow is a
// Gaussian. Each is an exact density (quadrature), and the Gaussian ones have a log density that is
// exactly quadratic in x (constant second differences).
TEST(FlowEstimator, OneDimensionalMadeMadeMogAndRealNvpAreExactDensities) {
  RandomStream rng(13, "bimodal-1d");
  auto bimodal = [&](Index n) {
    Matrix X = rng.normal_matrix(n, 1) * 0.5;
    for (Index i = 0; i < n; ++i) X(i, 0) += (rng.uniform() < 0.5 ? -2.0 : 2.0);
    return X;
  };
  const Matrix train = bimodal(600), valid = bimodal(200);
  const Index G = 20000;
  Matrix x(G, 1);
  for (Index i = 0; i < G; ++i) x(i, 0) = -20 + (i + 0.5) * 40.0 / G;
  struct Case {
    std::string keys;
    bool gaussian;
  } cases[] = {
      {"type = \"made\"\nhidden_units = [8]\nmax_epochs = 5", true},
      {"type = \"made_mog\"\nhidden_units = [8]\ncomponents = 3\nmax_epochs = 20\nlearning_rate = 1e-2",
       false},
      {"type = \"real_nvp\"\nhidden_units = [8]\nlayers = 2\nbatch_norm = false\nmax_epochs = 5", true},
  };
  for (const auto& c : cases) {
    const Fitted f = fit(c.keys, train, valid);
    const Vector lp = f.model->log_unnormalized(x);
    ASSERT_TRUE(lp.allFinite()) << c.keys;
    EXPECT_NEAR(lp.array().exp().sum() * 40.0 / G, 1.0, 1e-6) << c.keys;
    const Matrix s = f.model->score(x.topRows(5));
    EXPECT_TRUE(s.allFinite()) << c.keys;
    if (c.gaussian) {
      // log p = a + b x + c x²: every second difference on the uniform grid is 2c h².
      const Index step = 1000;
      const double h = 40.0 * step / G;
      const double second = lp[2 * step] - 2 * lp[step] + lp[0];
      for (Index i = 0; i + 2 * step < G; i += step)
        EXPECT_NEAR(lp[i + 2 * step] - 2 * lp[i + step] + lp[i], second, 1e-9 * (1 + std::abs(second)))
            << c.keys << " at " << x(i, 0) << " (h " << h << ")";
      EXPECT_LT(second, 0.0) << c.keys;
    }
  }
}

std::string config_error(const std::string& keys, const Matrix& train, const Matrix& valid) {
  return test::message_of<ConfigError>([&] { fit(keys, train, valid); });
}

TEST(FlowEstimator, BadKeysAreConfigErrorsNamingTheKey) {
  const Matrix train = banana(50, 13), valid = banana(20, 14);
  struct Bad {
    std::string keys, key;
  };
  for (const Bad& b :
       {Bad{"type = \"maf\"\nhidden_units = [0, 10]", "hidden_units"},
        Bad{"type = \"maf\"\nhidden_units = [10, 2.5]", "hidden_units"},
        Bad{"type = \"maf\"\nhidden_units = []", "hidden_units"}, Bad{"type = \"maf\"\nlayers = 0", "layers"},
        Bad{"type = \"maf_mog\"\ncomponents = 0", "components"},
        Bad{"type = \"made\"\nbatch_size = 0", "batch_size"},
        Bad{"type = \"made\"\nlearning_rate = 0", "learning_rate"},
        Bad{"type = \"made\"\nlearning_rate = -1e-3", "learning_rate"},
        Bad{"type = \"made\"\nmax_epochs = 0", "max_epochs"},
        Bad{"type = \"made\"\npatience = -2", "patience"},
        Bad{"type = \"made\"\nweight_decay = -1", "weight_decay"},
        Bad{"type = \"maf\"\nbatch_norm_epsilon = 0", "batch_norm_epsilon"},
        Bad{"type = \"made\"\nactivation = \"cosine\"", "activation"},
        Bad{"type = \"made\"\nlayers = 3", "layers"},          // MADE has one layer
        Bad{"type = \"made\"\ncomponents = 3", "components"},  // and no mixture
        Bad{"type = \"real_nvp\"\ncomponents = 3", "components"},
        Bad{"type = \"real_nvp\"\nhidden_degrees = \"random\"", "hidden_degrees"},
        Bad{"type = \"real_nvp\"\nshift_activation = \"cubic\"", "shift_activation"}}) {
    const std::string msg = config_error(b.keys, train, valid);
    EXPECT_TRUE(test::contains(msg, b.key)) << b.keys << "\n -> " << msg;
  }
  // No validation split: early stopping needs one.
  const std::string msg = config_error("type = \"maf\"", train, Matrix(0, 2));
  EXPECT_TRUE(test::contains(msg, "validation")) << msg;
}

TEST(FlowEstimator, ConstantColumnIsADataErrorNamingTheColumn) {
  Matrix train = banana(50, 15), valid = banana(20, 16);
  train.col(1).setConstant(3.0);
  const std::string msg =
      test::message_of<DataError>([&] { fit("type = \"made\"\nhidden_units = [4]", train, valid); });
  EXPECT_TRUE(test::contains(msg, "column 1")) << msg;
}

// A column of distinct values near 1e-200 is not constant, although its squared deviations underflow:
// the flow standardises it by its sd and fits, and the density is finite in the column's units.
TEST(FlowEstimator, AColumnNear1eMinus200IsNotConstant) {
  Matrix train = banana(50, 15), valid = banana(20, 16);
  train.col(1) *= 1e-200;
  valid.col(1) *= 1e-200;
  const Fitted f = fit("type = \"made\"\nhidden_units = [4]\nmax_epochs = 2", train, valid);
  const Vector lp = f.model->log_unnormalized(valid);
  EXPECT_TRUE(lp.allFinite());
  // log p of the tiny column includes −log(1e-200) ≈ +460 from the change of units.
  EXPECT_GT(lp.mean(), 300.0);
}

}  // namespace
}  // namespace kef
