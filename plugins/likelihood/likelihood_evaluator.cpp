#include "likelihood_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef::likelihood {

namespace {

constexpr Index kRowChunk = 4096;

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

// log p~ of every row, in parallel over fixed row chunks; the first non-finite row (in row order,
// whatever the threads) is an error naming it, never averaged away.
Vector log_unnormalized_rows(const Model& model, const Matrix& X, int threads, const std::string& split,
                             const std::string& model_name) {
  const Index n = X.rows(), chunks = (n + kRowChunk - 1) / kRowChunk;
  Vector out(n);
  parallel_for(chunks, threads, [&](Index c) {
    const Index begin = c * kRowChunk, len = std::min(kRowChunk, n - begin);
    out.segment(begin, len) = model.log_unnormalized(X.middleRows(begin, len));
  });
  for (Index i = 0; i < n; ++i)
    if (!std::isfinite(out[i]))
      throw NumericalError("log_likelihood: log p~ of model " + model_name + " is not finite (" + fmt(out[i]) +
                           ") at " + split + " row " + std::to_string(i));
  return out;
}

}  // namespace

KeyList likelihood_keys() {
  return {
      KeySpec::string("split", "which split to evaluate on", std::string("test")).one_of({"test", "validation", "train"}),
      KeySpec::integer("samples", "importance-sampling proposals U for Ẑ (the budget)", 1000000).at_least(1),
      KeySpec::number("max_seconds",
                      "time budget for Ẑ's proposals, 0 = none; stops between chunks and keeps the longest "
                      "prefix of whole chunks, so the result equals a run with samples = proposals used",
                      0.0)
          .non_negative(),
      KeySpec::integer("chunk_size", "proposals per chunk (chunk i draws from its own stream: part of the seed)", 4096)
          .at_least(1),
      KeySpec::number("min_effective_samples",
                      "a note warns that log Ẑ is unreliable when the proposals' effective sample size is below this",
                      100.0)
          .at_least(0.0),
      KeySpec::boolean("bias_bound", "estimate DKEF Proposition 1's bound on the bias of log Ẑ", true),
      KeySpec::number("bound_percentile", "s is this quantile of the first bound sample (< 0.5)", 0.4).positive(),
      KeySpec::integer("bound_percentile_samples", "proposals of the sample giving s (all kept in memory)", 100000)
          .at_least(1),
      KeySpec::integer("bound_rho_samples", "proposals of the independent sample giving ρ >= P(r <= s)", 100000)
          .at_least(1),
      KeySpec::number("bound_confidence", "confidence of the Hoeffding upper bound ρ (< 1)", 0.999).positive(),
      KeySpec::integer("bound_variance_samples", "proposals of the independent sample giving Z and Var[r]", 100000)
          .at_least(2),
  };
}

LikelihoodEvaluator::LikelihoodEvaluator(const Config& cfg)
    : cfg_(cfg),
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
      bound_variance_samples_(cfg.integer("bound_variance_samples")) {
  // Proposition 1 needs P(r <= s) < 1/2.
  if (!(bound_percentile_ < 0.5)) cfg.fail("bound_percentile", "must be below 0.5 (got " + fmt(bound_percentile_) + ")");
  if (!(bound_confidence_ < 1.0)) cfg.fail("bound_confidence", "must be below 1 (got " + fmt(bound_confidence_) + ")");
}

