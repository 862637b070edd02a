// The Bayesian kernel embedding's posterior (docs/math.md §9) against the dense GP formulas.
#include "kernel_embedding.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef::kernel_embedding_test {
namespace {

Matrix gauss(const Matrix& A, const Matrix& B, double s) {
  Matrix K(A.rows(), B.rows());
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < B.rows(); ++j)
      K(i, j) = std::exp(-(A.row(i) - B.row(j)).squaredNorm() / (2 * s * s));
  return K;
}

// Posterior mean r*ᵀ(R + τ²/n I)⁻¹ μ̂ and covariance r** − r*ᵀ(R + τ²/n I)⁻¹ r*, with an explicit inverse
// and entry-by-entry kernels: the brute-force twin of the factorised implementation.
TEST(BayesianKernelEmbedding, PosteriorMatchesDenseGpFormulas) {
  const auto p = test::random_points(25, 6, 2, 3, "bke");
  const double ell = 0.7, tau2 = 0.3;
  const BayesianKernelEmbedding bke(p.X, ell, tau2);
  const double n = 25;
  const Matrix R = gauss(p.X, p.X, std::sqrt(2.0) * ell);
  const Matrix Ainv = (R + (tau2 / n) * Matrix::Identity(25, 25)).inverse();
  const Vector muhat = gauss(p.X, p.X, ell).colwise().sum().transpose() / n;
  const Matrix Rs = gauss(p.X, p.Y, std::sqrt(2.0) * ell);
  const Vector mean = Rs.transpose() * Ainv * muhat;
  const Matrix cov = gauss(p.Y, p.Y, std::sqrt(2.0) * ell) - Rs.transpose() * Ainv * Rs;
  const Vector got_mean = bke.mean(p.Y), got_var = bke.variance(p.Y);
  const Matrix got_cov = bke.covariance(p.Y);
  for (Index j = 0; j < 6; ++j) {
    EXPECT_NEAR(got_mean[j], mean[j], 1e-10);
    EXPECT_NEAR(got_var[j], cov(j, j), 1e-10);
    for (Index k = 0; k < 6; ++k) EXPECT_NEAR(got_cov(j, k), cov(j, k), 1e-10);
  }
  const Vector emp = gauss(p.X, p.Y, ell).colwise().mean().transpose();
  for (Index j = 0; j < 6; ++j) EXPECT_NEAR(bke.empirical(p.Y)[j], emp[j], 1e-14);
}

// Shrinkage and uncertainty behave as the model says: with little noise the posterior mean at the data
// reproduces μ̂ closely and the variance there is small; far from the data the mean goes to the prior
// mean 0 and the variance to the prior variance 1.
TEST(BayesianKernelEmbedding, LimitsAtAndFarFromTheData) {
  const auto p = test::random_points(30, 1, 2, 5, "bke-limits");
  const BayesianKernelEmbedding sharp(p.X, 0.5, 1e-6);
  const Vector d = sharp.mean(p.X) - sharp.empirical(p.X);
  EXPECT_LT(d.cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_LT(sharp.variance(p.X).maxCoeff(), 1e-3);
  Matrix far = Matrix::Constant(1, 2, 50.0);
  EXPECT_NEAR(sharp.mean(far)[0], 0.0, 1e-12);
  EXPECT_NEAR(sharp.variance(far)[0], 1.0, 1e-12);
}

TEST(BayesianKernelEmbedding, RefusesBadInput) {
  const auto p = test::random_points(5, 1, 2, 1, "bke-bad");
  EXPECT_TRUE(
      test::contains(test::message_of<ConfigError>([&] { BayesianKernelEmbedding(p.X, 0.0, 1.0, "emb"); }),
                     "emb: lengthscale must be a positive number, got 0"));
  EXPECT_TRUE(
      test::contains(test::message_of<ConfigError>([&] { BayesianKernelEmbedding(p.X, 1.0, -1.0, "emb"); }),
                     "emb: tau2 must be a positive number"));
  const BayesianKernelEmbedding bke(p.X, 1.0, 1.0, "emb");
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { bke.mean(Matrix::Zero(2, 3)); }),
                             "emb: points have 3 columns, the data 2"));
}

}  // namespace
}  // namespace kef::kernel_embedding_test
