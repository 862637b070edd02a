// A [[model]] table made into a ModelPlan: its tables checked against the estimator's parts, the
// values the host chooses for it (sigma = "median" or "bkl"), its parts and estimator built, and its
// column roles checked. Shared by the run (pipeline.cpp) and the grid search (tune.cpp).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "kef/error.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "pipeline_plan.hpp"

namespace kef {

using namespace pipeline_detail;

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A [[model]] table holds its name, the estimator and one table per part the estimator declares
// (ComponentInfo::parts): [model.kernel], [model.base_measure], [model.sampler], ...
void check_model_tables(Config& m, const ComponentInfo& estimator) {
  KeyList keys = {
      KeySpec::string("name", "unique model name (results.json key, model directory)").optional(),
      KeySpec::table("estimator", "the fitting method: `type` and its keys").mandatory(),
  };
  std::vector<std::string> part_names;
  for (const PartSpec& part : estimator.all_parts()) {
    keys.push_back(KeySpec::table(part.name, part.doc));
    // append, not "[" + std::string&&: GCC 12 reports a false -Wrestrict inside libstdc++ for that.
    part_names.push_back(std::string("[").append(m.dotted(part.name)).append("]"));
  }
  for (const std::string& key : m.keys()) {
    if (key == "name" || key == "estimator") continue;
    bool declared = false;
    for (const PartSpec& part : estimator.all_parts()) declared = declared || part.name == key;
    if (!declared)
      m.fail(key, "estimator `" + estimator.type + "` takes no [" + m.dotted(key) + "] table (" +
                      (part_names.empty() ? std::string("it has no parts")
                                          : "its parts: " + join_names(part_names)) +
                      ")");
  }
  m.validate(keys);
}

// `sigma = "bkl"` in a Gaussian kernel table: the length scale chosen by Bayesian kernel learning
// (kef/kernel_learning.hpp, docs/math.md §9) on the training split's first 10100 rows (100 of them drawn
// as landmarks by the stream of the key's dotted path, so validate and run choose the same value, and
// held out; the rest as data), τ² fixed at 1, flat prior on log ℓ; written into the table as a number,
// recorded with its provenance and the profile of log L in ℓ. An optimum on a bound is refused (ConfigError
// at the key).
void apply_bayesian_kernel_learning(Config& kcfg, const Dataset& data, std::uint64_t seed, ModelPlan& mp) {
  const std::string type = kcfg.has("type") ? kcfg.string("type") : std::string();
  if (type == "gaussian_mixture")
    kcfg.fail(
        "sigma",
        "\"bkl\" (Bayesian kernel learning) here chooses the one length scale of kernel type "
        "\"gaussian\"; for kernel type \"gaussian_mixture\" give its length scales as numbers (BKL of "
        "a mixture's scales and weights is the two-sample evaluator's bandwidth_rule = \"bkl_multiscale\", "
        "docs/math.md §9.6)");
  if (type != "gaussian")
    kcfg.fail(
        "sigma",
        "\"bkl\" (Bayesian kernel learning) needs the prior covariance R = ∫ k(x, u) k(u, y) du in "
        "closed form and the kernel's input derivatives (docs/math.md §9): kef has them for kernel type "
        "\"gaussian\" (and the Gaussian mixture, §9.6); kernel type \"" +
            type + "\" has no closed-form R: use a number or \"median\"");
  constexpr Index kLandmarks = 100, kRows = 10000 + kLandmarks;
  // Only these rows are read (a distributed run may leave the training split in the data file).
  const Matrix first = first_rows(*data.training(), kRows);
  const Index rows = first.rows();
  BklOptions o;
  o.landmarks = kLandmarks;
  o.context = "sigma = \"bkl\"";
  BklResult r;
  try {
    const Context root(seed, 0);
    r = bkl_bandwidth(first, o, root.child(kcfg.dotted("sigma")));
  } catch (const ConfigError& e) {
    kcfg.fail("sigma", e.what());
  } catch (const DataError& e) {
    kcfg.fail("sigma", std::string(e.what()) + " (on the first " + std::to_string(rows) + " training rows)");
  }
  Json details = {{"tau2", r.tau2},
                  {"tau2_rule",
                   "fixed at 1 (the paper's first experiment fixes tau^2; jointly over (l, tau^2) the "
                   "pseudolikelihood has no interior optimum)"},
                  {"prior", "flat on log l over [lower, upper]; prior covariance amplitude fixed at 1"},
                  {"method", r.method},
                  {"lower", r.lower},
                  {"upper", r.upper},
                  {"landmarks", r.landmarks},
                  {"rows", r.rows},
                  {"log_likelihood", r.log_likelihood},
                  {"median_lengthscale", r.median_lengthscale},
                  {"median_log_likelihood", r.median_log_likelihood},
                  {"iterations", r.iterations},
                  {"evaluations", r.evaluations}};
  Json profile = {{"lengthscale", r.profile.lengthscale}, {"log_likelihood", Json::array()}};
  // −inf (ℓ too small for the landmarks) as null: JSON has no infinities.
  for (double v : r.profile.log_likelihood)
    profile["log_likelihood"].push_back(std::isfinite(v) ? Json(v) : Json(nullptr));
  details["profile"] = profile;
  mp.choices.push_back({kcfg.dotted("sigma"), r.sigma, r.provenance, details});
  kcfg.set("sigma", r.sigma);
}

// `sigma = "median"` in a kernel table: the median pairwise distance of the training split (its first
// 1000 rows, after the shuffle), written into the table as the number the kernel is built with.
void apply_median_heuristic(Config& kcfg, const Dataset& data, std::uint64_t seed, ModelPlan& mp) {
  if (!kcfg.has("sigma")) return;
  std::string text;
  try {
    text = kcfg.string("sigma");
  } catch (const ConfigError&) {
    return;  // a number (or a list): the kernel checks it
  }
  if (text == "bkl") return apply_bayesian_kernel_learning(kcfg, data, seed, mp);
  if (text != "median")
    kcfg.fail("sigma",
              "expected a number or \"median\" (the median heuristic) or \"bkl\" (Bayesian kernel "
              "learning), got \"" +
                  text + "\"");
  constexpr Index kRows = 1000;
  if (data.train_count() < 2) kcfg.fail("sigma", "the median heuristic needs at least 2 training rows");
  const Matrix first = first_rows(*data.training(), kRows);  // only these are read
  const double sigma = median_pairwise_distance(first, kRows);
  if (!(sigma > 0.0) || !std::isfinite(sigma))
    kcfg.fail("sigma", "the median pairwise distance of the training rows is " + format_metric(sigma) +
                           "; set `sigma` to a positive number");
  const Index rows = first.rows();
  mp.choices.push_back({kcfg.dotted("sigma"), sigma,
                        "median heuristic: median pairwise Euclidean distance of the first " +
                            std::to_string(rows) + " training rows (of " + std::to_string(data.train_count()) +
                            ")"});
  kcfg.set("sigma", sigma);
}

// Data with `targets` need an estimator of p(y | x), and an estimator that fits only p(y | x) needs
// data with targets: either mismatch fails here, before any fit, naming both sides.
void check_column_roles(const Plan& plan, const ModelPlan& mp, const Config& est) {
  const bool conditional_data = plan.data.roles.conditional();
  const bool fits_conditional = mp.facets && mp.facets->has(Facet::ConditionalDensity);
  if (conditional_data && !fits_conditional) {
    const std::string has =
        mp.facets ? "its models have: " + mp.facets->text() : std::string("it declares no facets");
    plan.root.table("data").fail("targets", "the data have target columns (" +
                                                join_names(plan.data.preprocessing.targets) +
                                                "), and estimator `" + mp.info->type + "` of model `" +
                                                mp.name + "` fits no conditional density p(y | x) (" + has +
                                                "); remove `targets`, or choose an estimator whose models "
                                                "have the conditional density facet");
  }
  if (!conditional_data && fits_conditional && !mp.facets->has(Facet::LogDensity))
    est.fail("type", "estimator `" + mp.info->type +
                         "` fits a conditional density p(y | x), and the data have no target columns; "
                         "name them with [data] targets = [\"COLUMN\", ...]");
}

}  // namespace

