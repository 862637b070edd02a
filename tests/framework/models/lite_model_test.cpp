// LiteModel (kef/lite_model.hpp): log p~ = Σ_m α_m k(x, z_m) + log q0 against the expansion written out
// for the Gaussian kernel and base measure, over more rows than one evaluation chunk; its score and
// Hessian diagonal against central differences; the lower bound of f; bad shapes; and the saved model
// read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>

#include "kef/error.hpp"
#include "kef/lite_model.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "model_checks.hpp"
#include "test_support.hpp"

namespace kef::lite_model_test {

constexpr double kSigma = 1.3;    // kernel length scale
constexpr double kBaseStd = 1.7;  // σ0 of q0
const Vector& base_mean() {
  static const Vector m = (Vector(2) << 0.5, -0.3).finished();
  return m;
}

// q0 = N(μ, σ0² I) in two dimensions.
BaseMeasurePtr gaussian_base() {
  Registry& reg = test::plugin_registry();
  return reg.make_base_measure(test::config_from("type = \"gaussian\"\nmean = [0.5, -0.3]\nstd = 1.7"),
                               BuildContext{2, &reg});
}

struct Fixture {
  Matrix Z;
  Vector alpha;
  std::shared_ptr<LiteModel> model;
};

Fixture make_fixture(Index inducing_points, std::uint64_t seed) {
  RandomStream rng(seed, "lite-model-test");
  Fixture f;
  f.Z = 1.5 * rng.normal_matrix(inducing_points, 2);
  f.alpha = rng.normal_matrix(inducing_points, 1).col(0);
  f.model = std::make_shared<LiteModel>(test::gaussian_kernel(kSigma), gaussian_base(), f.Z, f.alpha);
  return f;
}

// The expansion and its derivatives written out: k_m = exp(−‖x − z_m‖²/(2σ²)),
// ∂_d f = Σ α_m k_m (z_md − x_d)/σ², ∂²_d f = Σ α_m k_m ((x_d − z_md)²/σ⁴ − 1/σ²), and
// log q0 = −(D/2) log(2πσ0²) − ‖x − μ‖²/(2σ0²).
struct Expansion {
  double f = 0, log_q0 = 0;
  Vector grad, lap;
};

Expansion expansion(const Fixture& fx, const Vector& x) {
  const double s2 = kSigma * kSigma, b2 = kBaseStd * kBaseStd;
  Expansion e;
  e.grad = -(x - base_mean()) / b2;
  e.lap = Vector::Constant(2, -1.0 / b2);
  e.log_q0 = -std::log(2 * std::numbers::pi * b2) - (x - base_mean()).squaredNorm() / (2 * b2);
  for (Index m = 0; m < fx.Z.rows(); ++m) {
    const Vector u = x - fx.Z.row(m).transpose();
    const double k = std::exp(-u.squaredNorm() / (2 * s2));
    e.f += fx.alpha[m] * k;
    for (Index d = 0; d < 2; ++d) {
      e.grad[d] += fx.alpha[m] * k * (-u[d] / s2);
      e.lap[d] += fx.alpha[m] * k * (u[d] * u[d] / (s2 * s2) - 1.0 / s2);
    }
  }
  return e;
}

// 2500 rows: three of the model's 1024-row evaluation chunks, the last one partial.
TEST(LiteModel, LogDensityScoreAndLaplacianEqualTheExpansionOverSeveralChunks) {
  const Fixture fx = make_fixture(7, 1);
  RandomStream rng(2, "lite-model-rows");
  const Matrix X = 2.0 * rng.normal_matrix(2500, 2);
  const Vector logp = fx.model->log_unnormalized(X), ratio = fx.model->log_ratio_to_base(X);
  Matrix S, L;
  fx.model->score_and_laplacian(X, S, L);
  ASSERT_EQ(logp.size(), 2500);
  ASSERT_EQ(S.rows(), 2500);
  ASSERT_EQ(L.rows(), 2500);
  for (Index n = 0; n < X.rows(); ++n) {
    const Expansion e = expansion(fx, X.row(n).transpose());
    ASSERT_NEAR(ratio[n], e.f, 1e-12) << "row " << n;
    ASSERT_NEAR(logp[n], e.f + e.log_q0, 1e-12 * (1 + std::abs(e.log_q0))) << "row " << n;
    for (Index d = 0; d < 2; ++d) {
      ASSERT_NEAR(S(n, d), e.grad[d], 1e-12) << "row " << n << ", coordinate " << d;
      ASSERT_NEAR(L(n, d), e.lap[d], 1e-12) << "row " << n << ", coordinate " << d;
    }
  }
  EXPECT_EQ(fx.model->dim(), 2);
  EXPECT_EQ(fx.model->base_measure()->type_name(), "gaussian");
}

TEST(LiteModel, ScoreAndLaplacianMatchCentralDifferencesOfTheLogDensity) {
  const Fixture fx = make_fixture(9, 3);
  RandomStream rng(4, "lite-model-points");
  const Matrix X = 1.5 * rng.normal_matrix(6, 2);
  // Scores and second derivatives are O(1) here: first differences of an O(1) function agree to
  // ~1e-9, second differences of values to ~1e-6 (model_checks.hpp).
  EXPECT_TRUE(model_checks::derivatives_match_differences(*fx.model, X, 1e-8, 1e-5));
}

// With 0 <= k <= 1, f >= Σ min(α_m, 0); an unbounded kernel gives no bound.
TEST(LiteModel, TheLogRatioLowerBoundIsTheSumOfNegativeCoefficientsAndHolds) {
  const Fixture fx = make_fixture(8, 5);
  double expected = 0;
  for (Index m = 0; m < fx.alpha.size(); ++m) expected += std::min(fx.alpha[m], 0.0);
  ASSERT_LT(expected, 0.0);
  ASSERT_TRUE(fx.model->log_ratio_lower_bound().has_value());
  EXPECT_DOUBLE_EQ(*fx.model->log_ratio_lower_bound(), expected);
  RandomStream rng(6, "lite-model-bound");
  const Matrix X = 1.5 * rng.normal_matrix(400, 2);
  EXPECT_GE(fx.model->log_ratio_to_base(X).minCoeff(), expected);
  EXPECT_GE(fx.model->log_ratio_to_base(fx.Z).minCoeff(), expected);

  const KernelPtr imq = test::plugin_registry().make_kernel(
      test::config_from("type = \"imq\"\nc = 0.5\nbeta = -0.5"), {});  // c < 1: k(x, x) = 1/c > 1
  const LiteModel unbounded(imq, gaussian_base(), fx.Z, fx.alpha);
  EXPECT_FALSE(unbounded.log_ratio_lower_bound().has_value());
}

TEST(LiteModel, RefusesMismatchedCoefficientsAndData) {
  const Fixture fx = make_fixture(4, 7);
  const std::string msg = test::message_of<ModelFileError>(
      [&] { LiteModel(test::gaussian_kernel(1.0), gaussian_base(), fx.Z, Vector::Zero(3)); });
  EXPECT_TRUE(test::contains(msg, "3 coefficients for 4 inducing points")) << msg;
  const std::string data = test::message_of<DataError>([&] { fx.model->score(Matrix::Zero(2, 3)); });
  EXPECT_TRUE(test::contains(data, "data has 3 columns, the model dimension 2")) << data;
  EXPECT_THROW(fx.model->log_ratio_to_base(Matrix::Zero(1, 1)), DataError);
}

TEST(LiteModel, ASavedModelReadsBackBitwiseAndABadCoefficientFileIsNamed) {
  const Fixture fx = make_fixture(5, 8);
  fx.model->set_fit_info({{"lambda", 0.25}}, {{"training_rows", 40}});
  const std::filesystem::path dir = test::temp_dir("lite-model") / "m";
  save_model(*fx.model, dir);
  const ModelPtr back = load_model(dir, test::plugin_registry());
  ASSERT_EQ(back->type_name(), "lite");
  const auto* lite = dynamic_cast<const LiteModel*>(back.get());
  ASSERT_NE(lite, nullptr);
  EXPECT_EQ(lite->alpha(), fx.alpha);
  EXPECT_EQ(lite->inducing_points(), fx.Z);
  RandomStream rng(9, "lite-model-saved");
  const Matrix X = rng.normal_matrix(20, 2);
  EXPECT_EQ(back->log_unnormalized(X), fx.model->log_unnormalized(X));
  EXPECT_EQ(back->score(X), fx.model->score(X));
  const std::string manifest = [&] {
    std::ifstream in(dir / "model.toml");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_TRUE(test::contains(manifest, "lambda = 0.25")) << manifest;
  EXPECT_TRUE(test::contains(manifest, "training_rows = 40")) << manifest;

  write_npy(dir / "alpha.npy", Vector(Vector::Zero(4)));
  const std::string msg = test::message_of<ModelFileError>([&] { load_model(dir, test::plugin_registry()); });
  EXPECT_TRUE(test::contains(msg, "alpha.npy has 4 values for 5 inducing points")) << msg;
}

}  // namespace kef::lite_model_test
