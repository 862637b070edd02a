#include "likelihood_evaluator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "kef/column_summary.hpp"
#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/lite_model.hpp"
#include "kef/memory_budget.hpp"
#include "kef/parallel.hpp"
#include "kef/student_t_proposal.hpp"
#include "kef/number_text.hpp"

namespace kef::likelihood {

namespace {

constexpr Index kRowChunk = 4096;
constexpr Index kMaxQuadratureDim = 2;
constexpr Index kBandDivisor = 32;  // the boundary band is the outer 1/32 of the box on each side
const char* const kQuadratureKeys[] = {"grid", "extent", "pad_range", "pad_std", "boundary_tolerance"};

std::string box_text(const Box& box) {
  std::string s;
  for (Index d = 0; d < box.dim(); ++d)
    s += (d ? " x [" : "[") + number_text(box.lo[static_cast<std::size_t>(d)]) + ", " +
         number_text(box.hi[static_cast<std::size_t>(d)]) + "]";
  return s;
}

// log p~ of every row, in parallel over fixed row chunks; the first non-finite row (in row order,
// whatever the threads) is an error naming it, never averaged away.
Vector log_unnormalized_rows(const Model& model, const Matrix& X, const Context& context,
                             const std::string& split, const std::string& model_name) {
  const Index n = X.rows();
  Vector out(n);
  parallel_for_chunks(n, kRowChunk, context.threads(), [&](Index begin, Index len) {
    out.segment(begin, len) = model.log_unnormalized(X.middleRows(begin, len));
  });
  for (Index i = 0; i < n; ++i)
    if (!std::isfinite(out[i]))
      throw NumericalError("log_likelihood: log p~ of model " + model_name + " is not finite (" +
                           number_text(out[i]) + ") at " + split + " row " + std::to_string(i));
  return out;
}

std::optional<double> find_metric(const EvaluationResult& r, const std::string& name) {
  for (const auto& [k, v] : r.metrics)
    if (k == name) return v;
  return std::nullopt;
}

}  // namespace

LikelihoodEvaluator::LikelihoodEvaluator(const Config& cfg, Index dim)
    : sites_(cfg),
      method_(cfg.string("method")),
      split_(cfg.string("split")),
      samples_(cfg.integer("samples")),
      max_seconds_(cfg.number("max_seconds")),
      chunk_size_(cfg.integer("chunk_size")),
      min_effective_samples_(cfg.number("min_effective_samples")),
      bias_bound_(cfg.boolean("bias_bound")),
      bound_percentile_(cfg.number("bound_percentile")),
      bound_percentile_samples_(cfg.integer("bound_percentile_samples")),
      bound_rho_samples_(cfg.integer("bound_rho_samples")),
      bound_confidence_(cfg.number("bound_confidence")),
      bound_variance_samples_(cfg.integer("bound_variance_samples")),
      check_(cfg.string("check")),
      tolerance_(cfg.number("tolerance")),
      strict_(cfg.boolean("strict")),
      bidirectional_(cfg.boolean("bidirectional")),
      ais_start_(cfg.string("ais_start")) {
  const std::vector<double> w = cfg.numbers("defensive_weights");
  if (w.size() != 3)
    cfg.fail("defensive_weights",
             "needs 3 weights, [q0, Student-t, Gaussian bumps] (got " + std::to_string(w.size()) + ")");
  for (double v : w)
    if (!(v >= 0.0) || !std::isfinite(v)) cfg.fail("defensive_weights", "weights must be finite and >= 0");
  if (!(w[1] + w[2] > 0.0))
    cfg.fail("defensive_weights",
             "the Student-t or the bumps need a positive weight (q0 alone is method = \"importance\")");
  defensive_.weight_base = w[0];
  defensive_.weight_student_t = w[1];
  defensive_.weight_centres = w[2];
  defensive_.dof = cfg.number("student_t_dof");
  defensive_.max_centres = cfg.integer("max_centres");
  defensive_.bandwidth_factors = cfg.numbers("bandwidth_factor");
  if (defensive_.bandwidth_factors.empty()) cfg.fail("bandwidth_factor", "needs at least one factor");
  for (double f : defensive_.bandwidth_factors)
    if (!(f > 0.0) || !std::isfinite(f)) cfg.fail("bandwidth_factor", "factors must be finite and > 0");
  ais_.particles = cfg.integer("ais_particles");
  ais_.temperatures = cfg.integer("ais_temperatures");
  ais_.leapfrog_steps = cfg.integer("ais_leapfrog_steps");
  ais_.step_size = cfg.number("ais_step_size");
  ais_.pilot_particles = cfg.integer("ais_pilot_particles");
  ais_.target_acceptance = cfg.number("ais_target_acceptance");
  if (!(ais_.target_acceptance < 1.0)) cfg.fail("ais_target_acceptance", "must be below 1");
  if (check_ == method_)
    cfg.fail("check", "must differ from method (\"" + method_ + "\"): a check must be independent");
  if (method_ == "quadrature" && check_ != "auto" && check_ != "none")
    cfg.fail("check", "quadrature has its own error estimate; use check = \"none\" (or \"auto\")");
  // Proposition 1 needs P(r <= s) < 1/2.
  if (!(bound_percentile_ < 0.5))
    cfg.fail("bound_percentile", "must be below 0.5 (got " + number_text(bound_percentile_) + ")");
  if (!(bound_confidence_ < 1.0))
    cfg.fail("bound_confidence", "must be below 1 (got " + number_text(bound_confidence_) + ")");
  if (method_ != "quadrature") {
    for (const char* key : kQuadratureKeys)
      if (cfg.has(key))
        cfg.fail(key, std::string("applies only to method = \"quadrature\" (method is \"") + method_ + "\")");
    return;
  }
  if (cfg.has("grid")) grid_ = cfg.integer("grid");
  if (cfg.has("pad_range")) pad_range_ = cfg.number("pad_range");
  if (cfg.has("pad_std")) pad_std_ = cfg.number("pad_std");
  if (cfg.has("boundary_tolerance")) boundary_tolerance_ = cfg.number("boundary_tolerance");
  if (!(std::isfinite(pad_range_) && std::isfinite(pad_std_)))
    cfg.fail(cfg.has("pad_range") && !std::isfinite(pad_range_) ? "pad_range" : "pad_std", "must be finite");
  if (!(boundary_tolerance_ < 1.0))
    cfg.fail("boundary_tolerance",
             "must be below 1 (a fraction of the mass; got " + number_text(boundary_tolerance_) + ")");
  if (cfg.has("extent")) {
    extent_ = cfg.numbers("extent");
    if (extent_.size() % 2 != 0 || extent_.empty())
      cfg.fail("extent", "must list [min, max] for each dimension: 2 numbers in 1-D, 4 in 2-D (got " +
                             std::to_string(extent_.size()) + ")");
    for (std::size_t i = 0; i < extent_.size(); i += 2)
      if (!(std::isfinite(extent_[i]) && std::isfinite(extent_[i + 1]) && extent_[i] < extent_[i + 1]))
        cfg.fail("extent", "dimension " + std::to_string(i / 2) + ": needs finite min < max (got [" +
                               number_text(extent_[i]) + ", " + number_text(extent_[i + 1]) + "])");
  }
  if (dim > 0) check_quadrature_dimension(dim);
}

void LikelihoodEvaluator::check_quadrature_dimension(Index D) const {
  if (D > kMaxQuadratureDim)
    sites_.fail(
        "method",
        "\"quadrature\" integrates over a grid and is offered for dimension 1 or 2 only; the data has "
        "dimension " +
            std::to_string(D) + " (use method = \"importance\")");
  if (!extent_.empty() && static_cast<Index>(extent_.size()) != 2 * D)
    sites_.fail("extent", "has " + std::to_string(extent_.size()) + " numbers; dimension " +
                              std::to_string(D) + " needs " + std::to_string(2 * D) +
                              " ([min, max] per dimension)");
}

struct LikelihoodEvaluator::Run {
  // Importance sampling from q0: what the bias bound and the throughput metrics need.
  std::unique_ptr<ProposalSource> q0_source;
  Index used = 0;
  double seconds = 0.0;
  double min_log_ratio = std::numeric_limits<double>::infinity();
  // Bidirectional AIS, when the model can be sampled exactly.
  std::optional<double> bdmc_lower, bdmc_upper;
};

void LikelihoodEvaluator::check(const DataShape& data) const {
  if (data.rows(split_) == 0) sites_.fail("split", "log_likelihood: the " + split_ + " split is empty");
  if (data.dim < 1) return;
  // What the method holds at once, before any of it is allocated: the quadrature's grid (the fine and
  // the coarse one), the bias bound's percentile sample (kept whole), AIS's particles (positions,
  // momenta, gradients, weights) and the Gaussian bumps of the defensive mixture; the proposals of Ẑ
  // are drawn in chunks, the chunks in flight per thread bounded.
  const double D = static_cast<double>(data.dim);
  if (method_ == "quadrature") {
    const double n = static_cast<double>(grid_ > 0 ? grid_ : (data.dim == 1 ? kDefaultGrid1 : kDefaultGrid2));
    const double cells = std::pow(n, std::min(D, 2.0));
    require_memory(8.0 * 4.0 * cells * (1.0 + D), sites_.where("grid"), "the quadrature grid (grid)");
    return;
  }
  if (bias_bound_)
    require_memory(8.0 * static_cast<double>(bound_percentile_samples_) * (D + 2.0),
                   sites_.where("bound_percentile_samples"), "the bias bound's percentile sample");
  require_memory(8.0 * 16.0 * static_cast<double>(chunk_size_) * (D + 2.0) *
                     static_cast<double>(std::max(1, default_threads())),
                 sites_.where("chunk_size"), "the proposal chunks in flight (chunk_size)");
  require_memory(8.0 * 4.0 * static_cast<double>(std::max(ais_.particles, ais_.pilot_particles)) * (D + 2.0),
                 sites_.where("ais_particles"), "AIS's particles (ais_particles)");
  require_memory(8.0 * static_cast<double>(defensive_.max_centres) * (D + 2.0) * 4.0, sites_.where("max_centres"),
                 "the defensive mixture's bumps (max_centres)");
}

void LikelihoodEvaluator::require_samplers(const EvalInput& in, const std::string& check) const {
  const BaseMeasure* base = in.model.base_measure();
  const bool base_ok = base && base->can_sample();
  if ((method_ == "importance" || check == "importance") && !base_ok)
    sites_.fail(
        method_ == "importance" ? "type" : "check",
        "the base measure of model " + in.model_name +
            (base ? " (" + base->type_name() + ")" : std::string()) +
            " cannot be sampled, so Z cannot be estimated by importance sampling from it (the model "
            "does not "
            "know its normaliser either; method = \"defensive\" or \"ais\" do not need it)");
  if ((method_ == "ais" || check == "ais") && ais_start_ == "base_measure" && !base_ok)
    sites_.fail("ais_start",
                "model " + in.model_name + " has no base measure that can be sampled (use \"student_t\")");
  if (base_ok) base->check_dimension(in.model.dim());
}

namespace {

// The result for a model that knows its normaliser: no sampling at all.
EvaluationResult exact_result(const EvalInput& in, double exact, double mean_log_p, const std::string& task) {
  EvaluationResult r;
  if (!std::isfinite(exact))
    throw NumericalError("log_likelihood: model " + in.model_name + " reports a non-finite log normaliser");
  r.metrics = {{"log_likelihood", mean_log_p - exact},
               {"log_normalizer", exact},
               {"log_normalizer_stderr", 0.0},
               {"bias_bound", 0.0},
               {"proposals", 0.0},
               {"reliable", 1.0}};
  r.notes.push_back("model " + in.model_name + " knows its normaliser exactly: log Z = " + number_text(exact) +
                    ", no sampling (stderr and bias bound 0; proposals_per_second omitted)");
  r.notes.push_back("reliable: true (exact normaliser)");
  r.summary = task + ": exact log Z = " + number_text(exact) + "; reliable";
  return r;
}

// The summary line of a sampled estimate: log Ẑ, the check, the bias bound and the AIS bounds.
std::string sampled_summary(const std::string& task, const std::string& method, const std::string& check,
                            const ReliabilityInputs& ri, const std::optional<BoundResult>& bound,
                            const std::optional<double>& bdmc_lower, const std::optional<double>& bdmc_upper) {
  const double log_z = ri.main.log_z;
  std::ostringstream os;
  os << task << ": log Ẑ = " << number_text(log_z) << " ± " << number_text(ri.main.stderr_log_z) << " (" << method << ", "
     << ri.main.draws << (method == "ais" ? " particles" : " proposals") << ", ESS " << number_text(ri.main.ess)
     << ")";
  if (ri.check) {
    if (ri.check->failed)
      os << "; check " << check << " failed";
    else
      os << "; check " << check << ": " << number_text(ri.check->log_z) << " ± " << number_text(ri.check->stderr_log_z)
         << " (ESS " << number_text(ri.check->ess) << ")";
  }
  if (bound)
    os << "; bias bound " << number_text(bound->value) << " = variance term " << number_text(bound->variance_term)
       << " + exponential term " << number_text(bound->exponential_term) << " (log t = " << number_text(bound->log_t)
       << ", log Z = " << number_text(bound->log_z) << ")";
  if (bdmc_lower && bdmc_upper)
    os << "; bidirectional AIS bounds [" << number_text(*bdmc_lower) << ", " << number_text(*bdmc_upper) << "]";
  return os.str();
}

}  // namespace

EvaluationResult LikelihoodEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = evaluation_rows(in, split_, sites_, "log_likelihood");
  const Index D = in.model.dim();
  const bool quadrature = method_ == "quadrature";
  if (quadrature) check_quadrature_dimension(D);
  const std::optional<double> exact = in.model.log_normalizer();
  const std::string check = check_ != "auto"         ? check_
                            : quadrature             ? std::string("none")
                            : method_ == "defensive" ? std::string("ais")
                                                     : std::string("defensive");
  // Every estimator this run needs must be usable before the expensive work starts.
  if (!exact && !quadrature) require_samplers(in, check);

