// `kef test` (test_command.hpp).
#include "test_command.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "kef/bandwidth_rule.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/hsic_test.hpp"
#include "kef/kernel_causal_discovery.hpp"
#include "kef/mmd_test.hpp"

namespace kef_cli {

KernelTestCommand add_kernel_test_command(CLI::App& app, KernelTestFlags& f, CausalFlags& cf, int& threads) {
  KernelTestCommand c;
  c.test = app.add_subcommand("test", "Kernel tests on data files: two-sample (MMD), independence (HSIC)");
  c.test->require_subcommand(1);
  c.two_sample = c.test->add_subcommand(
      "two-sample",
      "Do the rows of X and Y come from the same distribution? MMD² with permutation and Gamma p-values");
  c.independence = c.test->add_subcommand(
      "independence",
      "Are the paired rows x_i of X and y_i of Y independent? HSIC with permutation and Gamma p-values");
  for (CLI::App* sub : {c.two_sample, c.independence}) {
    sub->add_option("X", f.x_file, "first sample (.npy, or .csv with a header row)")->required();
    sub->add_option("Y", f.y_file, "second sample (.npy or .csv)")->required();
    sub->add_option("--permutations", f.permutations, "permutations for the permutation p-value (0: none)")
        ->check(integer_in(0, 100000000));
    sub->add_option("--seed", f.seed, "seed of the permutations (default 0)")->check(seed_value());
    sub->add_option("--threads", threads, "worker threads (results do not depend on it)")
        ->check(integer_in(1, kMaxThreads));
    sub->add_flag("--json", f.json, "print one JSON object instead of text");
    sub->add_option("--path", f.plugin_paths, "extra plugin directory (searched first)");
  }
  c.two_sample->add_option(
      "--kernel-bandwidth", f.bandwidth,
      "Gaussian σ: `median` (median distance of the pooled sample), `bkl` (Bayesian "
      "kernel learning on the pooled sample), a positive number, or `bkl_multiscale` (a "
      "Gaussian mixture kernel whose scales and weights BKL learns from --kernel-scales)");
  c.two_sample
      ->add_option(
          "--kernel-scales", f.scales,
          "with --kernel-bandwidth bkl_multiscale: the mixture's starting length scales, e.g. 0.5,2,8")
      ->delimiter(',');
  c.independence->add_option(
      "--kernel-bandwidth", f.bandwidth,
      "Gaussian σ on X (and on Y unless --kernel-bandwidth-y): `median`, `bkl` or a positive number");
  c.independence->add_option("--kernel-bandwidth-y", f.bandwidth_y,
                             "Gaussian σ on Y: `median`, `bkl` or a positive number");
  c.causal = c.test->add_subcommand(
      "causal",
      "Causal structure of the columns of DATA: PC with HSIC tests on GP-regression residuals (a CPDAG)");
  c.causal->add_option("DATA", cf.data, "data (.npy, or .csv with a header row naming the variables)")
      ->required();
  c.causal->add_option("--alpha", cf.alpha, "level of each independence test (default 0.05)")
      ->check(CLI::Range(1e-12, 1.0 - 1e-12));
  c.causal->add_option("--kernel-bandwidth", cf.bandwidth,
                       "Gaussian σ of every variable and residual: `median`, `bkl` or a positive number");
  c.causal
      ->add_option("--permutations", cf.permutations, "HSIC permutations per test (0: Gamma approximation)")
      ->check(integer_in(0, 1000000));
  c.causal->add_option("--max-given", cf.max_given, "largest conditioning set (default: no limit)")
      ->check(integer_in(0, 1000));
  c.causal->add_option(
      "--truth", cf.truth,
      "the true DAG as a .csv adjacency matrix (header = the variables; 1 at row i, column j for i -> j): "
      "also prints the structural Hamming distance to its CPDAG");
  c.causal->add_option("--seed", cf.seed, "seed of the permutations and landmarks (default 0)")
      ->check(seed_value());
  c.causal->add_option("--threads", threads, "worker threads (results do not depend on it)")
      ->check(integer_in(1, kMaxThreads));
  c.causal->add_flag("--json", cf.json, "print one JSON object instead of text");
  c.causal->add_option("--path", cf.plugin_paths, "extra plugin directory (searched first)");
  return c;
}

namespace {

kef::Matrix read_test_sample(const std::string& argument, const std::string& file) {
  kef::Matrix M;
  try {
    M = kef::read_table(file).values;
  } catch (const kef::DataError& e) {
    throw kef::DataError(argument + ": " + e.what());  // which of the two files
  }
  if (M.rows() == 0 || M.cols() == 0)
    throw kef::DataError(argument + " (" + file + "): no data (" + std::to_string(M.rows()) + " x " +
                         std::to_string(M.cols()) + ")");
  for (kef::Index j = 0; j < M.cols(); ++j)
    for (kef::Index i = 0; i < M.rows(); ++i)
      if (!std::isfinite(M(i, j)))
        throw kef::DataError(argument + " (" + file + "): row " + std::to_string(i + 1) + ", column " +
                             std::to_string(j + 1) + " is not a finite number");
  return M;
}

kef::KernelPtr cli_gaussian_kernel(kef::Registry& registry, double sigma) {
  char text[96];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", sigma);
  return registry.make_kernel(kef::Config::parse_string(text, "kef test"), {});
}

// NaN (no permutations) as JSON null, not as a number JSON cannot hold.
nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

std::string bandwidth_rule_name(const kef::BandwidthRule& r) {
  switch (r.kind) {
    case kef::BandwidthRule::Kind::Median:
      return "median";
    case kef::BandwidthRule::Kind::Bkl:
      return "bkl";
    case kef::BandwidthRule::Kind::BklMultiscale:
      return "bkl_multiscale";
    case kef::BandwidthRule::Kind::Given:
      break;
  }
  return "given";
}

}  // namespace

int cmd_kernel_test(kef::Registry& registry, const KernelTestFlags& f, bool two_sample, int threads) {
  // Arguments first, before any file is read.
  kef::BandwidthRule rule = kef::parse_bandwidth_rule(f.bandwidth, "--kernel-bandwidth", two_sample);
  if (rule.kind == kef::BandwidthRule::Kind::BklMultiscale)
    rule = kef::multiscale_rule(f.scales, "--kernel-scales");
  else if (!f.scales.empty())
    throw kef::ConfigError("--kernel-scales: applies to --kernel-bandwidth bkl_multiscale only");
  const kef::BandwidthRule rule_y =
      f.bandwidth_y.empty() ? rule : kef::parse_bandwidth_rule(f.bandwidth_y, "--kernel-bandwidth-y");
  const kef::Matrix X = read_test_sample("X", f.x_file), Y = read_test_sample("Y", f.y_file);
  const kef::Index P = static_cast<kef::Index>(f.permutations);
  kef::Context context(f.seed, threads, nullptr, "--threads");
  const kef::RandomStream rng = context.rng().derive(two_sample ? "two-sample" : "independence");
  nlohmann::ordered_json j;
  j["test"] = two_sample ? "two-sample" : "independence";
  j["x"] = {{"file", f.x_file}, {"rows", X.rows()}, {"columns", X.cols()}};
  j["y"] = {{"file", f.y_file}, {"rows", Y.rows()}, {"columns", Y.cols()}};
  j["permutations"] = P;
  j["seed"] = f.seed;
  if (two_sample) {
    if (X.cols() != Y.cols())
      throw kef::DataError("Y (" + f.y_file + "): " + std::to_string(Y.cols()) + " columns, but X (" +
                           f.x_file + ") has " + std::to_string(X.cols()) +
                           "; a two-sample test needs samples of the same "
                           "dimension");
    if (X.rows() < 2 || Y.rows() < 2)
      throw kef::DataError((X.rows() < 2 ? "X (" + f.x_file : "Y (" + f.y_file) +
                           "): a two-sample test needs at least 2 rows in each sample");
    load_default_plugins(registry, f.plugin_paths);
    const kef::ChosenBandwidth bw = kef::choose_bandwidth(rule, X, Y, "--kernel-bandwidth", context);
    const kef::KernelPtr k =
        bw.mixture()
            ? registry.make_kernel(kef::Config::parse_string(kef::kernel_table(bw), "--kernel-bandwidth"), {})
            : cli_gaussian_kernel(registry, bw.sigma);
    kef::RandomStream perm_rng = rng.derive("permutations");
    const kef::MmdTest t = kef::mmd_test(*k, X, Y, P, perm_rng, context);
    j["statistic"] = {{"mmd2_unbiased", t.mmd2}, {"mmd2_biased", t.mmd2_biased}};
    j["p_value"] = {{"permutation", json_number(t.p_value)},
                    {"permutation_biased", json_number(t.p_value_biased)},
                    {"gamma", t.gamma_p_value}};
    j["gamma"] = {{"shape", t.gamma.shape},
                  {"scale", t.gamma.scale},
                  {"null_mean", t.gamma.mean},
                  {"null_variance", t.gamma.variance}};
    j["bandwidth"] = {{"sigma", bw.sigma}, {"rule", bandwidth_rule_name(rule)}, {"how", bw.how}};
    if (bw.mixture()) {
      j["bandwidth"]["sigmas"] = bw.sigmas;
      j["bandwidth"]["weights"] = bw.weights;
    }
  } else {
    if (X.rows() != Y.rows())
      throw kef::DataError("Y (" + f.y_file + "): " + std::to_string(Y.rows()) + " rows, but X (" + f.x_file +
                           ") has " + std::to_string(X.rows()) + "; an independence test needs paired rows");
    if (X.rows() < 4)
      throw kef::DataError("X (" + f.x_file + "): " + std::to_string(X.rows()) +
                           " rows; an independence test needs at least 4 pairs");
    load_default_plugins(registry, f.plugin_paths);
    const kef::ChosenBandwidth bx = kef::choose_bandwidth(rule, X, "--kernel-bandwidth", context);
    const kef::ChosenBandwidth by = kef::choose_bandwidth(
        rule_y, Y, f.bandwidth_y.empty() ? "--kernel-bandwidth" : "--kernel-bandwidth-y", context);
    const kef::KernelPtr kx = cli_gaussian_kernel(registry, bx.sigma),
                         ky = cli_gaussian_kernel(registry, by.sigma);
    const kef::HsicTest t = kef::hsic_test(*kx, *ky, X, Y, P, rng.derive("permutations"), context);
    j["statistic"] = {{"hsic_biased", t.hsic}, {"hsic_unbiased", t.hsic_unbiased}};
    j["p_value"] = {{"permutation", json_number(t.p_value)}, {"gamma", t.gamma_p_value}};
    j["gamma"] = {{"shape", t.gamma.shape},
                  {"scale", t.gamma.scale},
                  {"null_mean", t.gamma.mean},
                  {"null_variance", t.gamma.variance}};
    j["bandwidth"] = {{"x", {{"sigma", bx.sigma}, {"rule", bandwidth_rule_name(rule)}, {"how", bx.how}}},
                      {"y", {{"sigma", by.sigma}, {"rule", bandwidth_rule_name(rule_y)}, {"how", by.how}}}};
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto num = [](const nlohmann::ordered_json& v) {
    if (v.is_null()) return std::string("n/a (--permutations 0)");
    std::ostringstream os;
    os.precision(6);
    os << v.get<double>();
    return os.str();
  };
  std::cout << (two_sample ? "two-sample test (MMD): " : "independence test (HSIC): ") << X.rows() << " x "
            << X.cols() << " (" << f.x_file << ") " << (two_sample ? "vs " : "with ") << Y.rows() << " x "
            << Y.cols() << " (" << f.y_file << ")\n";
  for (const auto& item : j["statistic"].items())
    std::cout << "  " << item.key() << " = " << num(item.value()) << "\n";
  std::cout << "  p-value (permutation, " << P << ") = " << num(j["p_value"]["permutation"]) << "\n";
  std::cout << "  p-value (Gamma approximation) = " << num(j["p_value"]["gamma"]) << "\n";
  if (two_sample) {
    std::cout << "  bandwidth = " << num(j["bandwidth"]["sigma"]) << " ("
              << j["bandwidth"]["how"].get<std::string>() << ")\n";
  } else {
    for (const char* v : {"x", "y"})
      std::cout << "  bandwidth " << v << " = " << num(j["bandwidth"][v]["sigma"]) << " ("
                << j["bandwidth"][v]["how"].get<std::string>() << ")\n";
  }
  return 0;
}

int cmd_causal(kef::Registry& registry, const CausalFlags& f, int threads) {
  kef::CausalDiscoveryOptions o;
  o.bandwidth = kef::parse_bandwidth_rule(f.bandwidth, "--kernel-bandwidth");
  o.alpha = f.alpha;
  o.permutations = static_cast<kef::Index>(f.permutations);
  o.max_given = static_cast<kef::Index>(f.max_given);
  o.where = "--kernel-bandwidth";
  const kef::TableData table = kef::read_table(f.data);
  const kef::Index p = table.values.cols();
  kef::PartialGraph truth;
  if (!f.truth.empty()) {
    const kef::TableData t = kef::read_table(f.truth);
    if (t.values.rows() != p || t.values.cols() != p)
      throw kef::DataError("--truth " + f.truth + ": a " + std::to_string(t.values.rows()) + " x " +
                           std::to_string(t.values.cols()) + " matrix (expected " + std::to_string(p) +
                           " x " + std::to_string(p) + ", one row and column per variable of " + f.data +
                           ")");
    kef::PartialGraph dag(p);
    for (kef::Index i = 0; i < p; ++i)
      for (kef::Index j = 0; j < p; ++j) {
        const double v = t.values(i, j);
        if (v != 0 && v != 1)
          throw kef::DataError("--truth " + f.truth + ": row " + std::to_string(i + 1) + ", column " +
                               std::to_string(j + 1) + " is " + std::to_string(v) + " (expected 0 or 1)");
        if (v == 1) {
          if (i == j || t.values(j, i) == 1)
            throw kef::DataError("--truth " + f.truth + ": variables " + std::to_string(i + 1) + " and " +
                                 std::to_string(j + 1) +
                                 " point at each other or themselves (expected a DAG)");
          dag.add_directed(i, j);
        }
      }
    try {
      truth = kef::cpdag_of_dag(dag);
    } catch (const kef::ConfigError& e) {
      throw kef::DataError("--truth " + f.truth + ": " + e.what());
    }
  }
  load_default_plugins(registry, f.plugin_paths);
  kef::Context context(f.seed, threads, nullptr, "--threads");
  const auto gaussian = [&](double sigma) { return cli_gaussian_kernel(registry, sigma); };
  const kef::CausalDiscoveryResult r =
      kef::discover_causal_structure(table.values, o, gaussian, context.child("causal"));
  nlohmann::ordered_json j;
  j["test"] = "causal";
  j["data"] = {{"file", f.data}, {"rows", table.values.rows()}, {"variables", table.columns}};
  j["alpha"] = f.alpha;
  j["bandwidth_rule"] = f.bandwidth;
  j["permutations"] = f.permutations;
  j["seed"] = f.seed;
  j["cpdag"] = r.pc.cpdag.to_string(table.columns);
  j["skeleton"] = r.pc.skeleton.to_string(table.columns);
  j["tests"] = r.pc.tests;
  j["regressions"] = r.regressions;
  j["orientation_conflicts"] = r.pc.conflicts;
  if (!f.truth.empty()) {
    j["truth_cpdag"] = truth.to_string(table.columns);
    j["structural_hamming_distance"] = kef::structural_hamming_distance(r.pc.cpdag, truth);
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "causal structure (PC, HSIC on GP-regression residuals, alpha " << f.alpha << ", bandwidth "
            << f.bandwidth << "): " << table.values.rows() << " rows of " << p << " variables (" << f.data
            << ")\n"
            << "  CPDAG: " << j["cpdag"].get<std::string>() << "\n"
            << "  tests: " << r.pc.tests << ", regressions: " << r.regressions << "\n";
  if (!f.truth.empty())
    std::cout << "  truth's CPDAG: " << j["truth_cpdag"].get<std::string>() << "\n"
              << "  structural Hamming distance: " << j["structural_hamming_distance"].get<kef::Index>()
              << "\n";
  return 0;
}

}  // namespace kef_cli
