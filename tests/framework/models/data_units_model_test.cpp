// A model fitted in model coordinates z = A x + offset, seen in data units x (data_units_model.hpp):
// a standardised Gaussian against the Gaussian in data units written out; a whitened non-Gaussian
// model against the change of variables and central differences; the Laplacian a whitened model needs
// the inner Hessian for; samples, the identity and a wrong dimension; and the conditional facet, whose
// density of the targets integrates to 1 in data units.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "data_units_model.hpp"
#include "kef/conditional_model.hpp"
#include "kef/data_transform.hpp"
#include "kef/error.hpp"
#include "kef/lite_model.hpp"
#include "kef/random.hpp"
#include "model_checks.hpp"
#include "test_support.hpp"

namespace kef::data_units_model_test {

// The standardisation a pipeline applies: z_d = (x_d − mean_d) / sd_d, i.e. A = diag(1/sd) and
// offset = −mean/sd.
const Vector& data_mean() {
  static const Vector v = (Vector(2) << 1.0, -3.0).finished();
  return v;
}
const Vector& data_sd() {
  static const Vector v = (Vector(2) << 2.0, 0.8).finished();
  return v;
}
DataTransform standardisation() {
  return make_data_transform("standardize", Matrix(data_sd().cwiseInverse().asDiagonal()),
                             -data_mean().cwiseQuotient(data_sd()), {"a", "b"});
}
// A full map (whiten): det = 0.8·1.5 − 0.3·(−0.2) = 1.26.
DataTransform whitening() {
  return make_data_transform("whiten", test::from_rows({{0.8, 0.3}, {-0.2, 1.5}}),
                             (Vector(2) << 0.4, -0.6).finished(), {"a", "b"});
}

TEST(DataUnitsModel, AStandardisedGaussianIsTheGaussianInDataUnits) {
  // z ~ N(m, s² I) with z_d = (x_d − mean_d)/sd_d: x_d ~ N(mean_d + sd_d m_d, (sd_d s)²), independent.
  const ModelPtr z_model = model_checks::synthetic_truth(
      "type = \"synthetic/gaussian\"\nn = 10\nmean = [0.3, -0.2]\nstd = 0.8\nrotate = false");
  const DataTransform t = standardisation();
  EXPECT_NEAR(t.log_abs_det, -std::log(2.0 * 0.8), 1e-15);
  const ModelPtr x_model = make_data_units_model(z_model, t);
  const Vector m = (Vector(2) << 0.3, -0.2).finished();
  const Vector mu = data_mean() + data_sd().cwiseProduct(m);
  const Vector var = (0.8 * data_sd()).array().square();
  RandomStream rng(1, "data-units-gaussian");
  const Matrix X = (rng.normal_matrix(40, 2) * Matrix(data_sd().asDiagonal())).rowwise() + mu.transpose();
  const Vector logp = x_model->log_unnormalized(X);
  Matrix S, L;
  x_model->score_and_laplacian(X, S, L);
  for (Index n = 0; n < X.rows(); ++n) {
    double expected = 0;
    for (Index d = 0; d < 2; ++d) {
      const double r = X(n, d) - mu[d];
      expected += -0.5 * std::log(2 * std::numbers::pi * var[d]) - r * r / (2 * var[d]);
      EXPECT_NEAR(S(n, d), -r / var[d], 1e-12 * (1 + std::abs(r / var[d]))) << "row " << n;
      EXPECT_NEAR(L(n, d), -1.0 / var[d], 1e-12 / var[d]) << "row " << n;
    }
    EXPECT_NEAR(logp[n], expected, 1e-12 * (1 + std::abs(expected))) << "row " << n;
    const Matrix H = x_model->hessian(X.row(n).transpose());
    EXPECT_TRUE(test::gradients_agree(H, Matrix(var.cwiseInverse().asDiagonal()) * -1.0, 1e-12)) << "row " << n;
  }
  ASSERT_TRUE(x_model->log_normalizer().has_value());
  EXPECT_EQ(*x_model->log_normalizer(), 0.0);
  EXPECT_TRUE(test::contains(x_model->describe(), "seen in data units")) << x_model->describe();
}

TEST(DataUnitsModel, AWhitenedModelIsTheChangeOfVariablesAndMatchesCentralDifferences) {
  const ModelPtr z_model = model_checks::synthetic_truth("type = \"synthetic/banana\"\nn = 10\nrotate = true");
  const DataTransform t = whitening();
  EXPECT_NEAR(t.log_abs_det, std::log(1.26), 1e-14);
  const ModelPtr x_model = make_data_units_model(z_model, t);
  EXPECT_TRUE(x_model->facets().has(Facet::Laplacian));
  // Data rows whose images are typical of the banana.
  RandomStream rng(2, "data-units-banana");
  const Matrix Z = z_model->sample(6, rng);
  const Matrix X = t.to_data(Z);
  const Vector logp = x_model->log_unnormalized(X);
  for (Index n = 0; n < X.rows(); ++n) {
    // log p_x(x) = log p_z(A x + offset) + log|det A|, the image computed here.
    const Vector z = t.matrix * X.row(n).transpose() + t.offset;
    const double expected = model_checks::log_density_at(*z_model, z) + std::log(1.26);
    EXPECT_NEAR(logp[n], expected, 1e-12 * (1 + std::abs(expected))) << "row " << n;
    EXPECT_TRUE(test::gradients_agree(x_model->hessian(X.row(n).transpose()),
                                      model_checks::score_jacobian_differences(*x_model, X.row(n).transpose()), 1e-8))
        << "row " << n;
  }
  EXPECT_TRUE(model_checks::derivatives_match_differences(*x_model, X, 1e-8, 1e-5));
}

TEST(DataUnitsModel, WithoutTheInnerHessianOnlyAStandardisedModelHasALaplacian) {
  Registry& reg = test::plugin_registry();
  const auto lite = std::make_shared<LiteModel>(
      test::gaussian_kernel(1.2), reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 1.5"), {}),
      test::from_rows({{0.0, 0.0}, {1.0, -1.0}, {-0.5, 0.8}}), (Vector(3) << 0.5, -0.8, 0.3).finished());
  const Matrix X = test::from_rows({{1.2, -2.6}, {-0.4, -3.3}, {2.5, -2.9}});

  const ModelPtr standardised = make_data_units_model(lite, standardisation());
  EXPECT_TRUE(standardised->facets().has(Facet::Laplacian));
  EXPECT_TRUE(model_checks::derivatives_match_differences(*standardised, X, 1e-8, 1e-5));

  const ModelPtr whitened = make_data_units_model(lite, whitening());
  EXPECT_FALSE(whitened->facets().has(Facet::Laplacian)) << whitened->facets().text();
  EXPECT_TRUE(whitened->facets().has(Facet::Score));
  for (Index n = 0; n < X.rows(); ++n) {
    const auto f = [&](const Vector& v) { return model_checks::log_density_at(*whitened, v); };
    EXPECT_TRUE(test::gradient_matches_differences(whitened->score(X.row(n)).transpose(), f,
                                                   X.row(n).transpose(), 1e-8))
        << "row " << n;
  }
  Matrix S, L;
  const std::string msg = test::message_of<Error>([&] { whitened->score_and_laplacian(X, S, L); });
  EXPECT_TRUE(test::contains(msg, "fitted whitened, in data units: second derivatives need the model's full Hessian"))
      << msg;
}

TEST(DataUnitsModel, TheIdentityIsTheModelItselfSamplesMapBackAndDimensionsMustAgree) {
  const ModelPtr z_model = model_checks::synthetic_truth(
      "type = \"synthetic/gaussian\"\nn = 10\nmean = [0.3, -0.2]\nstd = 0.8\nrotate = false");
  EXPECT_EQ(make_data_units_model(z_model, DataTransform{}).get(), z_model.get());

  const DataTransform t = whitening();
  const ModelPtr x_model = make_data_units_model(z_model, t);
  RandomStream a(3, "data-units-sample"), b(3, "data-units-sample");
  const Matrix Z = z_model->sample(40, a);
  const Matrix X = x_model->sample(40, b);
  // x = A⁻¹(z − offset), with A⁻¹ = [[1.5, −0.3], [0.2, 0.8]] / 1.26 written out.
  const Matrix A_inv = test::from_rows({{1.5, -0.3}, {0.2, 0.8}}) / 1.26;
  const Matrix expected = (Z.rowwise() - t.offset.transpose()) * A_inv.transpose();
  EXPECT_TRUE(X.isApprox(expected, 1e-13));

  const DataTransform three = make_data_transform("standardize", Matrix::Identity(3, 3) * 2.0, Vector::Zero(3), {});
  const std::string msg = test::message_of<ModelFileError>([&] { make_data_units_model(z_model, three); });
  EXPECT_TRUE(test::contains(msg, "data transform of dimension 3 for a model of dimension 2")) << msg;
}

// p(z_y | z_x) = N(z_y; b·z_x, s²), normalised, and a standard normal for z_x: the joint density.
class LinearGaussianConditional final : public ConditionalModel {
 public:
  static constexpr double kB0 = 0.7, kB1 = -0.4, kS = 0.6;
  Index input_dim() const override { return 2; }
  Index target_dim() const override { return 1; }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override {
    const Vector r = Y.col(0) - kB0 * X.col(0) - kB1 * X.col(1);
    return (-0.5 * r.array().square() / (kS * kS)).matrix() -
           Vector::Constant(X.rows(), 0.5 * std::log(2 * std::numbers::pi * kS * kS));
  }
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override {
    score = -(Y.col(0) - kB0 * X.col(0) - kB1 * X.col(1)) / (kS * kS);
    laplacian = Matrix::Constant(X.rows(), 1, -1.0 / (kS * kS));
  }
  Matrix score(const Matrix& X, const Matrix& Y) const override {
    Matrix s, l;
    score_and_laplacian(X, Y, s, l);
    return s;
  }
  std::optional<Vector> log_normalizer(const Matrix& X) const override { return Vector::Zero(X.rows()); }
};

class LinearGaussianJoint final : public Model {
 public:
  Index dim() const override { return 3; }
  std::string type_name() const override { return "test/linear_gaussian"; }
  Vector log_unnormalized(const Matrix& Z) const override {
    return conditional_.log_unnormalized(Z.leftCols(2), Z.rightCols(1)).array() -
           0.5 * Z.leftCols(2).rowwise().squaredNorm().array();
  }
  const ConditionalModel* conditional() const override { return &conditional_; }
  std::string describe() const override { return "test linear Gaussian"; }