  EvaluationResult r;
  const Vector log_p = log_unnormalized_rows(in.model, X, in.context, split_, in.model_name);
  const double mean_log_p = log_p.sum() / static_cast<double>(log_p.size());
  const std::string task = "log_likelihood " + in.model_name;

  if (exact) return exact_result(in, *exact, mean_log_p, task);
  if (quadrature) {
    evaluate_quadrature(in, mean_log_p, r);
    ReliabilityInputs ri;
    ri.main.method = "quadrature";
    ri.main.log_z = *find_metric(r, "log_normalizer");
    ri.main.stderr_log_z = *find_metric(r, "log_normalizer_error");
    ri.boundary_warning = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.rfind("warning: the boundary band", 0) == 0;
    });
    ri.tolerance = tolerance_;
    conclude(in, ri, r);
    return r;
  }

  // The data-fitted proposals are fitted to the training rows (where the model was asked to put its
  // mass); `kef eval` has none, and the evaluated rows stand in.
  // Read by position (kef/training_rows.hpp): a distributed run may leave the split in the data file.
  const TrainingRowsPtr train = in.data.training();
  const bool from_train = train->rows() >= 2;
  const MatrixRows evaluated(X);
  const TrainingRows& fit = from_train ? *train : static_cast<const TrainingRows&>(evaluated);
  if (!from_train && (method_ != "importance" || (check != "importance" && check != "none")))
    r.notes.push_back("data-fitted proposals fitted to the " + split_ + " rows (there is no training split)");

  Run run;
  ReliabilityInputs ri;
  ri.tolerance = tolerance_;
  ri.min_effective_samples = min_effective_samples_;
  ri.main = estimate(method_, true, in, fit, run, r);
  const double log_z = ri.main.log_z;
  // The likelihood first: it is the result; everything after it qualifies it.
  r.metrics.insert(r.metrics.begin(), {"log_likelihood", mean_log_p - log_z});

  std::optional<BoundResult> bound;
  if (method_ == "importance" && bias_bound_) {
    bound = estimate_bound(in, *run.q0_source, run.used, run.min_log_ratio, r);
    if (bound) {
      r.metrics.emplace_back("bias_bound", bound->value);
      ri.bias_bound = bound->value;
      ri.bound_sample_log_z = bound->log_z;
    }
  }
  if (check != "none") {
    EvaluationResult side;
    ri.check = estimate(check, false, in, fit, run, side);
    for (auto& [k, v] : side.metrics) r.metrics.emplace_back(k, v);
    for (auto& n : side.notes) r.notes.push_back(std::move(n));
    if (!ri.check->failed) {
      r.metrics.emplace_back("log_normalizer_disagreement", std::abs(log_z - ri.check->log_z));
    }
  }
  ri.bdmc_lower = run.bdmc_lower;
  ri.bdmc_upper = run.bdmc_upper;

  r.summary = sampled_summary(task, method_, check, ri, bound, run.bdmc_lower, run.bdmc_upper);
  in.context.progress().done(task, "log Ẑ = " + number_text(log_z) + " (" + method_ + ")");
  conclude(in, ri, r);
  return r;
}

