#include "mmd_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "kef/bandwidth_rule.hpp"
#include "kef/base_measure.hpp"
#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/number_text.hpp"
#include "mmd_statistic.hpp"

namespace kef::mmd {
const OptionsSpec<MmdOptions>& mmd_options() {
  using O = MmdOptions;
  static const OptionsSpec<O> spec = [] {
    const HmcOptions d;
    OptionsSpec<O> s;
    s.bind(split_key("held-out split the model samples are compared with"), &O::split);
    s.integer("samples", &O::samples, "number of model samples (default: the size of the split)")
        .optional()
        .at_least(2);
    s.number("bandwidth", &O::bandwidth, "Gaussian kernel length scale σ (default: bandwidth_rule)")
        .optional()
        .positive();
    s.string(
         "bandwidth_rule", &O::bandwidth_rule,
         "how σ is chosen when `bandwidth` is absent: \"median\" (median pairwise distance of the pooled "
         "sample, up to 500 rows of each side) or \"bkl\" (Bayesian kernel learning on the pooled sample, "
         "docs/math.md §9)")
        .optional()
        .one_of({"median", "bkl"});
    s.integer("permutations", &O::permutations, "random relabellings for the p-value (0: no p-value)", 200)
        .non_negative();
    s.integer("hmc_chains", &O::hmc_chains, "HMC chains (models without an exact sampler)", d.chains)
        .at_least(1);
    s.integer("hmc_warmup", &O::hmc_warmup, "HMC warm-up iterations per chain (discarded)", d.warmup)
        .non_negative();
    s.integer("hmc_leapfrog_steps", &O::hmc_leapfrog_steps, "leapfrog steps per HMC iteration",
              d.leapfrog_steps)
        .at_least(1);
    s.number("hmc_step_size", &O::hmc_step_size, "initial leapfrog step size (adapted in warm-up)",
             d.step_size)
        .positive();
    s.number("hmc_target_acceptance", &O::hmc_target_acceptance,
             "acceptance rate the step-size adaptation aims at", d.target_acceptance)
        .positive()
        .at_most(0.99);
    s.number("hmc_step_size_jitter", &O::hmc_step_size_jitter, "each iteration uses step·U(1 − j, 1 + j)",
             d.step_size_jitter)
        .non_negative()
        .at_most(0.9);
    s.integer("hmc_thinning", &O::hmc_thinning, "keep every k-th HMC draw", d.thinning).at_least(1);
    s.boolean("hmc_adapt_mass", &O::hmc_adapt_mass, "estimate a diagonal mass matrix in warm-up",
              d.adapt_mass);
    s.integer("hmc_chains_per_batch", &O::hmc_chains_per_batch,
              "chains advanced together in one model evaluation", d.chains_per_batch)
        .at_least(1);
    s.string("hmc_init", &O::hmc_init,
             "HMC starting points: random training rows, or draws from the model's base measure",
             std::string("train"))
        .one_of({"train", "base_measure"});
    return s;
  }();
  return spec;
}

KeyList mmd_keys() { return mmd_options().keys(); }

MmdEvaluator::MmdEvaluator(const Config& cfg, const BuildContext& ctx)
    : opt_(mmd_options().read(cfg)), sites_(cfg), registry_(ctx.registry), split_(opt_.split) {
  if (!registry_) throw Error("mmd: built without a registry (needed for kernel/gaussian)");
  hmc_.chains = opt_.hmc_chains;
  hmc_.warmup = opt_.hmc_warmup;
  hmc_.leapfrog_steps = opt_.hmc_leapfrog_steps;
  hmc_.step_size = opt_.hmc_step_size;
  hmc_.target_acceptance = opt_.hmc_target_acceptance;
  hmc_.step_size_jitter = opt_.hmc_step_size_jitter;
  hmc_.thinning = opt_.hmc_thinning;
  hmc_.adapt_mass = opt_.hmc_adapt_mass;
  hmc_.chains_per_batch = opt_.hmc_chains_per_batch;
  init_from_train_ = opt_.hmc_init == "train";
  permutations_ = opt_.permutations;
  rule_ = bandwidth_rule_from_keys(opt_.bandwidth, opt_.bandwidth_rule, sites_);
  // Fail before any model is fitted, not after, if the Gaussian kernel is missing.
  (void)registry_->make_kernel(Config::parse_string("type = \"gaussian\"\nsigma = 1.0", "mmd"), {});
}

void MmdEvaluator::check(const DataShape& data) const {
  const Index rows = data.rows(split_);
  if (rows < 2)
    sites_.fail("split",
                "the " + split_ + " split has " + std::to_string(rows) + " rows; MMD needs at least 2");
  // The model's draws (with HMC's chains and the pooled copy) and the labellings of the permutation
  // test (pooled rows x (permutations + 1)), before any is drawn.
  const double n = static_cast<double>(opt_.samples ? *opt_.samples : rows);
  const double pooled = n + static_cast<double>(rows), D = static_cast<double>(std::max<Index>(data.dim, 1));
  require_memory(8.0 * (3.0 * n * D + pooled * D + pooled * static_cast<double>(permutations_ + 1)),
                 sites_.where(opt_.samples ? "samples" : "permutations"),
                 "the model's samples and the permutation test's labellings (samples, permutations)");
}

void MmdEvaluator::check_model(const DataShape& data, const PlannedModel& model) const {
  if (!model.facets || model.facets->has(Facet::Sampler) || model.facets->has(Facet::ApproximateSampler)) return;
  if (init_from_train_) {
    if (data.train_rows == 0) sites_.fail("hmc_init", "the training split is empty; use \"base_measure\"");
  } else if (!model.facets->has(Facet::BaseMeasureRatio)) {
    sites_.fail("hmc_init",
                "model " + model.name + " has no base measure that can be sampled; use \"train\"");
  }
}

EvaluationResult MmdEvaluator::evaluate(const EvalInput& in) {
  const Matrix& Y = evaluation_rows(in, split_, sites_, "mmd", 2);
  const Index n = opt_.samples ? *opt_.samples : Y.rows();

  HmcOptions o = hmc_;
  o.progress = &in.context.progress();
  o.progress_task = "mmd " + in.model_name + ": HMC";
  o.context = "model " + in.model_name + " (evaluator mmd)";
  if (!in.model.can_sample() && init_from_train_) {
    if (in.data.train_count() == 0)
      sites_.fail("hmc_init", "the training split is empty; use \"base_measure\"");
    o.init = HmcInit::Points;
    o.init_rows = in.data.training();  // only the chains' starting rows are read
  } else if (!in.model.can_sample()) {
    const BaseMeasure* base = in.model.base_measure();
    if (!base || !base->can_sample())
      sites_.fail("hmc_init",
                  "model " + in.model_name + " has no base measure that can be sampled; use \"train\"");
    o.init = HmcInit::BaseMeasure;
  }
  HmcDiagnostics diag;
  RandomStream sample_rng = in.context.rng().derive("samples");
  const Matrix X = draw_samples(in.model, n, sample_rng, o, in.context, &diag);
  check_finite(X, "mmd: samples of model " + in.model_name);

  // The median heuristic on the pooled sample (up to 500 rows of each side), BKL on all pooled rows, or
  // given; BKL draws its landmarks from the evaluator's stream, so σ depends on the seed only.
  const ChosenBandwidth bw = choose_bandwidth(rule_, X, Y, "mmd", in.context, 500);
  const double sigma = bw.sigma;
  char text[96];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", sigma);
  const KernelPtr kernel = registry_->make_kernel(Config::parse_string(text, "mmd"), {});

  RandomStream perm_rng = in.context.rng().derive("permutations");
  const MmdTest t = mmd_test(*kernel, X, Y, permutations_, perm_rng, in.context, 0, false);

  EvaluationResult r;
  r.metrics.emplace_back("mmd2", t.mmd2);
  if (permutations_ > 0) r.metrics.emplace_back("mmd_pvalue", t.p_value);
  r.metrics.emplace_back("mmd_bandwidth", sigma);
  r.notes.push_back("bandwidth: " + bw.how);
  std::ostringstream summary;
  summary << "mmd: mmd2 = " << number_text(t.mmd2, 4) << (permutations_ > 0 ? ", p = " + number_text(t.p_value, 4) : "") << " ("
          << n << " model samples vs " << Y.rows() << " " << split_ << " rows, sigma = " << number_text(sigma, 4) << ")";
  if (!diag.ran && diag.approximate) {
    // The number describes the sampler network, not the density: say so wherever it is read.
    r.metrics.emplace_back("sampler_approximate", 1.0);
    const std::string w = "model samples from the approximate sampler of model " + in.model_name +
                          " (draws from its learned q, not from p~): mmd2 measures the sampler, not the density";
    r.notes.push_back("warning: " + w);
    summary << "; WARNING " << w;
  } else if (!diag.ran) {
    r.notes.push_back("model samples from the model's exact sampler");
  } else {
    r.metrics.emplace_back("hmc_acceptance", diag.mean_acceptance());
    if (std::isfinite(diag.min_ess())) r.metrics.emplace_back("hmc_min_ess", diag.min_ess());
    if (std::isfinite(diag.max_r_hat())) r.metrics.emplace_back("hmc_max_rhat", diag.max_r_hat());
    r.metrics.emplace_back("hmc_divergences", static_cast<double>(diag.total_divergences()));
    r.notes.push_back("model samples by " + diag.summary());
    // The permutation null assumes independent draws; autocorrelated ones make p-values too small.
    if (!(diag.min_ess() >= 0.5 * static_cast<double>(n)))
      r.notes.push_back("HMC min ESS " + number_text(diag.min_ess(), 4) + " is below half of the " + std::to_string(n) +
                        " samples: the p-value (which assumes independent samples) may be too small; raise "
                        "hmc_thinning or hmc_leapfrog_steps");
    if (!diag.stuck_chains().empty())
      r.notes.push_back("warning: HMC chains that accepted no proposal after warm-up: " + diag.stuck_chains_text() +
                        "; each one's draws are a single point, so the samples do not represent the model");
    if (diag.total_divergences() > 0)
      r.notes.push_back(std::to_string(diag.total_divergences()) +
                        " HMC divergences after warm-up: the samples may miss regions of the model");
    if (std::isfinite(diag.max_r_hat()) && diag.max_r_hat() > 1.05)
      r.notes.push_back("HMC split-R^ " + number_text(diag.max_r_hat(), 4) +
                        " > 1.05: chains disagree; raise hmc_warmup");
  }
  r.summary = summary.str();
  return r;
}

}  // namespace kef::mmd