EvaluationResult LikelihoodEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = split_ == "test" ? in.data.test : split_ == "validation" ? in.data.validation : in.data.train;
  if (X.rows() == 0) cfg_.fail("split", "the " + split_ + " split is empty");
  const Index D = in.model.dim();
  if (X.cols() != D)
    throw DataError("log_likelihood: model " + in.model_name + " has dimension " + std::to_string(D) + ", the " +
                    split_ + " data " + std::to_string(X.cols()));
  const std::optional<double> exact = in.model.log_normalizer();
  const BaseMeasure* base = in.model.base_measure();
  if (!exact && (!base || !base->can_sample()))
    cfg_.fail("type", "the base measure of model " + in.model_name +
                          (base ? " (" + base->type_name() + ")" : std::string()) +
                          " cannot be sampled, so Z cannot be estimated by importance sampling (the model does not "
                          "know its normaliser either)");
  if (!exact) base->check_dimension(D);  // before the expensive work

  EvaluationResult r;
  const Vector log_p = log_unnormalized_rows(in.model, X, in.threads, split_, in.model_name);
  const double mean_log_p = log_p.sum() / static_cast<double>(log_p.size());
  const std::string task = "log_likelihood " + in.model_name;

  if (exact) {
    if (!std::isfinite(*exact))
      throw NumericalError("log_likelihood: model " + in.model_name + " reports a non-finite log normaliser");
    r.metrics = {{"log_likelihood", mean_log_p - *exact}, {"log_normalizer", *exact}, {"log_normalizer_stderr", 0.0},
                 {"bias_bound", 0.0}, {"proposals", 0.0}};
    r.notes.push_back("model " + in.model_name + " knows its normaliser exactly: log Z = " + fmt(*exact) +
                      ", no sampling (stderr and bias bound 0; proposals_per_second omitted)");
    r.summary = task + ": exact log Z = " + fmt(*exact);
    return r;
  }

  const ProposalSource source(in.model, *base, "log_likelihood on model " + in.model_name);
  ChunkPlan plan{samples_, chunk_size_, in.threads, max_seconds_, &in.progress, task};
  const MomentsRun run = sample_moments(source, in.rng.derive("proposals"), plan);
  if (!run.moments.has_mass())
    throw NumericalError("log_likelihood: every one of the " + std::to_string(run.report.used) +
                         " proposals of model " + in.model_name + " has p~ = 0, so log Ẑ = −inf");
  const double log_z = run.moments.log_mean();
  const double stderr_log_z = run.moments.log_mean_stderr();
  const Index used = run.report.used;
  if (run.report.stopped_early)
    r.notes.push_back("time budget max_seconds = " + fmt(max_seconds_) + " reached: Ẑ uses " + std::to_string(used) +
                      " of " + std::to_string(samples_) + " proposals (the first " +
                      std::to_string(used / chunk_size_ + (used % chunk_size_ ? 1 : 0)) +
                      " whole chunks; samples = " + std::to_string(used) + " without a time budget reproduces it)");

  std::optional<BoundResult> bound;
  if (bias_bound_) bound = estimate_bound(in, source, used, run.report.min_log_ratio, r);

  r.metrics.emplace_back("log_likelihood", mean_log_p - log_z);
  r.metrics.emplace_back("log_normalizer", log_z);
  r.metrics.emplace_back("log_normalizer_stderr", stderr_log_z);
  const double ess = run.moments.effective_sample_size();
  r.metrics.emplace_back("effective_sample_size", ess);
  // A base measure that rarely reaches the model's mass (a learned, narrow q0) gives a Ẑ carried by a
  // handful of proposals, typically far too small: say so rather than print a confident number.
  if (ess < min_effective_samples_)
    r.notes.push_back("warning: log Ẑ of model " + in.model_name + " rests on an effective sample size of " + fmt(ess) +
                      " of " + std::to_string(used) +
                      " proposals (below min_effective_samples = " + fmt(min_effective_samples_) +
                      "): the base measure rarely proposes where the model puts its mass, so log Ẑ is unreliable "
                      "(usually too small, making log_likelihood too high); use more samples or a wider base measure");
  if (bound) r.metrics.emplace_back("bias_bound", bound->value);
  r.metrics.emplace_back("proposals", static_cast<double>(used));
  const double rate = static_cast<double>(used) / std::max(run.report.seconds, 1e-9);
  r.metrics.emplace_back("proposals_per_second", rate);

  std::ostringstream os;
  os << task << ": log Ẑ = " << fmt(log_z) << " ± " << fmt(stderr_log_z) << " from " << used << " proposals in "
     << fmt(run.report.seconds) << " s (" << fmt(rate) << "/s)";
  if (bound)
    os << "; bias bound " << fmt(bound->value) << " = variance term " << fmt(bound->variance_term)
       << " + exponential term " << fmt(bound->exponential_term) << " (log t = " << fmt(bound->log_t)
       << ", log Z = " << fmt(bound->log_z) << ")";
  r.summary = os.str();
  in.progress.done(task, "log Ẑ = " + fmt(log_z) + " from " + std::to_string(used) + " proposals");
  return r;
}