NormalizerEstimate LikelihoodEvaluator::estimate(const std::string& method, bool is_main, const EvalInput& in,
                                                 const TrainingRows& fit, Run& run, EvaluationResult& out) const {
  NormalizerEstimate e;
  try {
    if (method == "importance")
      e = estimate_importance(is_main, in, run, out);
    else if (method == "defensive")
      e = estimate_defensive(is_main, in, fit, run, out);
    else
      e = estimate_ais(in, fit, run, out);
  } catch (const NumericalError& err) {
    // The main estimate's failure is the evaluation's; a check that fails makes the result
    // unreliable (with the reason) but does not hide the main estimate.
    if (is_main) throw;
    e.method = method;
    e.failed = true;
    e.failure = err.what();
    out.notes.push_back("the " + method + " check on model " + in.model_name + " failed: " + e.failure);
    return e;
  }
  const std::string p = is_main ? "" : "check_";
  if (is_main) {
    out.metrics.emplace_back("log_normalizer", e.log_z);
    out.metrics.emplace_back("log_normalizer_stderr", e.stderr_log_z);
    out.metrics.emplace_back("effective_sample_size", e.ess);
  } else {
    out.metrics.emplace_back("log_normalizer_check", e.log_z);
    out.metrics.emplace_back("log_normalizer_check_stderr", e.stderr_log_z);
    out.metrics.emplace_back("check_effective_sample_size", e.ess);
  }
  return e;
}

