#pragma once
// Gaussian-process regression of one response on inputs Z, for kernel conditional independence
// tests: X ⟂ Y | Z is tested as the independence of the residuals x − E[x | Z] and y − E[y | Z]
// (Flaxman et al. 2016, §5, following Flaxman, Neill & Smola 2016). The kernel is an isotropic
// Gaussian, σ_f² (exp(−‖z − z'‖² / (2ℓ²)) + r δ), whose hyperparameters are chosen by type-II
// maximum likelihood: ℓ and the noise-to-signal ratio r over a grid (one eigendecomposition per ℓ
// serves every r), and σ_f² profiled out in closed form, σ_f² = yᵀ(K + rI)⁻¹y / n (docs/math.md §9).
#include <vector>

#include "kef/types.hpp"

namespace kef {

struct GpRegressionOptions {
  // ℓ candidates as multiples of the median pairwise distance of Z's rows, and r candidates.
  std::vector<double> length_scale_factors = {0.125, 0.25, 0.5, 1, 2, 4, 8};
  std::vector<double> noise_ratios = {1e-4, 1e-3, 1e-2, 1e-1, 1};
};

struct GpRegressionFit {
  double length_scale = 0, noise_ratio = 0;
  double signal_variance = 0;          // σ_f², profiled
  double log_marginal_likelihood = 0;  // of the centred response at these hyperparameters
  Vector mean;                         // E[y | Z] at Z's rows (y's mean added back)
  Vector residuals;                    // y − mean
};

// The fit at given hyperparameters. DataError for fewer than 3 rows, rows of Z and y that differ in
// number, non-finite values, or a constant y; ConfigError for ℓ or r not positive.
GpRegressionFit gp_regression_at(const Matrix& Z, const Vector& y, double length_scale, double noise_ratio);

// The fit at the grid point of largest marginal likelihood (the first in grid order on ties). With no
// columns in Z the mean is y's average. DataError as above, and for Z whose rows are all equal.
GpRegressionFit gp_regression(const Matrix& Z, const Vector& y, const GpRegressionOptions& options = {});

}  // namespace kef
