// The affine change of coordinates (affine_model.hpp): the density of y = A x + c when x has a known
// density. The image of a Gaussian against the Gaussian of the mapped moments; a non-Gaussian image
// against the change of variables and central differences, through a diagonal and a full map; samples,
// support, and the Hessian a full map needs.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "affine_model.hpp"
#include "kef/error.hpp"
#include "kef/lite_model.hpp"
#include "kef/random.hpp"
#include "model_checks.hpp"
#include "test_support.hpp"

namespace kef::affine_model_test {

// A = [[2, 0.5], [-0.3, 1.2]]: det A = 2.4 + 0.15 = 2.55 and A⁻¹ = [[1.2, -0.5], [0.3, 2]] / 2.55, written
// out so that the expected values do not come from the code under test's own inverse.
Matrix full_map() { return test::from_rows({{2.0, 0.5}, {-0.3, 1.2}}); }
Matrix full_map_inverse() { return test::from_rows({{1.2, -0.5}, {0.3, 2.0}}) / 2.55; }
constexpr double kFullDet = 2.55;
Vector shift() { return (Vector(2) << 0.7, -1.1).finished(); }

const char* kGaussian = "type = \"synthetic/gaussian\"\nn = 10\nmean = [0.3, -0.2]\nstd = 0.8\nrotate = false";
const char* kBanana = "type = \"synthetic/banana\"\nn = 10\nrotate = true";

TEST(AffineModel, TheImageOfAGaussianIsTheGaussianOfTheMappedMoments) {
  const ModelPtr x_model = model_checks::synthetic_truth(kGaussian);
  const ModelPtr y_model = make_affine_model(x_model, full_map(), shift());
  // x ~ N(m, s² I) gives y ~ N(A m + c, s² A Aᵀ).
  const Vector m = (Vector(2) << 0.3, -0.2).finished();
  const double s2 = 0.64;
  const Vector mu = full_map() * m + shift();
  const Matrix P = full_map_inverse().transpose() * full_map_inverse() / s2;  // Σ⁻¹
  const double log_det_sigma = std::log(s2 * s2 * kFullDet * kFullDet);
  RandomStream rng(1, "affine-gaussian");
  const Matrix Y = (2.0 * rng.normal_matrix(30, 2)).rowwise() + mu.transpose();
  const Vector logp = y_model->log_unnormalized(Y);
  Matrix S, L;
  y_model->score_and_laplacian(Y, S, L);
  for (Index n = 0; n < Y.rows(); ++n) {
    const Vector r = Y.row(n).transpose() - mu;
    const double expected = -std::log(2 * std::numbers::pi) - 0.5 * log_det_sigma - 0.5 * r.dot(P * r);
    EXPECT_NEAR(logp[n], expected, 1e-12 * (1 + std::abs(expected))) << "row " << n;
    EXPECT_TRUE(test::gradients_agree(S.row(n).transpose(), -P * r, 1e-12)) << "row " << n;
    EXPECT_TRUE(test::gradients_agree(L.row(n).transpose(), -P.diagonal(), 1e-12)) << "row " << n;
    EXPECT_TRUE(test::gradients_agree(y_model->hessian(Y.row(n).transpose()), -P, 1e-12)) << "row " << n;
  }
  ASSERT_TRUE(y_model->log_normalizer().has_value());
  EXPECT_EQ(*y_model->log_normalizer(), 0.0);
  EXPECT_TRUE(test::contains(y_model->describe(), ", whitened")) << y_model->describe();
}

// The banana (rotated: every coordinate coupled) through a full and a diagonal map.
TEST(AffineModel, ANonGaussianImageIsTheChangeOfVariablesAndMatchesCentralDifferences) {
  const ModelPtr x_model = model_checks::synthetic_truth(kBanana);
  ASSERT_TRUE(x_model->has_hessian());
  struct Case {
    Matrix A, A_inv;
    double det;
  };
  const Matrix diag = test::from_rows({{2.0, 0.0}, {0.0, 0.4}});
  const Matrix diag_inv = test::from_rows({{0.5, 0.0}, {0.0, 2.5}});
  for (const Case& c : {Case{full_map(), full_map_inverse(), kFullDet}, Case{diag, diag_inv, 0.8}}) {
    const ModelPtr y_model = make_affine_model(x_model, c.A, shift());
    RandomStream rng(2, "affine-banana");
    const Matrix X = x_model->sample(6, rng);
    const Matrix Y = (X * c.A.transpose()).rowwise() + shift().transpose();
    const Vector logp = y_model->log_unnormalized(Y);
    for (Index n = 0; n < Y.rows(); ++n) {
      // log p_y(y) = log p_x(A⁻¹(y − c)) − log|det A|, at the preimage computed with the written-out inverse.
      const Vector x = c.A_inv * (Y.row(n).transpose() - shift());
      const double expected = model_checks::log_density_at(*x_model, x) - std::log(c.det);
      EXPECT_NEAR(logp[n], expected, 1e-12 * (1 + std::abs(expected))) << "row " << n << ", det " << c.det;
      EXPECT_TRUE(test::gradients_agree(y_model->hessian(Y.row(n).transpose()),
                                        model_checks::score_jacobian_differences(*y_model, Y.row(n).transpose()),
                                        1e-8))
          << "row " << n << ", det " << c.det;
    }
    EXPECT_TRUE(model_checks::derivatives_match_differences(*y_model, Y, 1e-8, 1e-5)) << "det " << c.det;
  }
}

TEST(AffineModel, SamplesAreTheInnerSamplesMappedAndTheSupportIsThePreimages) {
  const ModelPtr x_model = model_checks::synthetic_truth(kGaussian);
  const ModelPtr y_model = make_affine_model(x_model, full_map(), shift());
  ASSERT_TRUE(y_model->can_sample());
  RandomStream a(3, "affine-sample"), b(3, "affine-sample");
  const Matrix X = x_model->sample(50, a);
  const Matrix Y = y_model->sample(50, b);
  const Matrix expected = (X * full_map().transpose()).rowwise() + shift().transpose();
  EXPECT_TRUE(Y.isApprox(expected, 1e-14));

  // The square [−3, 3]² (unrotated): y is in the support when A⁻¹(y − c) is.
  const ModelPtr square = model_checks::synthetic_truth("type = \"synthetic/square\"\nn = 10\nrotate = false");
  const ModelPtr mapped = make_affine_model(square, full_map(), shift());
  EXPECT_TRUE(mapped->bounded_support());
  const Matrix preimages = test::from_rows({{2.9, 0.0}, {3.1, 0.0}, {-2.0, 2.95}, {-2.0, -3.05}});
  const Matrix images = (preimages * full_map().transpose()).rowwise() + shift().transpose();
  EXPECT_EQ(mapped->in_support(images), (std::vector<bool>{true, false, true, false}));
}

TEST(AffineModel, AFullMapNeedsTheInnerHessianForTheLaplacianADiagonalOneDoesNot) {
  Registry& reg = test::plugin_registry();
  const auto lite = std::make_shared<LiteModel>(
      test::gaussian_kernel(1.0), reg.make_base_measure(test::config_from("type = \"gaussian\""), {}),
      test::from_rows({{0.0, 0.0}, {1.0, -1.0}}), (Vector(2) << 0.5, -0.8).finished());
  ASSERT_FALSE(lite->has_hessian());
  const Matrix Y = test::from_rows({{0.2, 0.4}, {-1.0, 0.3}});
  Matrix S, L;
  const std::string msg = test::message_of<Error>(
      [&] { make_affine_model(lite, full_map(), shift())->score_and_laplacian(Y, S, L); });
  EXPECT_TRUE(test::contains(msg, "gives no full Hessian")) << msg;
  const ModelPtr diagonal = make_affine_model(lite, test::from_rows({{2.0, 0.0}, {0.0, 0.4}}), shift());
  EXPECT_TRUE(model_checks::derivatives_match_differences(*diagonal, Y, 1e-8, 1e-5));
  EXPECT_TRUE(test::contains(diagonal->describe(), ", standardised")) << diagonal->describe();
}

}  // namespace kef::affine_model_test
