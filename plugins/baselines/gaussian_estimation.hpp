#pragma once
// Maximum likelihood for Gaussians and mixtures of Gaussians (docs/math.md §14.1–§14.3): the
// weighted moments every fit shares (gaussian_fit is one M-step with all responsibilities 1), the
// covariance floor, and EM with k-means++ starts (kef/kmeans.hpp). Sums over rows run over fixed row
// blocks reduced in block order (kef::ordered_reduce), so every result depends on the data and the
// seed, never on the thread count.
#include <string>
#include <vector>

#include "gaussian_mixture_model.hpp"
#include "kef/context.hpp"
#include "kef/options.hpp"
#include "kef/random.hpp"

namespace kef::baselines {

// A covariance below this multiple of its largest eigenvalue (variance, for diagonal covariances) is
// singular: with covariance_floor = 0 the fit refuses it instead of dividing by it.
constexpr double kSingularRatio = 1e-12;

struct FlooredCovariance {
  Matrix covariance;
  Index clipped = 0;          // eigenvalues (variances) raised to the floor
  bool singular = false;      // floor 0 and the smallest eigenvalue <= kSingularRatio × the largest
  double min_eigenvalue = 0;  // of the input
};

// The maximiser of the Gaussian likelihood over covariances whose eigenvalues are >= floor, given
// the (weighted) scatter S: S itself when it already satisfies the floor, else U max(Λ, floor) Uᵀ
// from S = U Λ Uᵀ. diagonal: the diagonal of S, each variance clipped.
FlooredCovariance floor_covariance(const Matrix& S, double floor, bool diagonal);

struct GaussianFitOptions {
  double floor = 0.0;     // covariance_floor
  bool diagonal = false;  // diagonal covariances
};

// The M-step: weights N_k / N, means and covariances of the rows weighted by the responsibilities
// gamma (N x K), each covariance floored. A singular covariance with floor 0 fails on
// `covariance_floor` through `sites`, naming `where` and the component; a component with no weight
// is a NumericalError. clipped (optional): eigenvalues (variances) the floor raised, over all components.
MixtureParameters weighted_gaussians(const Matrix& X, const Matrix& gamma, const GaussianFitOptions& options,
                                     const KeySites& sites, const std::string& where, const Context& context,
                                     Index* clipped = nullptr);

// The E-step: responsibilities (N x K, written into gamma) and the total log-likelihood Σ_i log p(x_i).
// NumericalError naming the first row whose log-likelihood is not finite.
double responsibilities(const GaussianMixtureModel& model, const Matrix& X, Matrix& gamma,
                        const Context& context);

// Σ_i log p(x_i) over the rows of X in fixed row chunks, added in row order.
double total_log_likelihood(const Model& model, const Matrix& X, const Context& context);

struct EmOptions {
  Index components = 1;
  GaussianFitOptions fit;
  int max_iterations = 500;
  double tolerance = 1e-6;  // stop when the mean log-likelihood per row rises by less
  int kmeans_max_iterations = 100;
};

struct EmResult {
  MixtureParameters parameters;
  // Mean training log-likelihood per row of the initial parameters and after every M-step.
  std::vector<double> trace;
  int iterations = 0;  // M-steps after the initial one
  bool converged = false;
  Index clipped = 0;  // eigenvalues raised to the floor in the final M-step
};

// EM from one k-means++ start: k-means (one restart, kef::kmeans, stream `rng`) gives hard labels, one
// M-step on them gives the initial parameters, then E- and M-steps alternate until the mean
// log-likelihood rises by less than `tolerance` or max_iterations M-steps have run. With K = 1 the
// start is the single Gaussian fit and EM stops at once.
EmResult run_em(const Matrix& X, const EmOptions& options, const RandomStream& rng, const KeySites& sites,
                const std::string& where, const Context& context);

// Free parameters of a mixture (BIC): K − 1 weights, K·D means, K·D(D+1)/2 (full) or K·D (diagonal)
// covariance entries.
double free_parameters(Index K, Index D, bool diagonal);

}  // namespace kef::baselines
