// kef/categorical.hpp: the categorical draw shared by the mixture samplers and k-means++ seeding.
#include "kef/categorical.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kef {
namespace {

TEST(Categorical, FrequenciesMatchTheWeightsAndZeroWeightsAreNeverDrawn) {
  const std::vector<double> w = {0.1, 0.0, 0.6, 0.3, 0.0};
  RandomStream rng(1, "categorical");
  const Index n = 200000;
  const std::vector<Index> counts = draw_categorical_counts(w, n, rng);
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double share = static_cast<double>(counts[k]) / static_cast<double>(n);
    // Within 4 binomial standard errors (exactly 0 for the zero weights).
    EXPECT_NEAR(share, w[k], 4 * std::sqrt(w[k] * (1 - w[k]) / static_cast<double>(n))) << k;
  }
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[4], 0);
}

TEST(Categorical, UnnormalisedWeightsWithTheirTotalAndOneUniformPerDraw) {
  // Weights 2 : 6 with total 8 draw index 1 three times as often; each draw uses exactly one uniform,
  // so a stream advanced by one uniform per draw stays in step.
  const std::vector<double> w = {2.0, 6.0};
  RandomStream a(2, "categorical"), b(2, "categorical");
  for (int i = 0; i < 1000; ++i) {
    const Index k = draw_categorical(w, a, 8.0);
    EXPECT_EQ(k, b.uniform() * 8.0 < 2.0 ? 0 : 1);
  }
}

TEST(Categorical, AUniformAboveTheLastPartialSumFallsOnTheLastPositiveWeight) {
  // With total 2 and Σ w = 1 half of the uniforms land above every partial sum, as rounding can leave
  // one: they must go to the last index of positive weight, never to the trailing zero weight.
  const std::vector<double> w = {0.5, 0.5, 0.0};
  RandomStream rng(3, "categorical");
  std::vector<Index> counts(3, 0);
  for (int i = 0; i < 4000; ++i) ++counts[static_cast<std::size_t>(draw_categorical(w, rng, 2.0))];
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[1], 2 * counts[0]);  // about 3000 against 1000
}

}  // namespace
}  // namespace kef
