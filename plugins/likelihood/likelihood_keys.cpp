// The log_likelihood evaluator's keys: one declaration drives validation, `kef plugins` and the
// plugin README's table.
#include <string>

#include "kef/evaluation_rows.hpp"
#include "likelihood_evaluator.hpp"

namespace kef::likelihood {

// flat table: one declaration per key, in the order `kef plugins` and the README list them.
KeyList likelihood_keys() {
  return {
      KeySpec::string(
          "method",
          "how Z is estimated: importance sampling from a defensive mixture (q0, a Student-t fitted to "
          "the data, Gaussian bumps at data and inducing points), from the base measure q0 alone, by "
          "annealed importance sampling with HMC, or by the midpoint rule on a box (D <= 2)",
          std::string("defensive"))
          .one_of({"defensive", "importance", "ais", "quadrature"}),
      KeySpec::string("check",
                      "the independent second estimate of Z that the result must agree with: auto = ais for "
                      "method defensive, defensive for importance and ais, none for quadrature",
                      std::string("auto"))
          .one_of({"auto", "defensive", "importance", "ais", "none"}),
      KeySpec::number(
          "tolerance",
          "nats: reliable only if the estimates agree within this, each has a standard error of at "
          "most half of it, and the bias bound and bidirectional AIS gap (when given) are within it",
          0.05)
          .positive(),
      KeySpec::boolean("strict", "an unreliable log-likelihood is a numerical error instead of a warning",
                       false),
      KeySpec::boolean(
          "bidirectional",
          "when the model can be sampled exactly and AIS runs, also run reverse AIS from exact samples "
          "(an upper bound of log Z beside the forward lower bound)",
          true),
      KeySpec::numbers(
          "defensive_weights",
          "mixture weights of [q0, Student-t, Gaussian bumps] (normalised; q0's dropped when the model "
          "has no samplable base measure)",
          std::vector<double>{1.0, 1.0, 1.0}),
      KeySpec::number("student_t_dof", "degrees of freedom of the data-fitted Student-t proposal", 3.0)
          .positive(),
      KeySpec::integer("max_centres", "Gaussian bumps at most at this many inducing and data points", 1000)
          .at_least(1)
          .at_most(1e6),
      KeySpec::numbers(
          "bandwidth_factor",
          "the bumps' bandwidths as multiples of Silverman's rule: one family of bumps per factor, "
          "sharing the bumps' weight",
          std::vector<double>{1.0, 0.25}),
      KeySpec::integer("ais_particles", "AIS: particles (independent annealing runs)", 512)
          .at_least(2)
          .at_most(1e7),
      KeySpec::integer("ais_temperatures", "AIS: steps of the sigmoid schedule from β = 0 to 1", 200)
          .at_least(1)
          .at_most(1e6),
      KeySpec::integer("ais_leapfrog_steps", "AIS: leapfrog steps per HMC transition", 10)
          .at_least(1)
          .at_most(1e4),
      KeySpec::number("ais_step_size", "AIS: the pilot's initial HMC step size (then adapted)", 0.1)
          .positive(),
      KeySpec::integer("ais_pilot_particles", "AIS: particles of the pilot run that adapts the step sizes",
                       32)
          .at_least(1)
          .at_most(1e6),
      KeySpec::number("ais_target_acceptance", "AIS: the pilot's target HMC acceptance (< 1)", 0.65)
          .positive(),
      KeySpec::string("ais_start", "AIS: the distribution at β = 0", std::string("student_t"))
          .one_of({"student_t", "base_measure"}),
      split_key(),
      KeySpec::integer("samples", "importance-sampling proposals U for Ẑ (the budget)", 1000000).at_least(1),
      KeySpec::number("max_seconds",
                      "time budget for Ẑ's proposals, 0 = none; stops between chunks and keeps the longest "
                      "prefix of whole chunks, so the result equals a run with samples = proposals used",
                      0.0)
          .non_negative(),
      KeySpec::integer("chunk_size",
                       "proposals per chunk (chunk i draws from its own stream: part of the seed)", 4096)
          .at_least(1),
      KeySpec::number(
          "min_effective_samples",
          "a note warns that log Ẑ is unreliable when the proposals' effective sample size is below this",
          100.0)
          .at_least(0.0),
      KeySpec::boolean("bias_bound", "estimate DKEF Proposition 1's bound on the bias of log Ẑ", true),
      KeySpec::number("bound_percentile", "s is this quantile of the first bound sample (< 0.5)", 0.4)
          .positive(),
      KeySpec::integer("bound_percentile_samples", "proposals of the sample giving s (all kept in memory)",
                       100000)
          .at_least(1),
      KeySpec::integer("bound_rho_samples", "proposals of the independent sample giving ρ >= P(r <= s)",
                       100000)
          .at_least(1),
      KeySpec::number("bound_confidence", "confidence of the Hoeffding upper bound ρ (< 1)", 0.999)
          .positive(),
      KeySpec::integer("bound_variance_samples", "proposals of the independent sample giving Z and Var[r]",
                       100000)
          .at_least(2),
      // Quadrature keys have no declared default (the documented ones apply) so that giving one with
      // method = "importance" is recognisable as a mistake.
      KeySpec::integer("grid", "quadrature: cells per dimension (default " + std::to_string(kDefaultGrid1) +
                                   " in 1-D, " + std::to_string(kDefaultGrid2) +
                                   " in 2-D); the error estimate uses grid/2 as well")
          .at_least(static_cast<double>(kMinGrid))
          .at_most(static_cast<double>(kMaxGrid))
          .optional(),
      KeySpec::numbers(
          "extent",
          "quadrature: the box, [xmin, xmax] (1-D) or [xmin, xmax, ymin, ymax] (2-D); default: the "
          "training data's range padded by pad_range·range + pad_std·std on each side")
          .optional(),
      KeySpec::number("pad_range",
                      "quadrature: default box padding, as a fraction of the data's range (default 0.25)")
          .non_negative()
          .optional(),
      KeySpec::number("pad_std", "quadrature: default box padding, in data standard deviations (default 3)")
          .non_negative()
          .optional(),
      KeySpec::number(
          "boundary_tolerance",
          "quadrature: warn when the boundary band (the outer 1/32 of the box on each side) holds more "
          "than this fraction of the mass (default 1e-6)")
          .positive()
          .optional(),
  };
}

}  // namespace kef::likelihood