NormalizerEstimate LikelihoodEvaluator::estimate_importance(bool is_main, const EvalInput& in, Run& run,
                                                            EvaluationResult& out) const {
  const std::string task = "log_likelihood " + in.model_name;
  run.q0_source = std::make_unique<ProposalSource>(in.model, *in.model.base_measure(),
                                                   "log_likelihood on model " + in.model_name);
  ChunkPlan plan{samples_, chunk_size_, max_seconds_, &in.context.progress(), task};
  const MomentsRun mr =
      sample_moments(*run.q0_source, in.context.rng().derive("proposals"), plan, in.context);
  if (!mr.moments.has_mass())
    throw NumericalError("log_likelihood: every one of the " + std::to_string(mr.report.used) +
                         " proposals of model " + in.model_name + " has p~ = 0, so log Ẑ = −inf");
  run.used = mr.report.used;
  run.seconds = mr.report.seconds;
  run.min_log_ratio = mr.report.min_log_ratio;
  const Index used = mr.report.used;
  if (mr.report.stopped_early)
    out.notes.push_back("time budget max_seconds = " + number_text(max_seconds_) + " reached: Ẑ uses " +
                        std::to_string(used) + " of " + std::to_string(samples_) + " proposals (the first " +
                        std::to_string(used / chunk_size_ + (used % chunk_size_ ? 1 : 0)) +
                        " whole chunks; samples = " + std::to_string(used) +
                        " without a time budget reproduces it)");
  NormalizerEstimate e;
  e.method = "importance";
  e.log_z = mr.moments.log_mean();
  e.stderr_log_z = mr.moments.log_mean_stderr();
  e.ess = mr.moments.effective_sample_size();
  e.draws = used;
  // A base measure that rarely reaches the model's mass (a learned, narrow q0) gives a Ẑ carried by a
  // handful of proposals, typically far too small: say so rather than print a confident number.
  if (e.ess < min_effective_samples_)
    out.notes.push_back(
        "warning: log Ẑ of model " + in.model_name + " rests on an effective sample size of " + number_text(e.ess) +
        " of " + std::to_string(used) +
        " proposals (below min_effective_samples = " + number_text(min_effective_samples_) +
        "): the base measure rarely proposes where the model puts its mass, so log Ẑ is unreliable "
        "(usually too small, making log_likelihood too high); use more samples or a wider base measure");
  if (is_main) {
    out.metrics.emplace_back("proposals", static_cast<double>(used));
    out.metrics.emplace_back("proposals_per_second", static_cast<double>(used) / std::max(run.seconds, 1e-9));
  }
  return e;
}

