#include "reliability.hpp"
#include "kef/number_text.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kef::likelihood {
namespace {

double ess_threshold(const NormalizerEstimate& e, double min_ess) {
  return e.method == "ais" ? std::min(min_ess, 0.25 * static_cast<double>(e.draws)) : min_ess;
}

// The criteria every sampled estimate must meet on its own.
void judge_alone(const NormalizerEstimate& e, const std::string& label, const ReliabilityInputs& in,
                 std::vector<std::string>& reasons) {
  if (e.failed) {
    reasons.push_back(label + " (" + e.method + ") failed: " + e.failure);
    return;
  }
  if (e.method == "quadrature") {
    if (!(e.stderr_log_z <= 0.5 * in.tolerance))
      reasons.push_back("the quadrature error estimate " + number_text(e.stderr_log_z, 4) +
                        " exceeds tolerance/2 = " + number_text(0.5 * in.tolerance, 4) + " (raise grid)");
    return;
  }
  if (!(e.stderr_log_z <= 0.5 * in.tolerance))
    reasons.push_back(label + " (" + e.method + ") has a standard error of " + number_text(e.stderr_log_z, 4) +
                      " nats, above tolerance/2 = " + number_text(0.5 * in.tolerance, 4));
  const double need = ess_threshold(e, in.min_effective_samples);
  if (e.ess >= 0.0 && !(e.ess >= need))
    reasons.push_back(label + " (" + e.method + ") rests on an effective sample size of " + number_text(e.ess, 4) +
                      " of " + std::to_string(e.draws) + " (below " + number_text(need, 4) + ")");
}

}  // namespace

std::string Reliability::text() const {
  std::string s;
  for (const auto& r : reasons) s += (s.empty() ? "" : "; ") + r;
  return s;
}

Reliability assess(const ReliabilityInputs& in) {
  Reliability out;
  judge_alone(in.main, "log Ẑ", in, out.reasons);
  if (in.main.method == "quadrature") {
    if (in.boundary_warning) out.reasons.push_back("the quadrature box may miss mass (boundary warning)");
  } else if (!in.check) {
    out.reasons.push_back("no independent second estimate of log Z (check = \"none\")");
  } else {
    judge_alone(*in.check, "the check", in, out.reasons);
    if (!in.main.failed && !in.check->failed) {
      const double gap = std::abs(in.main.log_z - in.check->log_z);
      if (!(gap <= in.tolerance))
        out.reasons.push_back("the " + in.main.method + " estimate log Ẑ = " + number_text(in.main.log_z, 4) +
                              " and the " + in.check->method + " check " + number_text(in.check->log_z, 4) +
                              " disagree by " + number_text(gap, 4) + " nats (tolerance " + number_text(in.tolerance, 4) + ")");
    }
  }
  if (in.bias_bound && !(*in.bias_bound <= in.tolerance))
    out.reasons.push_back("the bias bound " + number_text(*in.bias_bound, 4) + " exceeds the tolerance " +
                          number_text(in.tolerance, 4));
  if (in.bound_sample_log_z && !in.main.failed &&
      !(std::abs(*in.bound_sample_log_z - in.main.log_z) <= in.tolerance))
    out.reasons.push_back("the bias bound's own sample gives log Z = " + number_text(*in.bound_sample_log_z, 4) + ", " +
                          number_text(std::abs(*in.bound_sample_log_z - in.main.log_z), 4) + " nats from log Ẑ");
  if (in.bdmc_lower && in.bdmc_upper) {
    const double lo = *in.bdmc_lower, hi = *in.bdmc_upper;
    if (!(hi - lo <= in.tolerance))
      out.reasons.push_back("the bidirectional AIS bounds [" + number_text(lo, 4) + ", " + number_text(hi, 4) + "] are " +
                            number_text(hi - lo, 4) + " nats apart (tolerance " + number_text(in.tolerance, 4) + ")");
    const double slack = 2.0 * in.main.stderr_log_z + in.tolerance;
    if (!in.main.failed && (in.main.log_z < lo - slack || in.main.log_z > hi + slack))
      out.reasons.push_back("log Ẑ = " + number_text(in.main.log_z, 4) + " lies outside the bidirectional AIS bounds [" +
                            number_text(lo, 4) + ", " + number_text(hi, 4) + "]");
  }
  out.reliable = out.reasons.empty();
  return out;
}

}  // namespace kef::likelihood