std::optional<BoundResult> LikelihoodEvaluator::estimate_bound(const EvalInput& in, const ProposalSource& source,
                                                               Index used, double min_log_ratio,
                                                               EvaluationResult& out) const {
  const std::optional<double> log_a = in.model.log_ratio_lower_bound();
  if (!log_a || !std::isfinite(*log_a)) {
    out.notes.push_back("bias_bound not available: model " + in.model_name +
                        " gives no almost-sure lower bound a of r = p~/q0, which DKEF Proposition 1 needs "
                        "(e.g. a kernel bounded in [0, 1])");
    return std::nullopt;
  }
  const std::string task = "log_likelihood " + in.model_name + " bias bound";
  auto plan_for = [&](Index n) { return ChunkPlan{n, chunk_size_, in.threads, 0.0, &in.progress, task}; };

  // s: the percentile of a first sample (compared in log space: log is monotone).
  StreamReport rep_s, rep_rho;
  Vector log_r = sample_log_ratios(source, in.rng.derive("bound_percentile"), plan_for(bound_percentile_samples_),
                                   &rep_s);
  const Index n1 = log_r.size();
  const auto k = std::clamp<Index>(
      static_cast<Index>(std::ceil(bound_percentile_ * static_cast<double>(n1))) - 1, 0, n1 - 1);
  std::nth_element(log_r.data(), log_r.data() + k, log_r.data() + n1);
  const double log_s = log_r[k];

  // ρ: Hoeffding upper bound on P(r <= s) from a second, independent sample.
  const Index below = count_at_most(source, in.rng.derive("bound_rho"), plan_for(bound_rho_samples_), log_s,
                                    &rep_rho);
  const double rho = hoeffding_upper(below, bound_rho_samples_, bound_confidence_);

  // Z and Var[r] from a third.
  const MomentsRun var = sample_moments(source, in.rng.derive("bound_variance"), plan_for(bound_variance_samples_));

  // A model whose claimed bound fails on its own proposals would make the bound meaningless.
  const double seen_min = std::min({min_log_ratio, rep_s.min_log_ratio, rep_rho.min_log_ratio,
                                    var.report.min_log_ratio});
  if (seen_min < *log_a - 1e-9 * std::max(1.0, std::abs(*log_a))) {
    out.notes.push_back("bias_bound not available: model " + in.model_name + " claims log r >= " + fmt(*log_a) +
                        ", but a proposal has log r = " + fmt(seen_min));
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
  out.notes.push_back("bias bound (DKEF Proposition 1) for model " + in.model_name + ": log a = " + fmt(*log_a) +
                      ", log s = " + fmt(log_s) + " (quantile " + fmt(bound_percentile_) + " of " +
                      std::to_string(n1) + "), ρ = " + fmt(rho) + " (" + std::to_string(below) + " of " +
                      std::to_string(bound_rho_samples_) + " at most s), log Z = " + fmt(b.log_z) +
                      " and Var[r]/Z² = " + fmt(var.moments.shifted_variance() / (var.moments.mean * var.moments.mean)) +
                      " from " + std::to_string(bound_variance_samples_) + "; variance term " + fmt(b.variance_term) +
                      ", exponential term " + fmt(b.exponential_term));
  return b;
}

}  // namespace kef::likelihood