NormalizerEstimate LikelihoodEvaluator::estimate_defensive(bool is_main, const EvalInput& in,
                                                           const TrainingRows& fit, Run&,
                                                           EvaluationResult& out) const {
  const std::string task = "log_likelihood " + in.model_name + " (defensive)";
  // Kernel models with inducing points get bumps there as well (where they can put mass).
  Matrix inducing(0, in.model.dim());
  if (const auto* lite = dynamic_cast<const LiteModel*>(&in.model)) inducing = lite->inducing_points();
  RandomStream centres_rng = in.context.rng().derive("defensive_centres");
  const MixtureProposal mixture =
      make_defensive_proposal(in.model.base_measure(), fit, inducing, defensive_, centres_rng);
  const ProposalSource source(in.model, mixture,
                              "log_likelihood (defensive mixture) on model " + in.model_name);
  ChunkPlan plan{samples_, chunk_size_, max_seconds_, &in.context.progress(), task};
  const MomentsRun mr = sample_moments(source, in.context.rng().derive("defensive"), plan, in.context);
  if (!mr.moments.has_mass())
    throw NumericalError("log_likelihood: every one of the " + std::to_string(mr.report.used) +
                         " defensive-mixture proposals of model " + in.model_name +
                         " has p~ = 0, so log Ẑ = −inf");
  NormalizerEstimate e;
  e.method = "defensive";
  e.log_z = mr.moments.log_mean();
  e.stderr_log_z = mr.moments.log_mean_stderr();
  e.ess = mr.moments.effective_sample_size();
  e.draws = mr.report.used;
  out.notes.push_back(std::string(is_main ? "log Ẑ" : "check") + " by importance sampling from the " +
                      mixture.describe() + ": " + number_text(e.log_z) + " ± " + number_text(e.stderr_log_z) + " from " +
                      std::to_string(e.draws) + " proposals, effective sample size " + number_text(e.ess) +
                      (mr.report.stopped_early ? " (stopped by max_seconds)" : ""));
  if (is_main) {
    out.metrics.emplace_back("proposals", static_cast<double>(e.draws));
    out.metrics.emplace_back("proposals_per_second",
                             static_cast<double>(e.draws) / std::max(mr.report.seconds, 1e-9));
  }
  return e;
}

