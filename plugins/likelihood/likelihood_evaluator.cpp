#include "likelihood_evaluator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef::likelihood {

namespace {

constexpr Index kRowChunk = 4096;
constexpr Index kDefaultGrid1 = 4096;
constexpr Index kDefaultGrid2 = 512;
constexpr Index kMinGrid = 16;        // grid/2 >= 8 cells for the error estimate
constexpr Index kMaxGrid = 1 << 20;   // keeps grid^D far from overflowing an Index
constexpr Index kMaxQuadratureDim = 2;
constexpr Index kBandDivisor = 32;  // the boundary band is the outer 1/32 of the box on each side
const char* const kQuadratureKeys[] = {"grid", "extent", "pad_range", "pad_std", "boundary_tolerance"};

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

std::string box_text(const Box& box) {
  std::string s;
  for (Index d = 0; d < box.dim(); ++d)
    s += (d ? " x [" : "[") + fmt(box.lo[static_cast<std::size_t>(d)]) + ", " +
         fmt(box.hi[static_cast<std::size_t>(d)]) + "]";
  return s;
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
      KeySpec::string("method",
                      "how Z is estimated: importance sampling from the base measure, or the midpoint rule on a box "
                      "(D <= 2)",
                      std::string("importance"))
          .one_of({"importance", "quadrature"}),
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
      // Quadrature keys have no declared default (the documented ones apply) so that giving one with
      // method = "importance" is recognisable as a mistake.
      KeySpec::integer("grid",
                       "quadrature: cells per dimension (default " + std::to_string(kDefaultGrid1) + " in 1-D, " +
                           std::to_string(kDefaultGrid2) + " in 2-D); the error estimate uses grid/2 as well")
          .at_least(static_cast<double>(kMinGrid))
          .at_most(static_cast<double>(kMaxGrid))
          .optional(),
      KeySpec::numbers("extent",
                       "quadrature: the box, [xmin, xmax] (1-D) or [xmin, xmax, ymin, ymax] (2-D); default: the "
                       "training data's range padded by pad_range·range + pad_std·std on each side")
          .optional(),
      KeySpec::number("pad_range", "quadrature: default box padding, as a fraction of the data's range (default 0.25)")
          .non_negative()
          .optional(),
      KeySpec::number("pad_std", "quadrature: default box padding, in data standard deviations (default 3)")
          .non_negative()
          .optional(),
      KeySpec::number("boundary_tolerance",
                      "quadrature: warn when the boundary band (the outer 1/32 of the box on each side) holds more "
                      "than this fraction of the mass (default 1e-6)")
          .positive()
          .optional(),
  };
}

LikelihoodEvaluator::LikelihoodEvaluator(const Config& cfg, Index dim)
    : cfg_(cfg),
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
      bound_variance_samples_(cfg.integer("bound_variance_samples")) {
  // Proposition 1 needs P(r <= s) < 1/2.
  if (!(bound_percentile_ < 0.5)) cfg.fail("bound_percentile", "must be below 0.5 (got " + fmt(bound_percentile_) + ")");
  if (!(bound_confidence_ < 1.0)) cfg.fail("bound_confidence", "must be below 1 (got " + fmt(bound_confidence_) + ")");
  if (method_ != "quadrature") {
    for (const char* key : kQuadratureKeys)
      if (cfg.has(key)) cfg.fail(key, std::string("applies only to method = \"quadrature\" (method is \"") + method_ + "\")");
    return;
  }
  if (cfg.has("grid")) grid_ = cfg.integer("grid");
  if (cfg.has("pad_range")) pad_range_ = cfg.number("pad_range");
  if (cfg.has("pad_std")) pad_std_ = cfg.number("pad_std");
  if (cfg.has("boundary_tolerance")) boundary_tolerance_ = cfg.number("boundary_tolerance");
  if (!(std::isfinite(pad_range_) && std::isfinite(pad_std_)))
    cfg.fail(cfg.has("pad_range") && !std::isfinite(pad_range_) ? "pad_range" : "pad_std", "must be finite");
  if (!(boundary_tolerance_ < 1.0))
    cfg.fail("boundary_tolerance", "must be below 1 (a fraction of the mass; got " + fmt(boundary_tolerance_) + ")");
  if (cfg.has("extent")) {
    extent_ = cfg.numbers("extent");
    if (extent_.size() % 2 != 0 || extent_.empty())
      cfg.fail("extent", "must list [min, max] for each dimension: 2 numbers in 1-D, 4 in 2-D (got " +
                             std::to_string(extent_.size()) + ")");
    for (std::size_t i = 0; i < extent_.size(); i += 2)
      if (!(std::isfinite(extent_[i]) && std::isfinite(extent_[i + 1]) && extent_[i] < extent_[i + 1]))
        cfg.fail("extent", "dimension " + std::to_string(i / 2) + ": needs finite min < max (got [" + fmt(extent_[i]) +
                               ", " + fmt(extent_[i + 1]) + "])");
  }
  if (dim > 0) check_quadrature_dimension(dim);
}

void LikelihoodEvaluator::check_quadrature_dimension(Index D) const {
  if (D > kMaxQuadratureDim)
    cfg_.fail("method", "\"quadrature\" integrates over a grid and is offered for dimension 1 or 2 only; the data has "
                        "dimension " + std::to_string(D) + " (use method = \"importance\")");
  if (!extent_.empty() && static_cast<Index>(extent_.size()) != 2 * D)
    cfg_.fail("extent", "has " + std::to_string(extent_.size()) + " numbers; dimension " + std::to_string(D) +
                            " needs " + std::to_string(2 * D) + " ([min, max] per dimension)");
}

