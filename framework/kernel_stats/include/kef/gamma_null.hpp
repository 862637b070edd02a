#pragma once
// A Gamma law matched to the first two moments of a test statistic's null distribution, the cheap
// alternative to a permutation null for the biased MMD² and HSIC (docs/math.md §8.9).
#include <string_view>

namespace kef {

struct GammaNull {
  double mean = 0;      // the null mean of the statistic
  double variance = 0;  // its null variance
  double shape = 0;     // mean² / variance
  double scale = 0;     // variance / mean

  // P(T >= statistic) for T ~ Gamma(shape, scale): the upper regularised incomplete gamma function.
  // 1 for a statistic <= 0 (the law has no mass below 0).
  double p_value(double statistic) const;
};

// The Gamma law with the given moments. NumericalError naming `where` unless mean > 0 and
// variance > 0 are finite (a constant kernel, or all rows equal, leaves no law to match).
GammaNull match_gamma(double mean, double variance, std::string_view where);

}  // namespace kef
