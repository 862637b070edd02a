#include "kernel_test_evaluators.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "kef/conditional_model.hpp"
#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/hmc.hpp"
#include "kef/hsic_test.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/mmd_test.hpp"
#include "kef/number_text.hpp"

namespace kef::kernel_tests {
namespace {

KernelPtr gaussian(Registry& registry, double sigma, const char* who) {
  char text[96];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", sigma);
  return registry.make_kernel(Config::parse_string(text, who), {});
}

// The model's samples: its exact sampler, else HMC with kef/hmc.hpp's defaults (warm-up and thinning
// from the keys), started from random training rows. Notes describe how they were drawn.
Matrix model_samples(const EvalInput& in, Index n, std::int64_t warmup, std::int64_t thinning,
                     const KeySites& sites, const std::string& who, std::vector<std::string>& notes) {
  HmcOptions o;
  o.warmup = warmup;
  o.thinning = thinning;
  o.progress = &in.context.progress();
  o.progress_task = who + " " + in.model_name + ": HMC";
  o.context = "model " + in.model_name + " (evaluator " + who + ")";
  if (!in.model.can_sample()) {
    if (in.data.train_count() == 0)
      sites.fail("hmc_warmup",
                 "model " + in.model_name +
                     " has no exact sampler and the training split (HMC's starting points) is empty");
    o.init = HmcInit::Points;
    o.init_rows = in.data.training();  // only the chains' starting rows are read
  }
  HmcDiagnostics diag;
  RandomStream rng = in.context.rng().derive("samples");
  Matrix X = draw_samples(in.model, n, rng, o, in.context, &diag);
  check_finite(X, who + ": samples of model " + in.model_name);
  if (!diag.ran) {
    notes.push_back("model samples from the model's exact sampler");
  } else {
    notes.push_back("model samples by " + diag.summary());
    if (!(diag.min_ess() >= 0.5 * static_cast<double>(n)))
      notes.push_back("HMC min ESS " + number_text(diag.min_ess(), 4) + " is below half of the " + std::to_string(n) +
                      " samples: p-values (which assume independent samples) may be too small; raise "
                      "hmc_thinning, or use evaluator `mmd` whose HMC keys are all exposed");
  }
  return X;
}

}  // namespace

const OptionsSpec<MmdTwoSampleOptions>& mmd_two_sample_options() {
  using O = MmdTwoSampleOptions;
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
    s.string("bandwidth_rule", &O::bandwidth_rule,
             "how σ is chosen when `bandwidth` is absent: the median pairwise distance of the pooled sample "
             "(\"median\"), Bayesian kernel learning (\"bkl\"), or a Gaussian mixture kernel whose length "
             "scales and weights BKL learns from `bandwidth_scales` (\"bkl_multiscale\")")
        .optional()
        .one_of({"median", "bkl", "bkl_multiscale"});
    s.numbers("bandwidth_scales", &O::bandwidth_scales,
              "bandwidth_rule = \"bkl_multiscale\": the mixture's starting length scales (R >= 2, distinct)")
        .optional()
        .positive();
    s.integer("permutations", &O::permutations, "random relabellings for the permutation p-value (0: none)",
              200)
        .non_negative();
    s.integer("hmc_warmup", &O::hmc_warmup,
              "HMC warm-up iterations per chain (models without an exact sampler)", d.warmup)
        .non_negative();
    s.integer("hmc_thinning", &O::hmc_thinning, "keep every k-th HMC draw", d.thinning).at_least(1);
    return s;
  }();
  return spec;
}

const OptionsSpec<HsicOptions>& hsic_options() {
  using O = HsicOptions;
  static const OptionsSpec<O> spec = [] {
    const HmcOptions d;
    OptionsSpec<O> s;
    s.bind(split_key("split whose inputs (and, for of = \"data\", targets) are tested"), &O::split);
    s.string("of", &O::of,
             "test the inputs x against the targets y of the split (\"data\") or of the model's samples "
             "(\"model\")",
             std::string("data"))
        .one_of({"data", "model"});
    s.integer("samples", &O::samples,
              "of = \"model\", joint models: number of model samples (default: the size of `split`)")
        .optional()
        .at_least(4);
    s.number("bandwidth_x", &O::bandwidth_x,
             "Gaussian length scale σ on the inputs (default: bandwidth_rule)")
        .optional()
        .positive();
    s.number("bandwidth_y", &O::bandwidth_y,
             "Gaussian length scale σ on the targets (default: bandwidth_rule)")
        .optional()
        .positive();
    s.string("bandwidth_rule", &O::bandwidth_rule,
             "how σ_x and σ_y are chosen when not given: the median pairwise distance of each block")
        .optional()
        .one_of({"median", "bkl"});
    s.integer("permutations", &O::permutations, "random pairings for the permutation p-value (0: none)", 200)
        .non_negative();
    s.integer("hmc_warmup", &O::hmc_warmup, "of = \"model\", models without an exact sampler: HMC warm-up",
              d.warmup)
        .non_negative();
    s.integer("hmc_thinning", &O::hmc_thinning, "of = \"model\": keep every k-th HMC draw", d.thinning)
        .at_least(1);
    return s;
  }();
  return spec;
}

