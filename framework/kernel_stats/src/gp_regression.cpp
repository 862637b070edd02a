// GP regression with grid type-II maximum likelihood (kef/gp_regression.hpp).
#include "gp_regression.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <string>

#include "kef/error.hpp"
#include "kef/linalg.hpp"

namespace kef {

namespace {

void check_inputs(const Matrix& Z, const Vector& y) {
  if (Z.rows() != y.size())
    throw DataError("GP regression: " + std::to_string(Z.rows()) + " input rows but " +
                    std::to_string(y.size()) + " responses (expected one per row)");
  if (y.size() < 3)
    throw DataError("GP regression: " + std::to_string(y.size()) + " rows (expected at least 3)");
  if (!Z.allFinite() || !y.allFinite()) throw DataError("GP regression: non-finite input or response");
  if (y.maxCoeff() == y.minCoeff()) throw DataError("GP regression: the response is constant");
}

Matrix gaussian_gram(const Matrix& Z, double length_scale) {
  const Index n = Z.rows();
  Matrix K(n, n);
  const Vector sq = Z.rowwise().squaredNorm();
  const Matrix G = Z * Z.transpose();
  for (Index j = 0; j < n; ++j)
    for (Index i = 0; i < n; ++i) {
      const double d2 = std::max(0.0, sq[i] + sq[j] - 2 * G(i, j));
      K(i, j) = std::exp(-d2 / (2 * length_scale * length_scale));
    }
  return K;
}

// K = U diag(s) Uᵀ and t = Uᵀ (y − ȳ): everything each r needs.
struct Spectrum {
  Matrix U;
  Vector s, t;
};

Spectrum spectrum(const Matrix& Z, const Vector& yc, double length_scale) {
  Eigen::SelfAdjointEigenSolver<Matrix> eig(gaussian_gram(Z, length_scale));
  if (eig.info() != Eigen::Success) throw NumericalError("GP regression: eigendecomposition failed");
  Spectrum sp;
  sp.U = eig.eigenvectors();
  sp.s = eig.eigenvalues().cwiseMax(0.0);  // a Gram matrix is PSD; rounding can leave −1e-16
  sp.t = sp.U.transpose() * yc;
  return sp;
}

// log N(yc; 0, σ_f²(K + rI)) with σ_f² = yc'(K + rI)⁻¹yc / n: the −n/2 is the quadratic form at σ_f².
GpRegressionFit fit_from(const Spectrum& sp, double ybar, const Vector& y, double length_scale, double r) {
  const Index n = y.size();
  const Vector inv = (sp.s.array() + r).inverse().matrix();
  const double q = sp.t.cwiseProduct(inv).dot(sp.t);
  GpRegressionFit f;
  f.length_scale = length_scale;
  f.noise_ratio = r;
  f.signal_variance = q / static_cast<double>(n);
  const double logdet = (sp.s.array() + r).log().sum();
  f.log_marginal_likelihood =
      -0.5 * static_cast<double>(n) * (1 + std::log(2 * M_PI * f.signal_variance)) - 0.5 * logdet;
  f.mean = (sp.U * sp.s.cwiseProduct(inv).cwiseProduct(sp.t)).array() + ybar;
  f.residuals = y - f.mean;
  return f;
}

}  // namespace

GpRegressionFit gp_regression_at(const Matrix& Z, const Vector& y, double length_scale, double noise_ratio) {
  check_inputs(Z, y);
  if (!(length_scale > 0) || !(noise_ratio > 0))
    throw ConfigError("GP regression: the length scale and the noise ratio must be positive (got " +
                      std::to_string(length_scale) + " and " + std::to_string(noise_ratio) + ")");
  const double ybar = y.mean();
  const Vector yc = y.array() - ybar;
  return fit_from(spectrum(Z, yc, length_scale), ybar, y, length_scale, noise_ratio);
}

GpRegressionFit gp_regression(const Matrix& Z, const Vector& y, const GpRegressionOptions& options) {
  check_inputs(Z, y);
  if (options.length_scale_factors.empty() || options.noise_ratios.empty())
    throw ConfigError("GP regression: empty hyperparameter grid");
  for (double v : options.length_scale_factors)
    if (!(v > 0))
      throw ConfigError("GP regression: length-scale factors must be positive (got " + std::to_string(v) +
                        ")");
  for (double v : options.noise_ratios)
    if (!(v > 0))
      throw ConfigError("GP regression: noise ratios must be positive (got " + std::to_string(v) + ")");
  const double ybar = y.mean();
  if (Z.cols() == 0) {
    GpRegressionFit f;
    f.mean = Vector::Constant(y.size(), ybar);
    f.residuals = y - f.mean;
    return f;
  }
  const double median = median_pairwise_distance(Z);
  if (!(median > 0)) throw DataError("GP regression: the input rows are all equal (median distance 0)");
  const Vector yc = y.array() - ybar;
  GpRegressionFit best;
  bool have = false;
  for (double factor : options.length_scale_factors) {
    const Spectrum sp = spectrum(Z, yc, factor * median);
    for (double r : options.noise_ratios) {
      GpRegressionFit f = fit_from(sp, ybar, y, factor * median, r);
      if (!have || f.log_marginal_likelihood > best.log_marginal_likelihood) {
        best = std::move(f);
        have = true;
      }
    }
  }
  return best;
}

}  // namespace kef
