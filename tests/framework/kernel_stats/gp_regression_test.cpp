// GP regression for conditional independence tests (kef/gp_regression.hpp): the spectral evaluation
// against the dense Gaussian log density and a direct solve, σ_f² as the exact maximiser, the grid
// search against fits at every grid point, residuals on a known regression, bad input.
#include "gp_regression.hpp"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <limits>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

Matrix gram(const Matrix& Z, double l) {
  Matrix K(Z.rows(), Z.rows());
  for (Index i = 0; i < Z.rows(); ++i)
    for (Index j = 0; j < Z.rows(); ++j)
      K(i, j) = std::exp(-(Z.row(i) - Z.row(j)).squaredNorm() / (2 * l * l));
  return K;
}

// log N(yc; 0, s2 (K + rI)) by Cholesky.
double dense_log_density(const Matrix& Z, const Vector& yc, double l, double r, double s2) {
  const Index n = yc.size();
  const Matrix C = s2 * (gram(Z, l) + r * Matrix::Identity(n, n));
  Eigen::LLT<Matrix> llt(C);
  const Vector a = llt.solve(yc);
  const double logdet = 2 * llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
  return -0.5 * yc.dot(a) - 0.5 * logdet - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
}

struct Problem {
  Matrix Z;
  Vector y;
};

Problem sine_problem(Index n, double noise, std::uint64_t seed) {
  RandomStream rng(seed, "gp-regression");
  Problem p{Matrix(n, 2), Vector(n)};
  for (Index i = 0; i < n; ++i) {
    p.Z(i, 0) = 2 * rng.normal();
    p.Z(i, 1) = rng.normal();
    p.y[i] = std::sin(1.5 * p.Z(i, 0)) + 0.5 * p.Z(i, 1) + noise * rng.normal() + 3.0;
  }
  return p;
}

TEST(GpRegression, SpectralFitEqualsTheDenseFormulas) {
  const Problem p = sine_problem(40, 0.2, 1);
  const double l = 0.9, r = 0.05;
  const GpRegressionFit f = gp_regression_at(p.Z, p.y, l, r);
  const Vector yc = p.y.array() - p.y.mean();
  const Index n = p.y.size();
  const Matrix K = gram(p.Z, l);
  const Matrix A = K + r * Matrix::Identity(n, n);
  // σ_f² = ycᵀ(K + rI)⁻¹yc / n, the log density at it, and the posterior mean K(K + rI)⁻¹yc + ȳ.
  EXPECT_NEAR(f.signal_variance, yc.dot(A.llt().solve(yc)) / n, 1e-12 * f.signal_variance);
  EXPECT_NEAR(f.log_marginal_likelihood, dense_log_density(p.Z, yc, l, r, f.signal_variance), 1e-9);
  const Vector mean = (K * A.llt().solve(yc)).array() + p.y.mean();
  EXPECT_LT((f.mean - mean).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_LT((f.residuals - (p.y - mean)).cwiseAbs().maxCoeff(), 1e-10);
  // The profiled σ_f² maximises the likelihood in σ_f².
  for (double scale : {0.9, 1.1})
    EXPECT_LT(dense_log_density(p.Z, yc, l, r, scale * f.signal_variance), f.log_marginal_likelihood);
}

TEST(GpRegression, GridSearchPicksTheBestGridPointAndRecoversTheNoise) {
  const Problem p = sine_problem(150, 0.2, 2);
  GpRegressionOptions o;
  const GpRegressionFit best = gp_regression(p.Z, p.y, o);
  const double median = median_pairwise_distance(p.Z);
  double top = -std::numeric_limits<double>::infinity();
  for (double factor : o.length_scale_factors)
    for (double r : o.noise_ratios)
      top = std::max(top, gp_regression_at(p.Z, p.y, factor * median, r).log_marginal_likelihood);
  EXPECT_NEAR(best.log_marginal_likelihood, top, 1e-9 * std::abs(top));
  const GpRegressionFit again = gp_regression_at(p.Z, p.y, best.length_scale, best.noise_ratio);
  EXPECT_LT((again.mean - best.mean).cwiseAbs().maxCoeff(), 1e-12);
  // The residuals are the noise: sd near 0.2 (in-sample, so a little below).
  const double sd = std::sqrt(best.residuals.squaredNorm() / static_cast<double>(best.residuals.size()));
  EXPECT_GT(sd, 0.13);
  EXPECT_LT(sd, 0.24);
  // Without inputs the mean is the average.
  const GpRegressionFit none = gp_regression(Matrix(p.y.size(), 0), p.y);
  EXPECT_NEAR(none.mean[0], p.y.mean(), 1e-12);
  EXPECT_NEAR(none.residuals.sum(), 0, 1e-9);
}

TEST(GpRegression, BadInput) {
  const Problem p = sine_problem(10, 0.1, 3);
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { gp_regression(p.Z.topRows(9), p.y); }),
                             "9 input rows but 10 responses"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { gp_regression(p.Z.topRows(2), p.y.head(2)); }),
                             "at least 3"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { gp_regression(p.Z, Vector::Ones(10)); }),
                             "response is constant"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { gp_regression(Matrix::Ones(10, 2), p.y); }),
                             "all equal"));
  Vector bad = p.y;
  bad[4] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { gp_regression(p.Z, bad); }), "non-finite"));
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { gp_regression_at(p.Z, p.y, 0.0, 0.1); }),
                             "must be positive"));
  GpRegressionOptions empty;
  empty.noise_ratios.clear();
  EXPECT_TRUE(
      test::contains(test::message_of<ConfigError>([&] { gp_regression(p.Z, p.y, empty); }), "empty"));
}

}  // namespace
}  // namespace kef
