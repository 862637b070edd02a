#pragma once
// Bayesian kernel learning (Flaxman, Sejdinovic, Cunningham, Filippi 2016; docs/math.md §9): choosing
// the length scale ℓ of the Gaussian kernel k(x, y) = exp(−‖x − y‖² / (2ℓ²)) by the marginal
// pseudolikelihood of the Bayesian kernel embedding model.
//
// The model, with everything that is fixed stated (docs/math.md §9 explains why each is fixed):
//   - prior covariance of the embedding: r(x, x') = exp(−‖x − x'‖² / (4ℓ²)), amplitude fixed at 1 (the
//     convolution of k with itself under a wide Gaussian measure, with its constant factor dropped, as
//     in the paper's code);
//   - τ², the noise variance of the empirical embedding (τ²/n per landmark), fixed by the caller
//     (default 1: the paper's first experiment fixes τ²). Maximised jointly over (log ℓ, log τ²) the
//     pseudolikelihood has no interior optimum (it grows without bound as ℓ grows); with τ² fixed it
//     has one, which moves with τ²;
//   - prior on log ℓ: flat on [lower, upper], so the posterior mode is the pseudolikelihood maximiser
//     inside the box, and a maximiser on the box's edge is refused (no interior optimum).
// m landmarks z are drawn from the rows (and held out from the data, as the paper suggests) or given.
//
// Cost per evaluation: O(m³) (an eigendecomposition of R_zz) + O(n m D²) (Φ and the Jacobian term),
// split over the context's threads in fixed row groups, so results do not depend on the thread count.
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/hmc.hpp"
#include "kef/types.hpp"

namespace kef {

// log L(ℓ, τ²) of docs/math.md §9 for fixed data X (n x D) and landmarks Z (m x D), with its exact
// gradient in (log ℓ, log τ²).
class BklPseudolikelihood {
 public:
  // DataError (naming `where`) when the column counts differ, X is empty, m < D (JᵀJ, D x D from an
  // m x D Jacobian, would be singular) or a value is not finite.
  BklPseudolikelihood(const Matrix& X, const Matrix& Z, const std::string& where = "bkl");

  // log L at (log ℓ, log τ²); when `gradient` is non-null it is set to (∂/∂log ℓ, ∂/∂log τ²). Returns
  // −inf (gradient NaN) when ℓ is so small that some Σ_l w_il u_il u_ilᵀ is singular to working
  // precision (fewer than D landmarks with weight above ~1e-16 of the largest, for some row).
  double value(double log_lengthscale, double log_tau2, Vector* gradient, const Context& context) const;

  Index rows() const { return n_; }
  Index landmarks() const { return m_; }
  Index dim() const { return d_; }

 private:
  Index n_, m_, d_;
  Matrix Xt_;   // D x n: column i is row i of X
  Matrix Z_;    // m x D: column a contiguous over the landmarks
  Matrix Dzx_;  // m x n: ‖z_l − x_i‖²
  Matrix Dzz_;  // m x m
  Vector c_;    // n: min_l ‖x_i − z_l‖², the shift that keeps the Jacobian's weights from underflowing
};

enum class BklMethod {
  Mode,  // the posterior mode of log ℓ (type-II maximum likelihood under the flat prior), by L-BFGS
  Hmc,   // the posterior of log ℓ by kef's HMC (started at the mode); σ = exp(posterior median)
};

struct BklOptions {
  Index landmarks = 100;   // m, drawn from X's rows by the context's stream and held out of the data
  Matrix landmark_points;  // given landmarks (m x D): then `landmarks` is ignored and all rows are data
  double tau2 = 1.0;       // the fixed τ², > 0
  BklMethod method = BklMethod::Mode;
  // The box of the flat prior on log ℓ; 0 means automatic: lower = the smallest ℓ = 1e-3·ℓ_med·1.25^k
  // where log L is finite, upper = 1e2·ℓ_med, ℓ_med the median pairwise distance of the data rows.
  double lower = 0.0;
  double upper = 0.0;
  Index profile_points = 33;  // ℓ grid (geometric over [lower, upper]) for the profile, >= 5
  // For BklMethod::Hmc (chains, warm-up, draws; init is set to points around the mode).
  HmcOptions hmc = default_hmc();
  std::string context = "bkl";  // names the caller in errors, e.g. "model[0].kernel.sigma"

  static HmcOptions default_hmc() {
    HmcOptions h;
    h.chains = 4;
    h.warmup = 200;
    h.samples = 200;
    h.leapfrog_steps = 8;
    return h;
  }
};

// log L(ℓ, τ²) on the ℓ grid, τ² the fixed value (−inf where it is not finite, see value()).
struct BklProfile {
  std::vector<double> lengthscale;
  std::vector<double> log_likelihood;
};

struct BklResult {
  double sigma = 0.0;               // the chosen length scale ℓ
  double log_likelihood = 0.0;      // log L at sigma
  double tau2 = 0.0;                // the fixed τ²
  std::string method;               // "mode" or "hmc"
  double lower = 0.0, upper = 0.0;  // the prior's box for ℓ
  double median_lengthscale = 0.0;
  double median_log_likelihood = 0.0;     // log L at the median heuristic's ℓ (for comparison)
  Index rows = 0, landmarks = 0;          // n data rows and m landmarks used
  Index iterations = 0, evaluations = 0;  // of the mode finder (evaluations include the profile)
  double mode = 0.0;                      // the posterior mode of ℓ (= sigma for Mode)
  BklProfile profile;
  // Hmc only: draws of log ℓ (interleaved over chains), posterior summaries of ℓ, the sampler's line.
  Vector draws;
  double posterior_mean = 0.0, posterior_sd = 0.0, posterior_q05 = 0.0, posterior_q95 = 0.0;
  std::string hmc_summary;
  std::string provenance;  // one sentence: what was fixed, the prior, the method, the data used
};

// Chooses the Gaussian length scale by Bayesian kernel learning. ConfigError naming the option (in
// options.context) for bad options (landmarks < D or more than the rows allow, tau2 <= 0, bounds);
// DataError when X is too small or not finite, and when the maximiser sits on a bound of the prior's
// box (no interior optimum), naming the bound and what to change.
BklResult bkl_bandwidth(const Matrix& X, const BklOptions& options, const Context& context);

}  // namespace kef
