#pragma once
// The building blocks both BKL pseudolikelihoods (the Gaussian's, kef/kernel_learning.hpp, and the
// Gaussian mixture's, kef/bkl_mixture.hpp) share: one implementation each (docs/math.md §9.2–§9.3).
// Private to libkef.
#include <string>

#include "kef/context.hpp"
#include "kef/types.hpp"

namespace kef::bkl_parts {

// DataError (exit 2) naming `where` and the first non-finite cell.
void require_finite(const Matrix& A, const std::string& where);

// The pseudolikelihood's input checks: X non-empty, Z with X's columns, m >= D (JᵀJ is D x D from an
// m x D Jacobian), both finite. DataError naming `where`.
void check_inputs(const Matrix& X, const Matrix& Z, const std::string& where);

// Cholesky of the D x D lower triangle of Lf in place, and log det of the matrix; false (Lf partly
// overwritten) when a pivot is not positive and finite, i.e. the matrix is singular to working precision.
bool cholesky_logdet(Matrix& Lf, Index D, double& logdet);

// The Jacobian part of row i: u_l = x_i − z_l into the rows of U (m x D), W = diag(w2) U, the lower
// triangle of M = Uᵀ diag(w2) U (D(D+1)/2 dot products of length m over contiguous columns: Eigen's
// GEMM costs more at 5 x 100 x 5), then cholesky_logdet of M. Xt is D x n (x_i its column i).
// False when M is singular to working precision.
bool weighted_jacobian_logdet(const Matrix& Xt, Index i, const Matrix& Z, const Vector& w2, Matrix& U,
                              Matrix& W, Matrix& M, double& logdet);

// q_l = ‖L⁻¹ u_l‖² = u_lᵀ M⁻¹ u_l for the rows u_l of U (m x D, overwritten by L⁻¹ applied to its
// rows), L the factor left by cholesky_logdet.
void inverse_quadratic(const Matrix& Lf, Matrix& U, Vector& q);

// The m x m part of log L: A = n R + τ² I with log det A and w = A⁻¹ μ̄, and A⁻¹ when `inverse`.
// By Cholesky, or, when rounding has left R with eigenvalues slightly below 0 and τ² does not cover
// them, through R's eigendecomposition with those eigenvalues set to 0.
struct MeanPart {
  double logdet = 0.0;
  Vector w;
  Matrix inverse;
};
MeanPart factor_mean_part(const Matrix& R, double n, double tau2, const Vector& mu, bool inverse);

// The landmarks: the given points (then every row of X is data), or `landmarks` rows drawn by the
// stream context.child("landmarks") and held out of the data. ConfigError / DataError naming `where`.
void split_landmarks(const Matrix& X, Index landmarks, const Matrix& given, const std::string& where,
                     const Context& context, Matrix& data, Matrix& Z);

}  // namespace kef::bkl_parts
