#include "hsic_evaluator.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kef/conditional_model.hpp"
#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/hsic_test.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/number_text.hpp"

namespace kef::kernel_tests {
namespace {

KernelPtr gaussian(Registry& registry, double sigma, const char* who) {
  return registry.make_kernel(Config::parse_string(kernel_table(ChosenBandwidth{sigma, "", {}, {}}), who),
                              {});
}

}  // namespace

const OptionsSpec<HsicOptions>& hsic_options() {
  using O = HsicOptions;
  static const OptionsSpec<O> spec = [] {
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
    declare_model_sampling_keys(s);  // of = "model", joint models
    return s;
  }();
  return spec;
}

HsicIndependenceEvaluator::HsicIndependenceEvaluator(const Config& cfg, const BuildContext& ctx)
    : opt_(hsic_options().read(cfg)), sites_(cfg), registry_(ctx.registry), sampling_(opt_, sites_) {
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

void HsicIndependenceEvaluator::check_model(const DataShape& data, const PlannedModel& model) const {
  if (opt_.of != "model" || !model.facets) return;
  if (model.facets->has(Facet::ConditionalDensity) && !model.facets->has(Facet::ConditionalSampler))
    sites_.fail("of", "model " + model.name +
                          " is a conditional density without a sampler of y given x; use of = \"data\"");
  if (!model.facets->has(Facet::ConditionalDensity)) sampling_.check_model(data, model);  // a joint model
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
    const ModelSamples drawn = sampling_.draw(in, n, "hsic_independence");
    ModelSampling::report(drawn, n, in.model_name, r.notes, nullptr);
    X = in.data.inputs(drawn.rows);
    Y = in.data.targets(drawn.rows);
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
          << ", p(Gamma) = " << number_text(t.gamma_p_value, 4) << " (" << what << ", " << X.cols()
          << " input and " << Y.cols() << " target columns, sigma_x = " << number_text(bx.sigma, 4)
          << ", sigma_y = " << number_text(by.sigma, 4) << ")";
  r.summary = summary.str();
  return r;
}

}  // namespace kef::kernel_tests