NormalizerEstimate LikelihoodEvaluator::estimate_ais(const EvalInput& in, const TrainingRows& fit, Run& run,
                                                     EvaluationResult& out) const {
  std::unique_ptr<Proposal> start;
  if (ais_start_ == "base_measure")
    start = std::make_unique<BaseMeasureProposal>(*in.model.base_measure(), in.model.dim());
  else
    start = std::make_unique<StudentTProposal>(StudentTProposal::fit(summarize_columns(fit), defensive_.dof));
  AisOptions o = ais_;
  o.progress = &in.context.progress();
  o.task = "log_likelihood " + in.model_name + " (AIS)";
  const AisPilot pilot = ais_pilot(in.model, *start, in.context.rng().derive("ais_pilot"), o, in.context);
  const AisResult fwd = ais_forward(in.model, *start, pilot, in.context.rng().derive("ais"), o, in.context);
  if (!fwd.moments.has_mass())
    throw NumericalError("log_likelihood: every AIS weight of model " + in.model_name + " is 0");
  in.context.progress().done(o.task, "log Ẑ = " + number_text(fwd.log_z) + " ± " + number_text(fwd.log_z_stderr));
  NormalizerEstimate e;
  e.method = "ais";
  e.log_z = fwd.log_z;
  e.stderr_log_z = fwd.log_z_stderr;
  e.ess = fwd.effective_sample_size;
  e.draws = o.particles;
  out.metrics.emplace_back("ais_acceptance", fwd.mean_acceptance);
  out.metrics.emplace_back("ais_divergences", static_cast<double>(fwd.divergences));
  // Step sizes exist for the intermediate temperatures 1..T−1 only.
  const auto first = pilot.step_sizes.begin() + 1, last = pilot.step_sizes.end() - 1;
  const std::string steps = first < last ? "step sizes " + number_text(*std::min_element(first, last)) + " to " +
                                               number_text(*std::max_element(first, last))
                                         : std::string("no intermediate temperature");
  std::string note = "AIS from the " + start->describe() + " over " + std::to_string(o.temperatures) +
                     " temperatures, " + std::to_string(o.particles) + " particles, " +
                     std::to_string(o.leapfrog_steps) + " leapfrog steps (pilot acceptance " +
                     number_text(pilot.mean_acceptance) + ", " + steps + "): log Ẑ = " + number_text(e.log_z) + " ± " +
                     number_text(e.stderr_log_z) + ", ESS " + number_text(e.ess) + ", " + std::to_string(fwd.divergences) +
                     " divergent transitions, " + number_text(fwd.seconds) + " s";
  const bool exact_sampler = in.model.can_sample() && in.model.facets().has(Facet::Sampler);
  if (bidirectional_ && !exact_sampler && in.model.can_sample())
    note += "; reverse AIS skipped: the model's sampler is approximate (" +
            FacetSet(Facet::ApproximateSampler).text() + "), and only exact draws bound log Z from above";
  if (bidirectional_ && exact_sampler) {
    // Reverse AIS from exact samples: E w_rev = 1/Z, so −log mean w_rev is a stochastic upper bound,
    // the forward estimate a stochastic lower bound; together they bracket log Z.
    RandomStream exact_rng = in.context.rng().derive("ais_exact");
    const Matrix exact = in.model.sample(o.particles, exact_rng);
    const AisResult rev =
        ais_reverse(in.model, *start, pilot, exact, in.context.rng().derive("ais_reverse"), o, in.context);
    run.bdmc_lower = fwd.log_z;
    run.bdmc_upper = rev.log_z;
    out.metrics.emplace_back("log_normalizer_lower", fwd.log_z);
    out.metrics.emplace_back("log_normalizer_upper", rev.log_z);
    note += "; reverse AIS from " + std::to_string(o.particles) + " exact samples: upper bound " +
            number_text(rev.log_z) + " ± " + number_text(rev.log_z_stderr);
  }
  out.notes.push_back(note);
  return e;
}

void LikelihoodEvaluator::conclude(const EvalInput& in, const ReliabilityInputs& ri,
                                   EvaluationResult& out) const {
  const Reliability verdict = assess(ri);
  out.metrics.emplace_back("reliable", verdict.reliable ? 1.0 : 0.0);
  if (verdict.reliable) {
    out.notes.push_back("reliable: true (within tolerance = " + number_text(tolerance_) +
                        " nats by every available check)");
    out.summary += "; reliable";
    return;
  }
  const std::string why =
      "reliable: false: the log-likelihood of model " + in.model_name + " may be wrong: " + verdict.text();
  out.notes.push_back("warning: " + why);
  out.summary += "; WARNING " + why;
  if (strict_)
    throw NumericalError("log_likelihood on model " + in.model_name +
                         ": unreliable (strict = true): " + verdict.text());
}

