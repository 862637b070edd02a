#include "kef/gamma_null.hpp"

#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <string>

#include "kef/error.hpp"

namespace kef {

double GammaNull::p_value(double statistic) const {
  if (!(statistic > 0)) return 1.0;
  return boost::math::gamma_q(shape, statistic / scale);
}

GammaNull match_gamma(double mean, double variance, std::string_view where) {
  if (!(mean > 0) || !(variance > 0) || !std::isfinite(mean) || !std::isfinite(variance))
    throw NumericalError(std::string(where) +
                         ": the null moments of the Gamma approximation are degenerate (mean " +
                         std::to_string(mean) + ", variance " + std::to_string(variance) +
                         "); the kernel is (nearly) constant on these rows: check the bandwidth");
  GammaNull g;
  g.mean = mean;
  g.variance = variance;
  g.shape = mean * mean / variance;
  g.scale = variance / mean;
  return g;
}

}  // namespace kef