// --- mmd_two_sample ------------------------------------------------------------------------------

MmdTwoSampleEvaluator::MmdTwoSampleEvaluator(const Config& cfg, const BuildContext& ctx)
    : opt_(mmd_two_sample_options().read(cfg)), sites_(cfg), registry_(ctx.registry) {
  if (!registry_) throw Error("mmd_two_sample: built without a registry (needed for kernel/gaussian)");
  rule_ = bandwidth_rule_from_keys(opt_.bandwidth, opt_.bandwidth_rule, opt_.bandwidth_scales, sites_);
  // Fail before any model is fitted, not after, if the Gaussian kernel (or the mixture) is missing.
  (void)gaussian(*registry_, 1.0, "mmd_two_sample");
  if (rule_.kind == BandwidthRule::Kind::BklMultiscale)
    (void)registry_->make_kernel(
        Config::parse_string(kernel_table(ChosenBandwidth{1.0, "", rule_.scales,
                                                          std::vector<double>(rule_.scales.size(), 1.0)}),
                             "mmd_two_sample"),
        {});
}

void MmdTwoSampleEvaluator::check(const DataShape& data) const {
  const Index rows = data.rows(opt_.split);
  if (rows < 2)
    sites_.fail("split", "the " + opt_.split + " split has " + std::to_string(rows) +
                             " rows; a two-sample test needs at least 2");
  // The model's draws, the pooled sample and the permutation labellings, before any is drawn.
  const double n = static_cast<double>(opt_.samples ? *opt_.samples : rows);
  const double pooled = n + static_cast<double>(rows), D = static_cast<double>(std::max<Index>(data.dim, 1));
  require_memory(8.0 * (3.0 * n * D + pooled * D + pooled * static_cast<double>(opt_.permutations + 1)),
                 sites_.where(opt_.samples ? "samples" : "permutations"),
                 "the model's samples and the permutation test's labellings (samples, permutations)");
}

EvaluationResult MmdTwoSampleEvaluator::evaluate(const EvalInput& in) {
  const Matrix& Y = evaluation_rows(in, opt_.split, sites_, "mmd_two_sample", 2);
  const Index n = opt_.samples ? *opt_.samples : Y.rows();
  EvaluationResult r;
  const Matrix X =
      model_samples(in, n, opt_.hmc_warmup, opt_.hmc_thinning, sites_, "mmd_two_sample", r.notes);
  const ChosenBandwidth bw = choose_bandwidth(rule_, X, Y, "mmd_two_sample", in.context);
  const KernelPtr kernel =
      registry_->make_kernel(Config::parse_string(kernel_table(bw), "mmd_two_sample"), {});
  RandomStream perm_rng = in.context.rng().derive("permutations");
  const MmdTest t = mmd_test(*kernel, X, Y, opt_.permutations, perm_rng, in.context);

  r.metrics.emplace_back("mmd2_unbiased", t.mmd2);
  r.metrics.emplace_back("mmd2_biased", t.mmd2_biased);
  if (opt_.permutations > 0) r.metrics.emplace_back("mmd_pvalue_permutation", t.p_value);
  r.metrics.emplace_back("mmd_pvalue_gamma", t.gamma_p_value);
  r.metrics.emplace_back("mmd_bandwidth", bw.sigma);
  for (std::size_t c = 0; c < bw.weights.size();
       ++c) {  // bkl_multiscale: the mixture, component by component
    r.metrics.emplace_back("mmd_bandwidth_" + std::to_string(c + 1), bw.sigmas[c]);
    r.metrics.emplace_back("mmd_weight_" + std::to_string(c + 1), bw.weights[c]);
  }
  r.notes.push_back("bandwidth: " + bw.how);
  std::ostringstream summary;
  summary << "mmd_two_sample: mmd2_u = " << number_text(t.mmd2, 4)
          << ", mmd2_b = " << number_text(t.mmd2_biased, 4)
          << (opt_.permutations > 0 ? ", p(permutation) = " + number_text(t.p_value, 4) : "")
          << ", p(Gamma) = " << number_text(t.gamma_p_value, 4) << " (" << n << " model samples vs "
          << Y.rows() << " " << opt_.split << " rows, "
          << (bw.mixture() ? "multi-scale kernel, largest-weight sigma = " : "sigma = ")
          << number_text(bw.sigma, 4) << ")";
  r.summary = summary.str();
  return r;
}

// --- hsic_independence ---------------------------------------------------------------------------

HsicIndependenceEvaluator::HsicIndependenceEvaluator(const Config& cfg, const BuildContext& ctx)
    : opt_(hsic_options().read(cfg)), sites_(cfg), registry_(ctx.registry) {
  if (!registry_) throw Error("hsic_independence: built without a registry (needed for kernel/gaussian)");
  if ((opt_.bandwidth_x || opt_.bandwidth_y) && opt_.bandwidth_rule)
    sites_.fail("bandwidth_rule", "give either `bandwidth_x`/`bandwidth_y` or `bandwidth_rule`, not both");
  rule_x_ = bandwidth_rule_from_keys(opt_.bandwidth_x, opt_.bandwidth_rule, sites_, "bandwidth_x");
  rule_y_ = bandwidth_rule_from_keys(opt_.bandwidth_y, opt_.bandwidth_rule, sites_, "bandwidth_y");
  if (opt_.samples && opt_.of != "model")
    sites_.fail("samples",
                "applies to of = \"model\" only (of = \"" + opt_.of + "\" tests the split's rows)");
  (void)gaussian(*registry_, 1.0, "hsic_independence");
}