 private:
  LinearGaussianConditional conditional_;
};

TEST(DataUnitsModel, TheConditionalFacetInDataUnitsIsANormalisedDensityOfTheTargets) {
  const auto inner = std::make_shared<LinearGaussianJoint>();
  // Columns (a, b, y), y the target; A = diag(0.5, 3, 1/3): log|det A_y| = −log 3, log|det A| = log 0.5.
  DataTransform t = make_data_transform("standardize", Matrix(Vector((Vector(3) << 0.5, 3.0, 1.0 / 3.0).finished()).asDiagonal()),
                                        (Vector(3) << 0.2, -0.1, 0.5).finished(), {"a", "b", "y"});
  EXPECT_THROW(make_data_units_model(inner, t), Error);  // conditional, and no target columns recorded
  set_column_roles(t, make_column_roles({2}, 3));
  const ModelPtr model = make_data_units_model(inner, t);
  const ConditionalModel* c = model->conditional();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->input_dim(), 2);
  EXPECT_EQ(c->target_dim(), 1);
  const Matrix inputs = test::from_rows({{0.3, -1.0}, {-2.0, 0.4}});
  for (Index n = 0; n < inputs.rows(); ++n) {
    // z_y = y/3 + 0.5 ~ N(0.7 z_a − 0.4 z_b, 0.36): y's mean and standard deviation in data units.
    const double za = 0.5 * inputs(n, 0) + 0.2, zb = 3.0 * inputs(n, 1) - 0.1;
    const double y_mean = 3.0 * (0.7 * za - 0.4 * zb - 0.5), y_sd = 3.0 * 0.6;
    // ∫ p(y | x) dy by the midpoint rule over ±12 standard deviations (exact to rounding for a Gaussian).
    const Index cells = 4000;
    const double lo = y_mean - 12 * y_sd, width = 24 * y_sd / static_cast<double>(cells);
    Matrix Y(cells, 1);
    for (Index i = 0; i < cells; ++i) Y(i, 0) = lo + (static_cast<double>(i) + 0.5) * width;
    const Matrix X = inputs.row(n).replicate(cells, 1);
    const double mass = c->log_unnormalized(X, Y).array().exp().sum() * width;
    EXPECT_NEAR(mass, 1.0, 1e-10) << "inputs row " << n;
    EXPECT_EQ(*c->log_normalizer(inputs.row(n)), Vector::Zero(1));
    // The score and second derivative in y: those of N(y_mean, y_sd²), and central differences.
    const Matrix y = test::from_rows({{y_mean + 0.7}});
    Matrix s, l;
    c->score_and_laplacian(inputs.row(n), y, s, l);
    EXPECT_NEAR(s(0, 0), -0.7 / (y_sd * y_sd), 1e-12);
    EXPECT_NEAR(l(0, 0), -1.0 / (y_sd * y_sd), 1e-12);
    const double h = model_checks::kStep;
    const auto at = [&](double v) { return c->log_unnormalized(inputs.row(n), test::from_rows({{v}}))[0]; };
    EXPECT_NEAR(s(0, 0), (at(y(0, 0) + h) - at(y(0, 0) - h)) / (2 * h), 1e-8);
    EXPECT_EQ(c->score(inputs.row(n), y), s);
  }
}

}  // namespace kef::data_units_model_test