EvaluationResult LikelihoodEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = split_ == "test" ? in.data.test : split_ == "validation" ? in.data.validation : in.data.train;
  if (X.rows() == 0) cfg_.fail("split", "the " + split_ + " split is empty");
  const Index D = in.model.dim();
  if (X.cols() != D)
    throw DataError("log_likelihood: model " + in.model_name + " has dimension " + std::to_string(D) + ", the " +
                    split_ + " data " + std::to_string(X.cols()));
  const bool quadrature = method_ == "quadrature";
  if (quadrature) check_quadrature_dimension(D);
  const std::optional<double> exact = in.model.log_normalizer();
  const BaseMeasure* base = in.model.base_measure();
  if (!exact && !quadrature && (!base || !base->can_sample()))
    cfg_.fail("type", "the base measure of model " + in.model_name +
                          (base ? " (" + base->type_name() + ")" : std::string()) +
                          " cannot be sampled, so Z cannot be estimated by importance sampling (the model does not "
                          "know its normaliser either)");
  if (!exact && !quadrature) base->check_dimension(D);  // before the expensive work

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
  if (quadrature) {
    evaluate_quadrature(in, mean_log_p, r);
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

Box LikelihoodEvaluator::quadrature_box(const EvalInput& in, const Matrix& evaluated, EvaluationResult& out) const {
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
  const bool from_train = in.data.train.rows() > 0;
  const Matrix& X = from_train ? in.data.train : evaluated;
  if (!from_train)
    out.notes.push_back("quadrature box from the " + split_ + " rows (there is no training split)");
  for (Index d = 0; d < D; ++d) {
    const auto col = X.col(d);
    const double lo = col.minCoeff(), hi = col.maxCoeff(), mean = col.mean();
    const double sd = X.rows() > 1 ? std::sqrt((col.array() - mean).square().sum() / static_cast<double>(X.rows() - 1))
                                   : 0.0;
    const double pad = pad_range_ * (hi - lo) + pad_std_ * sd;
    if (!(pad > 0.0) || !std::isfinite(pad))
      cfg_.fail("extent", "the default box is empty in dimension " + std::to_string(d) + " (the " +
                              (from_train ? std::string("training") : split_) +
                              " data's range and std are 0 there, or the padding is 0): give the box explicitly");
    box.lo.push_back(lo - pad);
    box.hi.push_back(hi + pad);
  }
  return box;
}

void LikelihoodEvaluator::evaluate_quadrature(const EvalInput& in, double mean_log_p, EvaluationResult& out) const {
  const Matrix& X = split_ == "test" ? in.data.test : split_ == "validation" ? in.data.validation : in.data.train;
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
  const GridIntegral fine =
      midpoint_log_integral(in.model, box, n, band, in.threads, in.model_name, &in.progress, task + " (quadrature)");
  if (fine.log_integral == -std::numeric_limits<double>::infinity())
    throw NumericalError("log_likelihood: p~ of model " + in.model_name + " is 0 at every one of the " +
                         std::to_string(fine.cells) + " quadrature cells, so log Ẑ = −inf (the box " +
                         box_text(box) + " misses the model's mass: set `extent`)");
  const GridIntegral coarse = midpoint_log_integral(in.model, box, n / 2, 1, in.threads, in.model_name, &in.progress,
                                                    task + " (quadrature, grid/2)");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double log_z = fine.log_integral;
  // The coarse rule's error dominates the fine one's (by orders of magnitude for smooth integrands,
  // by about 2 for integrands that jump), so their difference is a conservative error estimate.
  const double error = coarse.log_integral == -std::numeric_limits<double>::infinity()
                           ? std::numeric_limits<double>::infinity()
                           : std::abs(log_z - coarse.log_integral);
  if (!std::isfinite(error))
    throw NumericalError("log_likelihood: p~ of model " + in.model_name + " is 0 at every cell of the grid/2 = " +
                         std::to_string(n / 2) + " grid, so the quadrature error cannot be estimated (raise `grid`)");
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
                      (D == 2 ? "² " : " ") + "cells over " + box_text(box) + ", log Ẑ = " + fmt(log_z) +
                      ", grid/2 gives " + fmt(coarse.log_integral));
  if (log_fraction > std::log(boundary_tolerance_))
    out.notes.push_back("warning: the boundary band (the outer 1/32 of the box on each side) holds a fraction " +
                        fmt(std::exp(log_fraction)) +
                        " of model " + in.model_name + "'s mass on " + box_text(box) +
                        " (above boundary_tolerance = " + fmt(boundary_tolerance_) +
                        "): mass may lie outside the box, making log Ẑ too small; widen it with `extent` (or "
                        "pad_range / pad_std)");
  std::ostringstream os;
  os << task << ": quadrature log Ẑ = " << fmt(log_z) << " (error estimate " << fmt(error) << ", " << fine.cells
     << " + " << coarse.cells << " cells in " << fmt(seconds) << " s)";
  out.summary = os.str();
  in.progress.done(task, "log Ẑ = " + fmt(log_z) + " by quadrature");
}

}  // namespace kef::likelihood