void HsicIndependenceEvaluator::check(const DataShape& data) const {
  if (data.target_dim == 0)
    sites_.fail("of",
                "an independence test of inputs and targets needs [data] targets (the data have no "
                "target columns)");
  const Index rows = data.rows(opt_.split);
  if (rows < 4)
    sites_.fail("split", "the " + opt_.split + " split has " + std::to_string(rows) +
                             " rows; the independence test needs at least 4");
  // The test holds the two centred n x n Gram matrices and their products, before any is formed.
  const double n = static_cast<double>(opt_.samples && opt_.of == "model" ? *opt_.samples : rows);
  require_memory(8.0 * 4.0 * n * n, sites_.where(opt_.samples ? "samples" : "split"),
                 "the independence test's Gram matrices (n x n each: samples or the split's rows)");
}

void HsicIndependenceEvaluator::check_model(const DataShape&, const PlannedModel& model) const {
  if (opt_.of != "model" || !model.facets) return;
  if (model.facets->has(Facet::ConditionalDensity) && !model.facets->has(Facet::ConditionalSampler))
    sites_.fail("of", "model " + model.name +
                          " is a conditional density without a sampler of y given x; use of = \"data\"");
}

EvaluationResult HsicIndependenceEvaluator::evaluate(const EvalInput& in) {
  if (!in.data.roles.conditional())
    sites_.fail("of", "an independence test of inputs and targets needs [data] targets");
  EvaluationResult r;
  Matrix X, Y;
  std::string what;
  const Matrix& split_rows = evaluation_rows(in, opt_.split, sites_, "hsic_independence", 4);
  if (opt_.of == "data") {
    X = in.data.inputs(split_rows);
    Y = in.data.targets(split_rows);
    what = std::to_string(split_rows.rows()) + " " + opt_.split + " rows";
    r.notes.push_back("tests the data's inputs against its targets: the same for every model");
  } else if (const ConditionalModel* c = in.model.conditional()) {
    // A model of p(y | x): the split's inputs x, and one draw y ~ p(y | x) for each.
    X = in.data.inputs(split_rows);
    RandomStream rng = in.context.rng().derive("samples");
    Y = c->sample(X, rng);
    check_finite(Y, "hsic_independence: conditional samples of model " + in.model_name);
    what = std::to_string(X.rows()) + " inputs of the " + opt_.split + " split with y drawn from the model";
  } else {
    // A joint model of (x, y): its samples, split by the data's column roles.
    const Index n = opt_.samples ? *opt_.samples : split_rows.rows();
    const Matrix rows =
        model_samples(in, n, opt_.hmc_warmup, opt_.hmc_thinning, sites_, "hsic_independence", r.notes);
    X = in.data.inputs(rows);
    Y = in.data.targets(rows);
    what = std::to_string(n) + " model samples";
  }
  const ChosenBandwidth bx = choose_bandwidth(rule_x_, X, sites_.where("bandwidth_x"), in.context);
  const ChosenBandwidth by = choose_bandwidth(rule_y_, Y, sites_.where("bandwidth_y"), in.context);
  const KernelPtr kx = gaussian(*registry_, bx.sigma, "hsic_independence");
  const KernelPtr ky = gaussian(*registry_, by.sigma, "hsic_independence");
  const HsicTest t =
      hsic_test(*kx, *ky, X, Y, opt_.permutations, in.context.rng().derive("permutations"), in.context);

  r.metrics.emplace_back("hsic", t.hsic);
  r.metrics.emplace_back("hsic_unbiased", t.hsic_unbiased);
  if (opt_.permutations > 0) r.metrics.emplace_back("hsic_pvalue_permutation", t.p_value);
  r.metrics.emplace_back("hsic_pvalue_gamma", t.gamma_p_value);
  r.metrics.emplace_back("hsic_bandwidth_x", bx.sigma);
  r.metrics.emplace_back("hsic_bandwidth_y", by.sigma);
  r.notes.push_back("bandwidth x: " + bx.how + "; y: " + by.how);
  std::ostringstream summary;
  summary << "hsic_independence: hsic = " << number_text(t.hsic, 4)
          << (opt_.permutations > 0 ? ", p(permutation) = " + number_text(t.p_value, 4) : "")
          << ", p(Gamma) = " << number_text(t.gamma_p_value, 4) << " (" << what << ", " << X.cols() << " input and "
          << Y.cols() << " target columns, sigma_x = " << number_text(bx.sigma, 4) << ", sigma_y = " << number_text(by.sigma, 4)
          << ")";
  r.summary = summary.str();
  return r;
}

}  // namespace kef::kernel_tests