ModelPlan pipeline_detail::build_model(const Plan& plan, Config m, const std::string& name) {
  const Index D = plan.data.dim();
  ModelPlan mp;
  mp.name = name;
  mp.table = m;
  Config est = m.table("estimator");
  const ComponentInfo& info = plan.registry->info_for(Estimator::kInterface, est);
  check_model_tables(m, info);
  mp.info = &info;
  RandomStream init_rng(plan.seed, m.dotted("init"));
  BuildContext ctx{D, plan.registry.get(), &init_rng, plan.data.train_count()};
  if (m.has("kernel")) {
    Config kcfg = m.table("kernel");  // a view of the pipeline's table: the chosen σ is written into it
    apply_median_heuristic(kcfg, plan.data, plan.seed, mp);
  }
  mp.parts = plan.registry->make_parts(info, m, ctx);
  if (auto q0 = mp.parts.get<BaseMeasure>("base_measure")) q0->check_dimension(D);
  ctx.parts = &mp.parts;
  mp.estimator = plan.registry->make<Estimator>(est, ctx);
  est.fill_defaults();
  mp.estimator->check(plan.shape);
  mp.facets = mp.estimator->facets();
  if (!mp.facets && !info.facets.empty()) mp.facets = info.facets;
  check_column_roles(plan, mp, est);
  return mp;
}

}  // namespace kef
