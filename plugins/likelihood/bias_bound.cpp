#include "bias_bound.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kef::likelihood {

double psi_of_log_ratio(double x) {
  // x + expm1(−x) loses all digits to cancellation as x → 0, where ψ ≈ x²/2: use the series there
  // (truncation error x⁵/120 < 1e-17 relative for |x| < 1e-3).
  if (std::abs(x) < 1e-3) return x * x * (0.5 - x * (1.0 / 6.0 - x / 24.0));
  return x + std::expm1(-x);
}

double hoeffding_upper(Index count, Index n, double confidence) {
  const double nd = static_cast<double>(n);
  return static_cast<double>(count) / nd + std::sqrt(std::log(1.0 / (1.0 - confidence)) / (2.0 * nd));
}

BoundResult proposition1(const BoundInputs& in) {
  BoundResult b;
  auto fail = [&](const std::string& why) {
    b.available = false;
    b.reason = why;
    return b;
  };
  if (!(in.rho < 0.5)) {
    std::ostringstream os;
    os << "the upper bound ρ = " << in.rho << " on P(r <= s) is not below 1/2 as Proposition 1 requires "
       << "(raise bound_rho_samples, or lower bound_percentile)";
    return fail(os.str());
  }
  if (!in.moments.has_mass() || in.moments.n < 2)
    return fail("the variance sample has fewer than 2 proposals with positive ratio");
  // t = (s + a)/2 in log space; log_s >= log_a because a bounds every ratio.
  const double hi = std::max(in.log_s, in.log_a), lo = std::min(in.log_s, in.log_a);
  b.log_t = hi + std::log1p(std::exp(lo - hi)) - std::log(2.0);
  b.log_z = in.moments.log_mean();
  // Z and t on the sample's shifted scale r·e^{−shift}.
  const double z = in.moments.mean;
  const double t = std::exp(b.log_t - in.moments.shift);
  if (!(z > t)) {
    std::ostringstream os;
    os << "the estimated Z (log " << b.log_z << ") is not above t = (s + a)/2 (log " << b.log_t
       << "), so the variance term is undefined";
    return fail(os.str());
  }
  const double u = static_cast<double>(in.proposals);
  b.psi_t = psi_of_log_ratio(b.log_z - b.log_t);
  b.p = std::max(psi_of_log_ratio(b.log_z - in.log_a), b.psi_t);
  const double gap = z - t;
  b.variance_term = b.psi_t * in.moments.shifted_variance() / (gap * gap) / u;
  // (4ρ(1−ρ))^{U/2} through its log: U can be 1e10, and 4ρ(1−ρ) = 0 gives exp(−inf) = 0.
  b.exponential_term = b.p * std::exp(0.5 * u * std::log(4.0 * in.rho * (1.0 - in.rho)));
  b.value = b.variance_term + b.exponential_term;
  b.available = std::isfinite(b.value);
  if (!b.available) b.reason = "the bound is not finite";
  return b;
}

}  // namespace kef::likelihood
