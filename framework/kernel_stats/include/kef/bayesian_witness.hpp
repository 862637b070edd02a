#pragma once
// The Bayesian witness function (Flaxman et al. 2016, §4; docs/math.md §9.5): the posterior of
// μ_P − μ_Q at a set of points, where μ_P and μ_Q are the Bayesian kernel embeddings
// (kef/kernel_embedding.hpp) of two independent samples X ~ P and Y ~ Q under one Gaussian kernel.
// Where its credible band excludes 0, the model says the two distributions differ; its prior is the
// function 0 (the null hypothesis P = Q).
//
// For a fixed length scale ℓ the two posteriors are independent Gaussian processes, so the witness is
// Gaussian at each point, with mean m_P − m_Q and variance v_P + v_Q. Integrated over ℓ (draws of
// log ℓ from its posterior, e.g. BKL's HMC) it is an equal-weight mixture of those Gaussians: the band
// is the mixture's central quantiles, computed exactly rather than from sampled functions.
#include <string>

#include "kef/context.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/types.hpp"

namespace kef {

struct WitnessOptions {
  double tau2 = 1.0;   // τ² of both embeddings' likelihoods (> 0); the fixed τ² of BKL too
  double level = 0.8;  // probability of the central credible band, in (0, 1)
  std::string where = "bayesian witness";  // names the caller in errors
};

struct WitnessPosterior {
  Vector mean;             // E[μ_P(x) − μ_Q(x)] at each point
  Vector sd;               // its posterior standard deviation (over ℓ too, for a mixture)
  Vector lower, upper;     // the central credible band at options.level
  Index lengthscales = 0;  // values of ℓ averaged over: 1 for a fixed ℓ, the number of draws otherwise
};

// The witness for a fixed length scale ℓ. DataError (naming options.where) when X, Y and the points
// do not have the same number of columns, or any is empty or not finite; ConfigError for ℓ, τ² or the
// level out of range.
WitnessPosterior bayesian_witness(const Matrix& X, const Matrix& Y, const Matrix& points, double lengthscale,
                                  const WitnessOptions& options, const Context& context);

// The witness integrated over ℓ: the equal-weight mixture over draws of log ℓ (BklResult::draws of
// BklMethod::Hmc). The draws' embeddings are computed in parallel, each into its own slot, so the result
// does not depend on the thread count. ConfigError for an empty or non-finite draw vector.
WitnessPosterior bayesian_witness(const Matrix& X, const Matrix& Y, const Matrix& points,
                                  const Vector& log_lengthscales, const WitnessOptions& options,
                                  const Context& context);

// ℓ learned by Bayesian kernel learning on the pooled rows of X and Y (the paper learns one length
// scale for the combined sample), τ² = options.tau2 in both; bkl.method Mode gives the witness at the
// posterior mode of ℓ, Hmc the mixture over the posterior draws. BKL's errors (a maximum on a bound of
// ℓ's box, too few rows for the landmarks) propagate, naming bkl.context.
struct LearnedWitness {
  WitnessPosterior witness;
  BklResult bkl;
};
LearnedWitness bayesian_witness_bkl(const Matrix& X, const Matrix& Y, const Matrix& points, BklOptions bkl,
                                    const WitnessOptions& options, const Context& context);

}  // namespace kef
