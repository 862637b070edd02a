#include "kernel_embedding.hpp"

#include <cmath>
#include <sstream>

#include "kef/error.hpp"
#include "kef/number_text.hpp"
#include "kef/vector_exp.hpp"

namespace kef {
namespace {

// exp(−‖x − y‖² / (2 s²)) for all row pairs.
Matrix gaussian_gram(const Matrix& X, const Matrix& Y, double s) {
  return exp_of(squared_distances(X, Y) * (-0.5 / (s * s)));
}

}  // namespace

BayesianKernelEmbedding::BayesianKernelEmbedding(const Matrix& X, double lengthscale, double tau2,
                                                 const std::string& where)
    : X_(X), ell_(lengthscale), tau2_(tau2), where_(where) {
  if (!(lengthscale > 0.0) || !std::isfinite(lengthscale))
    throw ConfigError(where + ": lengthscale must be a positive number, got " + number_text(lengthscale));
  if (!(tau2 > 0.0) || !std::isfinite(tau2))
    throw ConfigError(where + ": tau2 must be a positive number, got " + number_text(tau2));
  if (X.rows() < 1 || X.cols() < 1) throw DataError(where + ": no data rows");
  check_finite(X, where + ": data");
  const double n = static_cast<double>(X.rows());
  // r is k with length scale √2·ℓ (the self-convolution of k, amplitude dropped).
  Matrix A = gaussian_gram(X, X, std::sqrt(2.0) * ell_);
  A.diagonal().array() += tau2_ / n;
  factor_ = SpdFactor(A, where + ": R + (τ²/n) I");
  alpha_ = factor_.solve(empirical(X));
}

void BayesianKernelEmbedding::check_columns(const Matrix& Xs) const {
  if (Xs.cols() != X_.cols())
    throw DataError(where_ + ": points have " + std::to_string(Xs.cols()) + " columns, the data " +
                    std::to_string(X_.cols()));
}

Matrix BayesianKernelEmbedding::prior_cross(const Matrix& Xs) const {
  return gaussian_gram(X_, Xs, std::sqrt(2.0) * ell_);
}

Vector BayesianKernelEmbedding::empirical(const Matrix& Xs) const {
  check_columns(Xs);
  return gaussian_gram(X_, Xs, ell_).colwise().mean().transpose();
}

Vector BayesianKernelEmbedding::mean(const Matrix& Xs) const {
  check_columns(Xs);
  return prior_cross(Xs).transpose() * alpha_;
}

Vector BayesianKernelEmbedding::variance(const Matrix& Xs) const {
  check_columns(Xs);
  const Matrix Rs = prior_cross(Xs);
  const Matrix S = factor_.solve(Rs);
  Vector v(Xs.rows());
  // r(x*, x*) = 1; clamped at 0 against rounding where the data pin μ down.
  for (Index j = 0; j < Xs.rows(); ++j) v[j] = std::max(0.0, 1.0 - Rs.col(j).dot(S.col(j)));
  return v;
}

Matrix BayesianKernelEmbedding::covariance(const Matrix& Xs) const {
  check_columns(Xs);
  const Matrix Rs = prior_cross(Xs);
  Matrix C = gaussian_gram(Xs, Xs, std::sqrt(2.0) * ell_) - Rs.transpose() * factor_.solve(Rs);
  return 0.5 * (C + C.transpose());
}

}  // namespace kef
