#pragma once
// The Bayesian kernel embedding (Flaxman et al. 2016; docs/math.md §9) of a sample under the Gaussian
// kernel k(x, y) = exp(−‖x − y‖² / (2ℓ²)): a GP prior on the mean embedding μ with covariance
// r(x, x') = exp(−‖x − x'‖² / (4ℓ²)) (amplitude 1), observed through the empirical embedding
// μ̂(x_j) = (1/n) Σ_i k(x_i, x_j) at the n data points with Gaussian noise of variance τ²/n. The
// posterior of μ at any points is Gaussian, in closed form (O(n³) once, O(n) per point for the mean
// and O(n²) per point for the variance):
//   mean(x*)     = r*ᵀ (R + (τ²/n) I)⁻¹ μ̂,   r* = r(X, x*),  R = r(X, X)
//   variance(x*) = r(x*, x*) − r*ᵀ (R + (τ²/n) I)⁻¹ r*
// The posterior mean is the spectral kernel mean shrinkage estimator with k replaced by r in the Gram
// matrices; the variance is new.
#include <string>

#include "kef/linalg.hpp"
#include "kef/types.hpp"

namespace kef {

class BayesianKernelEmbedding {
 public:
  // ConfigError (naming `where`) for lengthscale or tau2 not positive and finite; DataError for an
  // empty or non-finite X.
  BayesianKernelEmbedding(const Matrix& X, double lengthscale, double tau2,
                          const std::string& where = "bayesian kernel embedding");

  // The empirical embedding μ̂(x*) = (1/n) Σ_i k(x_i, x*) at the rows of Xs.
  Vector empirical(const Matrix& Xs) const;
  // Posterior mean and variance of μ(x*) at the rows of Xs (DataError on a column mismatch).
  Vector mean(const Matrix& Xs) const;
  Vector variance(const Matrix& Xs) const;
  // Posterior covariance of μ at the rows of Xs (Xs.rows() square).
  Matrix covariance(const Matrix& Xs) const;

  double lengthscale() const { return ell_; }
  double tau2() const { return tau2_; }

 private:
  Matrix prior_cross(const Matrix& Xs) const;  // r(X, Xs), n x rows
  void check_columns(const Matrix& Xs) const;
  Matrix X_;
  double ell_, tau2_;
  std::string where_;
  SpdFactor factor_;  // of R + (τ²/n) I
  Vector alpha_;      // (R + (τ²/n) I)⁻¹ μ̂(X)
};

}  // namespace kef
