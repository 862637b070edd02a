#include "mmd_evaluator.hpp"

#include <algorithm>
#include <sstream>

#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/memory_budget.hpp"
#include "kef/mmd_test.hpp"
#include "kef/number_text.hpp"

namespace kef::kernel_tests {

const OptionsSpec<MmdOptions>& mmd_options() {
  using O = MmdOptions;
  static const OptionsSpec<O> spec = [] {
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
             "(\"median\", up to 500 rows of each side), Bayesian kernel learning on the pooled sample "
             "(\"bkl\", docs/math.md §9), or a Gaussian mixture kernel whose weights BKL learns from "
             "`bandwidth_scales` (\"bkl_multiscale\")")
        .optional()
        .one_of({"median", "bkl", "bkl_multiscale"});
    s.numbers("bandwidth_scales", &O::bandwidth_scales,
              "bandwidth_rule = \"bkl_multiscale\": the mixture's starting length scales (R >= 2, distinct)")
        .optional()
        .positive();
    s.integer("permutations", &O::permutations, "random relabellings for the permutation p-value (0: none)",
              200)
        .non_negative();
    declare_model_sampling_keys(s);
    return s;
  }();
  return spec;
}

MmdEvaluator::MmdEvaluator(const Config& cfg, const BuildContext& ctx)
    : opt_(mmd_options().read(cfg)),
      sites_(cfg),
      registry_(ctx.registry),
      sampling_(opt_, sites_),
      report_as_mmd_(cfg.type() == "mmd"),
      who_(report_as_mmd_ ? "mmd" : "mmd_two_sample") {
  if (!registry_) throw Error(who_ + ": built without a registry (needed for kernel/gaussian)");
  rule_ = bandwidth_rule_from_keys(opt_.bandwidth, opt_.bandwidth_rule, opt_.bandwidth_scales, sites_);
  // Fail before any model is fitted, not after, if the kernel (Gaussian, or the mixture) is missing.
  ChosenBandwidth unit{1.0, "", {}, {}};
  if (rule_.kind == BandwidthRule::Kind::BklMultiscale) {
    unit.sigmas = rule_.scales;
    unit.weights.assign(rule_.scales.size(), 1.0);
  }
  (void)registry_->make_kernel(Config::parse_string(kernel_table(unit), who_), {});
}

void MmdEvaluator::check(const DataShape& data) const {
  const Index rows = data.rows(opt_.split);
  if (rows < 2)
    sites_.fail("split", "the " + opt_.split + " split has " + std::to_string(rows) +
                             " rows; a two-sample test needs at least 2");
  // The model's draws (with HMC's chains and the pooled copy) and the labellings of the permutation
  // test (pooled rows x (permutations + 1)), before any is drawn.
  const double n = static_cast<double>(opt_.samples ? *opt_.samples : rows);
  const double pooled = n + static_cast<double>(rows), D = static_cast<double>(std::max<Index>(data.dim, 1));
  require_memory(8.0 * (3.0 * n * D + pooled * D + pooled * static_cast<double>(opt_.permutations + 1)),
                 sites_.where(opt_.samples ? "samples" : "permutations"),
                 "the model's samples and the permutation test's labellings (samples, permutations)");
}

void MmdEvaluator::check_model(const DataShape& data, const PlannedModel& model) const {
  sampling_.check_model(data, model);
}

EvaluationResult MmdEvaluator::evaluate(const EvalInput& in) {
  const Matrix& Y = evaluation_rows(in, opt_.split, sites_, who_, 2);
  const Index n = opt_.samples ? *opt_.samples : Y.rows();
  const ModelSamples drawn = sampling_.draw(in, n, who_);
  const Matrix& X = drawn.rows;

  // The median heuristic on the pooled sample (up to 500 rows of each side), BKL on all pooled rows, or
  // given; BKL draws its landmarks from the evaluator's stream, so σ depends on the seed only.
  const ChosenBandwidth bw = choose_bandwidth(rule_, X, Y, who_, in.context, 500);
  const KernelPtr kernel = registry_->make_kernel(Config::parse_string(kernel_table(bw), who_), {});
  RandomStream perm_rng = in.context.rng().derive("permutations");
  const MmdTest t = mmd_test(*kernel, X, Y, opt_.permutations, perm_rng, in.context, 0, !report_as_mmd_);

  EvaluationResult r;
  const bool with_p = opt_.permutations > 0;
  if (report_as_mmd_) {
    r.metrics.emplace_back("mmd2", t.mmd2);
    if (with_p) r.metrics.emplace_back("mmd_pvalue", t.p_value);
  } else {
    r.metrics.emplace_back("mmd2_unbiased", t.mmd2);
    r.metrics.emplace_back("mmd2_biased", t.mmd2_biased);
    if (with_p) r.metrics.emplace_back("mmd_pvalue_permutation", t.p_value);
    r.metrics.emplace_back("mmd_pvalue_gamma", t.gamma_p_value);
  }
  r.metrics.emplace_back("mmd_bandwidth", bw.sigma);
  for (std::size_t c = 0; c < bw.weights.size();
       ++c) {  // bkl_multiscale: the mixture, component by component
    r.metrics.emplace_back("mmd_bandwidth_" + std::to_string(c + 1), bw.sigmas[c]);
    r.metrics.emplace_back("mmd_weight_" + std::to_string(c + 1), bw.weights[c]);
  }
  ModelSampling::report(drawn, n, in.model_name, r.notes, &r.metrics);
  r.notes.push_back("bandwidth: " + bw.how);

  std::ostringstream summary;
  summary << who_ << ": mmd2_u = " << number_text(t.mmd2, 4);
  if (!report_as_mmd_) summary << ", mmd2_b = " << number_text(t.mmd2_biased, 4);
  if (with_p) summary << ", p(permutation) = " << number_text(t.p_value, 4);
  if (!report_as_mmd_) summary << ", p(Gamma) = " << number_text(t.gamma_p_value, 4);
  summary << " (" << n << " model samples vs " << Y.rows() << " " << opt_.split << " rows, "
          << (bw.mixture() ? "multi-scale kernel, largest-weight sigma = " : "sigma = ")
          << number_text(bw.sigma, 4) << ")";
  if (!drawn.diagnostics.ran && drawn.diagnostics.approximate)
    summary << "; WARNING " << ModelSampling::approximate_sampler_warning(in.model_name);
  r.summary = summary.str();
  return r;
}

}  // namespace kef::kernel_tests