std::optional<BoundResult> LikelihoodEvaluator::estimate_bound(const EvalInput& in,
                                                               const ProposalSource& source, Index used,
                                                               double min_log_ratio,
                                                               EvaluationResult& out) const {
  const std::optional<double> log_a = in.model.log_ratio_lower_bound();
  if (!log_a || !std::isfinite(*log_a)) {
    out.notes.push_back("bias_bound not available: model " + in.model_name +
                        " gives no almost-sure lower bound a of r = p~/q0, which DKEF Proposition 1 needs "
                        "(e.g. a kernel bounded in [0, 1])");
    return std::nullopt;
  }
  const std::string task = "log_likelihood " + in.model_name + " bias bound";
  auto plan_for = [&](Index n) { return ChunkPlan{n, chunk_size_, 0.0, &in.context.progress(), task}; };

  // s: the percentile of a first sample (compared in log space: log is monotone).
  StreamReport rep_s, rep_rho;
  Vector log_r = sample_log_ratios(source, in.context.rng().derive("bound_percentile"),
                                   plan_for(bound_percentile_samples_), in.context, &rep_s);
  const Index n1 = log_r.size();
  const auto k = std::clamp<Index>(
      static_cast<Index>(std::ceil(bound_percentile_ * static_cast<double>(n1))) - 1, 0, n1 - 1);
  std::nth_element(log_r.data(), log_r.data() + k, log_r.data() + n1);
  const double log_s = log_r[k];

  // ρ: Hoeffding upper bound on P(r <= s) from a second, independent sample.
  const Index below = count_at_most(source, in.context.rng().derive("bound_rho"),
                                    plan_for(bound_rho_samples_), in.context, log_s, &rep_rho);
  const double rho = hoeffding_upper(below, bound_rho_samples_, bound_confidence_);

  // Z and Var[r] from a third.
  const MomentsRun var = sample_moments(source, in.context.rng().derive("bound_variance"),
                                        plan_for(bound_variance_samples_), in.context);

  // A model whose claimed bound fails on its own proposals would make the bound meaningless.
  const double seen_min =
      std::min({min_log_ratio, rep_s.min_log_ratio, rep_rho.min_log_ratio, var.report.min_log_ratio});
  if (seen_min < *log_a - 1e-9 * std::max(1.0, std::abs(*log_a))) {
    out.notes.push_back("bias_bound not available: model " + in.model_name +
                        " claims log r >= " + number_text(*log_a) + ", but a proposal has log r = " + number_text(seen_min));
    return std::nullopt;
  }

  BoundInputs bi;
  bi.log_a = *log_a;
  bi.log_s = log_s;
  bi.rho = rho;
  bi.moments = var.moments;
  bi.proposals = used;
  BoundResult b = proposition1(bi);
  if (!b.available) {
    out.notes.push_back("bias_bound not available for model " + in.model_name + ": " + b.reason);
    return std::nullopt;
  }
  out.notes.push_back(
      "bias bound (DKEF Proposition 1) for model " + in.model_name + ": log a = " + number_text(*log_a) +
      ", log s = " + number_text(log_s) + " (quantile " + number_text(bound_percentile_) + " of " + std::to_string(n1) +
      "), ρ = " + number_text(rho) + " (" + std::to_string(below) + " of " + std::to_string(bound_rho_samples_) +
      " at most s), log Z = " + number_text(b.log_z) +
      " and Var[r]/Z² = " + number_text(var.moments.shifted_variance() / (var.moments.mean * var.moments.mean)) +
      " from " + std::to_string(bound_variance_samples_) + "; variance term " + number_text(b.variance_term) +
      ", exponential term " + number_text(b.exponential_term));
  return b;
}

Box LikelihoodEvaluator::quadrature_box(const EvalInput& in, const Matrix& evaluated,
                                        EvaluationResult& out) const {
  const Index D = in.model.dim();
  Box box;
  if (!extent_.empty()) {
    for (Index d = 0; d < D; ++d) {
      box.lo.push_back(extent_[static_cast<std::size_t>(2 * d)]);
      box.hi.push_back(extent_[static_cast<std::size_t>(2 * d + 1)]);
    }
    return box;
  }
  // The training split describes where the model was asked to put its mass; `kef eval` has none, and
  // then the evaluated rows stand in for it.
  // Its summary is read in blocks (kef/column_summary.hpp): a distributed run may leave it in the file.
  const bool from_train = in.data.train_count() > 0;
  const ColumnSummary s = from_train ? summarize_columns(*in.data.training()) : summarize_columns(evaluated);
  if (!from_train)
    out.notes.push_back("quadrature box from the " + split_ + " rows (there is no training split)");
  const Vector sds = s.sd();
  for (Index d = 0; d < D; ++d) {
    const double lo = s.min[d], hi = s.max[d], sd = sds[d];
    const double pad = pad_range_ * (hi - lo) + pad_std_ * sd;
    if (!(pad > 0.0) || !std::isfinite(pad))
      sites_.fail("extent",
                  "the default box is empty in dimension " + std::to_string(d) + " (the " +
                      (from_train ? std::string("training") : split_) +
                      " data's range and std are 0 there, or the padding is 0): give the box explicitly");
    box.lo.push_back(lo - pad);
    box.hi.push_back(hi + pad);
  }
  return box;
}

