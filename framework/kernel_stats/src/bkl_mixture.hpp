#pragma once
// Bayesian kernel learning (docs/math.md §9.6) for the Gaussian-mixture kernel of kernel/gaussian_mixture,
//   k_θ(x, y) = Σ_r ρ_r exp(−‖x − y‖² / (2σ_r²)),   ρ = softmax(v),  σ_r = exp(s_r),
// θ = (v_1..v_R, s_1..s_R) laid out as that kernel's parameters(): the paper's "multi-scale" model.
// The prior covariance of the embedding is the convolution of k_θ with itself under a wide Gaussian
// measure, a double sum of Gaussians, with its amplitude fixed at 1 as for the single Gaussian:
//   r_θ(x, x') = Σ_{r,s} β_rs exp(−‖x − x'‖² / (2(σ_r² + σ_s²))),
//   β_rs ∝ ρ_r ρ_s (2σ_r²σ_s² / (σ_r² + σ_s²))^{D/2},  Σ_{r,s} β_rs = 1,
// so that with R = 1 everything reduces to kef/kernel_learning.hpp's Gaussian case. The split
// O(m³ + nm(D² + R)) form, the Jacobian term and τ² (fixed by the caller) are those of the Gaussian.
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/types.hpp"

namespace kef {

// r_θ(A, B) of the header comment (rows of A against rows of B) for length scales σ and weights ρ
// (positive; normalised here). ConfigError when the sizes differ or a value is not positive and finite.
Matrix bkl_mixture_covariance(const Matrix& A, const Matrix& B, const Vector& sigma, const Vector& weights);

// log L(θ, τ²) of docs/math.md §9.6 for fixed data X (n x D) and landmarks Z (m x D), with its exact
// gradient in every kernel parameter and in log τ².
class BklMixturePseudolikelihood {
 public:
  // DataError (naming `where`) as BklPseudolikelihood; ConfigError for components < 1.
  BklMixturePseudolikelihood(const Matrix& X, const Matrix& Z, Index components,
                             const std::string& where = "bkl");

  // log L at θ = (v, log σ) (2R values) and log τ²; when `gradient` is non-null it is set to
  // (∂/∂v_1..∂/∂v_R, ∂/∂log σ_1..∂/∂log σ_R, ∂/∂log τ²). −inf (gradient NaN) where some M_i is
  // singular to working precision or a parameter is not finite; Error if θ has the wrong size.
  double value(const Vector& theta, double log_tau2, Vector* gradient, const Context& context) const;

  Index rows() const { return n_; }
  Index landmarks() const { return m_; }
  Index dim() const { return d_; }
  Index components() const { return components_; }

 private:
  Index n_, m_, d_, components_;
  Matrix Xt_;   // D x n
  Matrix Z_;    // m x D
  Matrix Dzx_;  // m x n: ‖z_l − x_i‖²
  Matrix Dzz_;  // m x m
  Vector c_;    // n: min_l ‖x_i − z_l‖²
};

struct BklMixtureOptions {
  Index landmarks = 100;        // m, drawn from X's rows by the context's stream and held out of the data
  Matrix landmark_points;       // given landmarks (m x D): then `landmarks` is ignored
  double tau2 = 1.0;            // the fixed τ², > 0
  std::vector<double> sigma;    // the R length scales: the start when learned, else fixed; required
  std::vector<double> weights;  // R positive weights (normalised): the start or fixed; empty = equal
  // What is learned. By default the weights only: the length scales are not well posed (docs/math.md
  // §9.6: a wide component runs to the upper bound, and log L is far higher at degenerate small scales
  // than at the interior stationary points L-BFGS finds); learn_sigma = true finds such a point.
  bool learn_sigma = false;
  bool learn_weights = true;
  // The flat prior's box: every σ_r in [lower, upper] (0: automatic, 1e-2·ℓ_med and 1e2·ℓ_med, ℓ_med
  // the median pairwise distance of the data rows), every log(ρ_r/ρ_R) in [−logit_bound, logit_bound].
  double lower = 0.0;
  double upper = 0.0;
  double logit_bound = 8.0;
  Index profile_points = 33;    // common-scale factors for the profile, >= 5
  std::string context = "bkl";  // names the caller in errors
};

struct BklMixtureResult {
  std::vector<double> sigma, weights;  // the mode (weights normalised)
  double log_likelihood = 0.0;         // log L at the mode
  double start_log_likelihood = 0.0;   // log L at the start
  double tau2 = 0.0;
  double lower = 0.0, upper = 0.0, logit_bound = 0.0;
  double median_lengthscale = 0.0;
  Index rows = 0, landmarks = 0, iterations = 0, evaluations = 0;
  // One-dimensional profile through the mode: log L at (c·σ̂_1, ..., c·σ̂_R) with the weights at the
  // mode, `lengthscale` holding the factor c on a geometric grid that keeps every c·σ̂_r in the box
  // (c = 1 is the mode when it is on the grid's line).
  BklProfile profile;
  std::vector<double> dropped_sigma;  // starting σ_r of components dropped because their weight vanished
  std::string provenance;
};

// The posterior mode of the free parameters (log σ when learn_sigma, log(ρ_r/ρ_R) when learn_weights;
// the rest fixed at their given values) under a flat prior on the box, by L-BFGS (kef/lbfgs.hpp) from
// the given start. A weight that ends on the edge of the logits' box (ρ_r ≤ e^{−logit_bound}·max ρ)
// drops its component, and the others are learned again (the result lists the dropped σ_r); a length
// scale on its bound is refused. NumericalError when L-BFGS does not converge. ConfigError naming the option
// (in options.context) for bad options (no sigma, sizes, a start outside the box, nothing to learn);
// DataError for bad data, a start where log L is not finite, and an optimum on the box's edge (naming the
// parameter and the bound).
BklMixtureResult bkl_mixture_kernel(const Matrix& X, const BklMixtureOptions& options,
                                    const Context& context);

}  // namespace kef
