#pragma once
// Whether a log-likelihood can be trusted: the estimate of log Z behind it, an independent second
// estimate, the bidirectional AIS bracket, the DKEF bias bound and the quadrature error, judged
// against one tolerance in nats (docs/math.md §8). Every failed criterion is a reason, in words.
#include <optional>
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef::likelihood {

struct NormalizerEstimate {
  std::string method;  // "importance", "defensive", "ais", "quadrature"
  double log_z = 0.0;
  double stderr_log_z = 0.0;  // delta-method standard error; for quadrature its error estimate
  double ess = -1.0;          // effective sample size; < 0: not applicable (quadrature)
  Index draws = 0;            // proposals or particles
  bool failed = false;
  std::string failure;  // why, when failed
};

struct ReliabilityInputs {
  NormalizerEstimate main;
  std::optional<NormalizerEstimate> check;  // none: check = "none"
  std::optional<double> bias_bound;
  // log Z from the bias bound's own variance sample (method importance): a second look from q0.
  std::optional<double> bound_sample_log_z;
  // Bidirectional Monte Carlo: forward AIS (a stochastic lower bound of log Z) and reverse AIS from
  // exact samples (a stochastic upper bound), when the model can be sampled exactly.
  std::optional<double> bdmc_lower, bdmc_upper;
  bool boundary_warning = false;  // quadrature: mass may lie outside the box
  double tolerance = 0.05;
  double min_effective_samples = 100.0;
};

struct Reliability {
  bool reliable = true;
  std::vector<std::string> reasons;  // empty when reliable
  std::string text() const;          // "reasons joined by "; ""
};

// For a sampled estimate (importance, defensive, ais): its standard error must be at most
// tolerance/2 and its effective sample size at least min_effective_samples (for AIS, at least
// min(min_effective_samples, particles/4): its particles are few and each costs a whole annealing
// run); the check, when given, must meet the same and agree within tolerance; the bias bound, when
// given, must be at most tolerance, and the log Z of the bound's own sample must agree with the
// estimate within tolerance; the BDMC bracket must be at most tolerance wide and hold the
// estimate (within its slack). No check at all is a reason too: one estimate cannot vouch for itself.
// For quadrature: its error estimate at most tolerance/2 and no boundary warning (it needs no check).
Reliability assess(const ReliabilityInputs& in);

}  // namespace kef::likelihood