void LikelihoodEvaluator::evaluate_quadrature(const EvalInput& in, double mean_log_p,
                                              EvaluationResult& out) const {
  const Matrix& X = evaluation_rows(in, split_, sites_, "log_likelihood");
  const Index D = in.model.dim();
  const Index n = grid_ > 0 ? grid_ : (D == 1 ? kDefaultGrid1 : kDefaultGrid2);
  const Box box = quadrature_box(in, X, out);
  const std::string task = "log_likelihood " + in.model_name;
  const auto start = std::chrono::steady_clock::now();
  // The band is a fixed fraction of the box, not one cell: the mass of a decaying tail in a band of
  // width w relates to the mass beyond the box independently of the grid (for a Gaussian tail at
  // distance d, scale s, the mass beyond is about s²/(w·d) times the band's), whereas a one-cell band
  // would shrink with h and look ever more reassuring on finer grids.
  const Index band = std::max<Index>(1, (n + kBandDivisor - 1) / kBandDivisor);
  const GridIntegral fine = midpoint_log_integral(in.model, box, n, band, in.context, in.model_name,
                                                  &in.context.progress(), task + " (quadrature)");
  if (fine.log_integral == -std::numeric_limits<double>::infinity())
    throw NumericalError("log_likelihood: p~ of model " + in.model_name + " is 0 at every one of the " +
                         std::to_string(fine.cells) + " quadrature cells, so log Ẑ = −inf (the box " +
                         box_text(box) + " misses the model's mass: set `extent`)");
  const GridIntegral coarse = midpoint_log_integral(in.model, box, n / 2, 1, in.context, in.model_name,
                                                    &in.context.progress(), task + " (quadrature, grid/2)");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double log_z = fine.log_integral;
  // The coarse rule's error dominates the fine one's (by orders of magnitude for smooth integrands,
  // by about 2 for integrands that jump), so their difference is a conservative error estimate.
  const double error = coarse.log_integral == -std::numeric_limits<double>::infinity()
                           ? std::numeric_limits<double>::infinity()
                           : std::abs(log_z - coarse.log_integral);
  if (!std::isfinite(error))
    throw NumericalError("log_likelihood: p~ of model " + in.model_name +
                         " is 0 at every cell of the grid/2 = " + std::to_string(n / 2) +
                         " grid, so the quadrature error cannot be estimated (raise `grid`)");
  out.metrics.emplace_back("log_likelihood", mean_log_p - log_z);
  out.metrics.emplace_back("log_normalizer", log_z);
  out.metrics.emplace_back("log_normalizer_error", error);
  const double log_fraction = fine.log_band - log_z;
  if (std::isfinite(log_fraction))
    out.metrics.emplace_back("boundary_log_mass", log_fraction);
  else
    out.notes.push_back("boundary_log_mass omitted for model " + in.model_name +
                        ": p~ is exactly 0 on the boundary band (the outer 1/32 of the box)");
  out.metrics.emplace_back("grid_points", static_cast<double>(fine.cells));
  out.notes.push_back("quadrature for model " + in.model_name + ": midpoint rule on " + std::to_string(n) +
                      (D == 2 ? "² " : " ") + "cells over " + box_text(box) + ", log Ẑ = " + number_text(log_z) +
                      ", grid/2 gives " + number_text(coarse.log_integral));
  if (log_fraction > std::log(boundary_tolerance_))
    out.notes.push_back(
        "warning: the boundary band (the outer 1/32 of the box on each side) holds a fraction " +
        number_text(std::exp(log_fraction)) + " of model " + in.model_name + "'s mass on " + box_text(box) +
        " (above boundary_tolerance = " + number_text(boundary_tolerance_) +
        "): mass may lie outside the box, making log Ẑ too small; widen it with `extent` (or "
        "pad_range / pad_std)");
  std::ostringstream os;
  os << task << ": quadrature log Ẑ = " << number_text(log_z) << " (error estimate " << number_text(error) << ", "
     << fine.cells << " + " << coarse.cells << " cells in " << number_text(seconds) << " s)";
  out.summary = os.str();
  in.context.progress().done(task, "log Ẑ = " + number_text(log_z) + " by quadrature");
}

}  // namespace kef::likelihood
