// The kernel tests on samples in memory (see kef/kernel_tests.hpp): the command and the Python package
// both call these, so the reports agree bit for bit.
#include "kef/kernel_tests.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/hsic_test.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/mmd_test.hpp"
#include "kernel_causal_discovery.hpp"

namespace kef {

namespace {

using Json = nlohmann::ordered_json;

KernelPtr gaussian_kernel(Registry& registry, double sigma, const std::string& where) {
  char text[96];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", sigma);
  return registry.make_kernel(Config::parse_string(text, where), {});
}

// NaN (no permutations) as JSON null, not as a number JSON cannot hold.
Json json_number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::string rule_name(const BandwidthRule& r) {
  switch (r.kind) {
    case BandwidthRule::Kind::Median:
      return "median";
    case BandwidthRule::Kind::Bkl:
      return "bkl";
    case BandwidthRule::Kind::BklMultiscale:
      return "bkl_multiscale";
    case BandwidthRule::Kind::Given:
      break;
  }
  return "given";
}

Json sample_json(const TestSample& s) {
  Json j;
  if (!s.file.empty()) j["file"] = s.file;
  j["rows"] = s.values->rows();
  j["columns"] = s.values->cols();
  return j;
}

// The report's head for the permutation tests of two samples: which test, the samples, the
// permutations and the seed, in that order.
Json permutation_test_head(const char* test, const TestSample& x, const TestSample& y, Index permutations,
                           std::uint64_t seed) {
  Json j;
  j["test"] = test;
  j["x"] = sample_json(x);
  j["y"] = sample_json(y);
  j["permutations"] = permutations;
  j["seed"] = seed;
  return j;
}

void check_permutations(long long permutations) {
  if (permutations < 0 || permutations > 100000000)
    throw ConfigError("permutations: expected an integer in [0, 100000000], got " +
                      std::to_string(permutations));
}

BandwidthRule two_sample_rule(const KernelTestOptions& o) {
  BandwidthRule rule = parse_bandwidth_rule(o.bandwidth, o.bandwidth_key, true);
  if (rule.kind == BandwidthRule::Kind::BklMultiscale)
    rule = multiscale_rule(o.scales, o.scales_key);
  else if (!o.scales.empty())
    throw ConfigError(o.scales_key + ": applies to " + o.bandwidth_key + " bkl_multiscale only");
  return rule;
}

}  // namespace

void check_kernel_test_options(const KernelTestOptions& o, bool two_sample) {
  if (two_sample) {
    two_sample_rule(o);
  } else {
    parse_bandwidth_rule(o.bandwidth, o.bandwidth_key);
    if (!o.bandwidth_y.empty()) parse_bandwidth_rule(o.bandwidth_y, o.bandwidth_y_key);
    if (!o.scales.empty())
      throw ConfigError(o.scales_key + ": applies to the two-sample test's bkl_multiscale bandwidth only");
  }
  check_permutations(o.permutations);
}

void check_witness_request(const WitnessRequest& r) {
  const BandwidthRule rule = parse_bandwidth_rule(r.bandwidth, r.bandwidth_key);
  if (r.integrate && rule.kind != BandwidthRule::Kind::Bkl)
    throw ConfigError(r.integrate_key + ": integrates over BKL's posterior of ℓ, so it needs " + r.bandwidth_key +
                      " bkl (got `" + r.bandwidth + "`)");
}

std::string two_sample_test_json(Registry& registry, const TestSample& x, const TestSample& y,
                                 const KernelTestOptions& o) {
  check_kernel_test_options(o, true);
  const BandwidthRule rule = two_sample_rule(o);
  const Matrix &X = *x.values, &Y = *y.values;
  if (X.cols() != Y.cols())
    throw DataError(y.what + ": " + std::to_string(Y.cols()) + " columns, but " + x.what + " has " +
                    std::to_string(X.cols()) + "; a two-sample test needs samples of the same dimension");
  if (X.rows() < 2 || Y.rows() < 2)
    throw DataError((X.rows() < 2 ? x.what : y.what) + ": a two-sample test needs at least 2 rows in each sample");
  const Index P = static_cast<Index>(o.permutations);
  Context context(o.seed, o.threads, nullptr, o.threads_key);
  const RandomStream rng = context.rng().derive("two-sample");
  Json j = permutation_test_head("two-sample", x, y, P, o.seed);
  const ChosenBandwidth bw = choose_bandwidth(rule, X, Y, o.bandwidth_key, context);
  const KernelPtr k = bw.mixture()
                          ? registry.make_kernel(Config::parse_string(kernel_table(bw), o.bandwidth_key), {})
                          : gaussian_kernel(registry, bw.sigma, "kef test");
  RandomStream perm_rng = rng.derive("permutations");
  const MmdTest t = mmd_test(*k, X, Y, P, perm_rng, context);
  j["statistic"] = {{"mmd2_unbiased", t.mmd2}, {"mmd2_biased", t.mmd2_biased}};
  j["p_value"] = {{"permutation", json_number(t.p_value)},
                  {"permutation_biased", json_number(t.p_value_biased)},
                  {"gamma", t.gamma_p_value}};
  j["gamma"] = {{"shape", t.gamma.shape},
                {"scale", t.gamma.scale},
                {"null_mean", t.gamma.mean},
                {"null_variance", t.gamma.variance}};
  j["bandwidth"] = {{"sigma", bw.sigma}, {"rule", rule_name(rule)}, {"how", bw.how}};
  if (bw.mixture()) {
    j["bandwidth"]["sigmas"] = bw.sigmas;
    j["bandwidth"]["weights"] = bw.weights;
  }
  return j.dump(2);
}

std::string independence_test_json(Registry& registry, const TestSample& x, const TestSample& y,
                                   const KernelTestOptions& o) {
  check_kernel_test_options(o, false);
  const BandwidthRule rule = parse_bandwidth_rule(o.bandwidth, o.bandwidth_key);
  const BandwidthRule rule_y =
      o.bandwidth_y.empty() ? rule : parse_bandwidth_rule(o.bandwidth_y, o.bandwidth_y_key);
  const Matrix &X = *x.values, &Y = *y.values;
  if (X.rows() != Y.rows())
    throw DataError(y.what + ": " + std::to_string(Y.rows()) + " rows, but " + x.what + " has " +
                    std::to_string(X.rows()) + "; an independence test needs paired rows");
  if (X.rows() < 4)
    throw DataError(x.what + ": " + std::to_string(X.rows()) +
                    " rows; an independence test needs at least 4 pairs");
  const Index P = static_cast<Index>(o.permutations);
  Context context(o.seed, o.threads, nullptr, o.threads_key);
  const RandomStream rng = context.rng().derive("independence");
  Json j = permutation_test_head("independence", x, y, P, o.seed);
  const ChosenBandwidth bx = choose_bandwidth(rule, X, o.bandwidth_key, context);
  const ChosenBandwidth by =
      choose_bandwidth(rule_y, Y, o.bandwidth_y.empty() ? o.bandwidth_key : o.bandwidth_y_key, context);
  const KernelPtr kx = gaussian_kernel(registry, bx.sigma, "kef test"),
                  ky = gaussian_kernel(registry, by.sigma, "kef test");
  const HsicTest t = hsic_test(*kx, *ky, X, Y, P, rng.derive("permutations"), context);
  j["statistic"] = {{"hsic_biased", t.hsic}, {"hsic_unbiased", t.hsic_unbiased}};
  j["p_value"] = {{"permutation", json_number(t.p_value)}, {"gamma", t.gamma_p_value}};
  j["gamma"] = {{"shape", t.gamma.shape},
                {"scale", t.gamma.scale},
                {"null_mean", t.gamma.mean},
                {"null_variance", t.gamma.variance}};
  j["bandwidth"] = {{"x", {{"sigma", bx.sigma}, {"rule", rule_name(rule)}, {"how", bx.how}}},
                    {"y", {{"sigma", by.sigma}, {"rule", rule_name(rule_y)}, {"how", by.how}}}};
  return j.dump(2);
}

WitnessReport witness_json(const TestSample& x, const TestSample& y, const Matrix& G, const WitnessRequest& r) {
  check_witness_request(r);
  const BandwidthRule rule = parse_bandwidth_rule(r.bandwidth, r.bandwidth_key);
  const Matrix &X = *x.values, &Y = *y.values;
  if (X.cols() != Y.cols())
    throw DataError(y.what + ": " + std::to_string(Y.cols()) + " columns, but " + x.what + " has " +
                    std::to_string(X.cols()) + "; the witness compares samples of the same dimension");
  if (G.rows() == 0 || G.cols() != X.cols())
    throw DataError("points: " + std::to_string(G.rows()) + " x " + std::to_string(G.cols()) +
                    ", expected at least one row with the samples' " + std::to_string(X.cols()) + " columns");
  Context context(r.seed, r.threads, nullptr, r.threads_key);
  const Context wc = context.child("witness");
  WitnessOptions o;
  o.tau2 = r.tau2;
  o.level = r.level;
  o.where = "kef test witness";
  Json bw;
  WitnessReport out;
  if (rule.kind == BandwidthRule::Kind::Bkl) {
    BklOptions b;
    b.landmarks = bkl_landmarks(X.rows() + Y.rows(), X.cols());
    b.method = r.integrate ? BklMethod::Hmc : BklMethod::Mode;
    b.context = r.bandwidth_key;
    const LearnedWitness lw = bayesian_witness_bkl(X, Y, G, b, o, wc);
    out.posterior = lw.witness;
    bw = {{"sigma", lw.bkl.sigma},
          {"rule", r.integrate ? "bkl-hmc" : "bkl"},
          {"how", lw.bkl.provenance},
          {"mode", lw.bkl.mode},
          {"log_likelihood", lw.bkl.log_likelihood},
          {"landmarks", lw.bkl.landmarks},
          {"lengthscales", out.posterior.lengthscales}};
    if (r.integrate) {
      bw["posterior_q05"] = lw.bkl.posterior_q05;
      bw["posterior_q95"] = lw.bkl.posterior_q95;
      bw["hmc"] = lw.bkl.hmc_summary;
    }
    // The profile of log L in ℓ, with the fields a pipeline records under chosen.KEY.bkl, so that
    // experiments/bkl/bkl_profile_plot.py draws either; −inf (ℓ too small for the landmarks) as null.
    Json ll = Json::array();
    for (double v : lw.bkl.profile.log_likelihood) ll.push_back(json_number(v));
    bw["bkl"] = {{"tau2", lw.bkl.tau2},
                 {"method", lw.bkl.method},
                 {"lower", lw.bkl.lower},
                 {"upper", lw.bkl.upper},
                 {"landmarks", lw.bkl.landmarks},
                 {"rows", lw.bkl.rows},
                 {"log_likelihood", lw.bkl.log_likelihood},
                 {"median_lengthscale", lw.bkl.median_lengthscale},
                 {"median_log_likelihood", json_number(lw.bkl.median_log_likelihood)},
                 {"profile", {{"lengthscale", lw.bkl.profile.lengthscale}, {"log_likelihood", ll}}}};
  } else {
    const ChosenBandwidth c = choose_bandwidth(rule, X, Y, r.bandwidth_key, wc);
    out.posterior = bayesian_witness(X, Y, G, c.sigma, o, wc);
    bw = {{"sigma", c.sigma}, {"rule", rule_name(rule)}, {"how", c.how}, {"lengthscales", 1}};
  }
  const WitnessPosterior& w = out.posterior;
  Index excludes = 0;
  for (Index i = 0; i < G.rows(); ++i) excludes += (w.lower[i] > 0.0 || w.upper[i] < 0.0) ? 1 : 0;
  out.band_excludes_zero = static_cast<double>(excludes) / static_cast<double>(G.rows());
  out.lengthscale = bw["sigma"].get<double>();
  Json j;
  j["test"] = "witness";
  j["x"] = sample_json(x);
  j["y"] = sample_json(y);
  j["points"] = G.rows();
  j["level"] = r.level;
  j["tau2"] = r.tau2;
  j["seed"] = r.seed;
  j["bandwidth"] = bw;
  j["band_excludes_zero"] = out.band_excludes_zero;
  j["max_abs_mean"] = w.mean.cwiseAbs().maxCoeff();
  j["max_sd"] = w.sd.maxCoeff();
  out.json = j.dump(2);
  return out;
}

std::string causal_discovery_json(Registry& registry, const TestSample& data,
                                  const std::vector<std::string>& variables, const CausalRequest& r) {
  CausalDiscoveryOptions o;
  o.bandwidth = parse_bandwidth_rule(r.bandwidth, r.bandwidth_key);
  o.alpha = r.alpha;
  o.permutations = static_cast<Index>(r.permutations);
  o.max_given = static_cast<Index>(r.max_given);
  o.where = r.bandwidth_key;
  const Matrix& values = *data.values;
  if (static_cast<Index>(variables.size()) != values.cols())
    throw DataError(data.what + ": " + std::to_string(values.cols()) + " columns but " +
                    std::to_string(variables.size()) + " variable names");
  Context context(r.seed, r.threads, nullptr, r.threads_key);
  const auto gaussian = [&](double sigma) { return gaussian_kernel(registry, sigma, "kef test"); };
  const CausalDiscoveryResult result = discover_causal_structure(values, o, gaussian, context.child("causal"));
  Json j;
  j["test"] = "causal";
  j["data"] = Json::object();
  if (!data.file.empty()) j["data"]["file"] = data.file;
  j["data"]["rows"] = values.rows();
  j["data"]["variables"] = variables;
  j["alpha"] = r.alpha;
  j["bandwidth_rule"] = r.bandwidth;
  j["permutations"] = r.permutations;
  j["seed"] = r.seed;
  j["cpdag"] = result.pc.cpdag.to_string(variables);
  j["skeleton"] = result.pc.skeleton.to_string(variables);
  j["tests"] = result.pc.tests;
  j["regressions"] = result.regressions;
  j["orientation_conflicts"] = result.pc.conflicts;
  if (r.truth_cpdag) {
    j["truth_cpdag"] = r.truth_cpdag->to_string(variables);
    j["structural_hamming_distance"] = structural_hamming_distance(result.pc.cpdag, *r.truth_cpdag);
  }
  return j.dump(2);
}

}  // namespace kef
