#pragma once
// Draws from a categorical distribution given by weights: the one inverse-CDF scan that the mixture
// samplers (Gaussian mixtures, defensive proposals, clustered mixtures) and k-means++ seeding share, so
// that they consume the same single uniform per draw and treat rounding at the top of the CDF alike.
#include <span>
#include <vector>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

// An index drawn with probability w[i] / total (w >= 0, total = Σ w > 0; total = 1 for normalised
// weights) from one uniform of rng. Rounding can leave the uniform above the last partial sum: the draw
// is then the last index with positive weight, never one of weight 0.
Index draw_categorical(std::span<const double> w, RandomStream& rng, double total = 1.0);

// How many of n draws fall on each index (one draw_categorical per draw, in order).
std::vector<Index> draw_categorical_counts(std::span<const double> w, Index n, RandomStream& rng);

}  // namespace kef
