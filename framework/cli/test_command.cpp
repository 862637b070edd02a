// `kef test` (test_command.hpp).
#include "test_command.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "kef/bandwidth_rule.hpp"
#include "kef/bayesian_witness.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/hsic_test.hpp"
#include "kef/kernel_causal_discovery.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "kef/line_plot.hpp"
#include "kef/mmd_test.hpp"
#include "kef/number_text.hpp"

namespace kef_cli {

KernelTestCommand add_kernel_test_command(CLI::App& app, KernelTestFlags& f, CausalFlags& cf, int& threads) {
  KernelTestCommand c;
  c.test = app.add_subcommand(
      "test", "Kernel tests on data files: two-sample (MMD), independence (HSIC), causal, witness");
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

void add_witness_command(KernelTestCommand& c, WitnessFlags& f, int& threads) {
  c.witness = c.test->add_subcommand(
      "witness",
      "Where do X and Y differ? The Bayesian witness function μ_P − μ_Q on a grid, with a credible band");
  CLI::App* w = c.witness;
  w->add_option("X", f.x_file, "first sample (.npy, or .csv with a header row)")->required();
  w->add_option("Y", f.y_file, "second sample (.npy or .csv), same columns as X")->required();
  w->add_option("--grid", f.grid,
                "points to evaluate the witness at: `a:b:n` (n evenly spaced values from a to b, 1-D data) "
                "or a .npy/.csv file with the samples' columns")
      ->required();
  w->add_option("--kernel-bandwidth", f.bandwidth,
                "Gaussian ℓ: `median` (pooled sample), `bkl` (Bayesian kernel learning on the pooled sample, "
                "the posterior mode) or a positive number");
  w->add_flag("--integrate-lengthscale", f.integrate,
              "with --kernel-bandwidth bkl: integrate over ℓ (the mixture over BKL's HMC draws of ℓ) "
              "instead of fixing ℓ at its mode");
  w->add_option("--tau2", f.tau2, "τ², the embedding likelihood's noise variance (default 1)")
      ->check(CLI::Range(1e-12, 1e12));
  w->add_option("--level", f.level, "probability of the central credible band (default 0.8)")
      ->check(CLI::Range(1e-6, 1.0 - 1e-6));
  w->add_option("--out", f.out, "CSV of the witness: x (or x1..xD), mean, lower, upper, sd");
  w->add_option("--plot", f.plot, "PNG of the witness with its band (1-D only)");
  w->add_option("--seed", f.seed, "seed of BKL's landmarks and HMC (default 0)")->check(seed_value());
  w->add_option("--threads", threads, "worker threads (results do not depend on it)")
      ->check(integer_in(1, kMaxThreads));
  w->add_flag("--json", f.json, "print one JSON object instead of text");
}

namespace {

// `a:b:n` (a < b, n >= 2), or a data file of points. ConfigError / DataError naming --grid.
kef::Matrix read_witness_grid(const std::string& spec, kef::Index dim) {
  const auto c1 = spec.find(':');
  if (c1 == std::string::npos) {
    kef::Matrix G;
    try {
      G = kef::read_table(spec).values;
    } catch (const kef::DataError& e) {
      throw kef::DataError(std::string("--grid: ") + e.what());
    }
    if (G.rows() == 0)
      throw kef::DataError("--grid " + spec + ": no points (an empty grid); give at least one row");
    if (G.cols() != dim)
      throw kef::DataError("--grid " + spec + ": " + std::to_string(G.cols()) +
                           " columns, but the samples have " + std::to_string(dim));
    kef::check_finite(G, "--grid " + spec);
    return G;
  }
  const auto c2 = spec.find(':', c1 + 1);
  auto number = [&](std::string_view t, double& v) {
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && ec == std::errc() && p == t.data() + t.size() && std::isfinite(v);
  };
  double a = 0, b = 0, n = 0;
  const std::string_view sv(spec);
  if (c2 == std::string::npos || spec.find(':', c2 + 1) != std::string::npos ||
      !number(sv.substr(0, c1), a) || !number(sv.substr(c1 + 1, c2 - c1 - 1), b) ||
      !number(sv.substr(c2 + 1), n) || n != std::floor(n))
    throw kef::ConfigError(
        "--grid: expected a:b:n (numbers a < b and an integer count n >= 2) or a file, got `" + spec + "`");
  if (n < 2)
    throw kef::ConfigError("--grid " + spec + ": " + kef::number_text(n) +
                           " points (an empty or one-point grid); expected n >= 2");
  if (n > 1e6) throw kef::ConfigError("--grid " + spec + ": more than 10^6 points");
  if (!(a < b)) throw kef::ConfigError("--grid " + spec + ": expected a < b");
  if (dim != 1)
    throw kef::DataError("--grid " + spec + ": a:b:n is a 1-D grid, but the samples have " +
                         std::to_string(dim) + " columns; give the points as a file");
  const auto count = static_cast<kef::Index>(n);
  kef::Matrix G(count, 1);
  for (kef::Index i = 0; i < count; ++i)
    G(i, 0) = a + (b - a) * static_cast<double>(i) / static_cast<double>(count - 1);
  return G;
}

// The CSV goes to a temporary name, then into place: a failed write leaves no half file.
void write_witness_csv(const std::string& out, const kef::Matrix& G, const kef::WitnessPosterior& w) {
  namespace fs = std::filesystem;
  const fs::path tmp = out + ".tmp";
  {
    std::ofstream f(tmp);
    f.precision(17);
    if (G.cols() == 1) {
      f << "x";
    } else {
      for (kef::Index d = 0; d < G.cols(); ++d) f << (d ? "," : "") << "x" << d + 1;
    }
    f << ",mean,lower,upper,sd\n";
    for (kef::Index i = 0; i < G.rows(); ++i) {
      for (kef::Index d = 0; d < G.cols(); ++d) f << G(i, d) << ",";
      f << w.mean[i] << "," << w.lower[i] << "," << w.upper[i] << "," << w.sd[i] << "\n";
    }
    f.close();
    if (!f) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw kef::ConfigError("--out " + out + ": cannot write (disk full?)");
    }
  }
  fs::rename(tmp, out);
}

}  // namespace

int cmd_witness(const WitnessFlags& f, int threads) {
  // Arguments first, before any data file is read.
  const kef::BandwidthRule rule = kef::parse_bandwidth_rule(f.bandwidth, "--kernel-bandwidth");
  if (f.integrate && rule.kind != kef::BandwidthRule::Kind::Bkl)
    throw kef::ConfigError(
        "--integrate-lengthscale: integrates over BKL's posterior of ℓ, so it needs "
        "--kernel-bandwidth bkl (got `" +
        f.bandwidth + "`)");
  if (!f.out.empty()) check_output_file("--out", f.out);
  if (!f.plot.empty()) check_output_file("--plot", f.plot);
  const kef::Matrix X = read_test_sample("X", f.x_file), Y = read_test_sample("Y", f.y_file);
  if (X.cols() != Y.cols())
    throw kef::DataError("Y (" + f.y_file + "): " + std::to_string(Y.cols()) + " columns, but X (" +
                         f.x_file + ") has " + std::to_string(X.cols()) +
                         "; the witness compares samples of the same dimension");
  const kef::Matrix G = read_witness_grid(f.grid, X.cols());
  if (!f.plot.empty() && G.cols() != 1)
    throw kef::ConfigError("--plot " + f.plot + ": the figure is for 1-D samples; these have " +
                           std::to_string(G.cols()) + " columns (use --out for the values)");
  kef::Context context(f.seed, threads, nullptr, "--threads");
  const kef::Context wc = context.child("witness");
  kef::WitnessOptions o;
  o.tau2 = f.tau2;
  o.level = f.level;
  o.where = "kef test witness";
  nlohmann::ordered_json bw;
  kef::WitnessPosterior w;
  if (rule.kind == kef::BandwidthRule::Kind::Bkl) {
    kef::BklOptions b;
    b.landmarks = kef::bkl_landmarks(X.rows() + Y.rows(), X.cols());
    b.method = f.integrate ? kef::BklMethod::Hmc : kef::BklMethod::Mode;
    b.context = "--kernel-bandwidth";
    const kef::LearnedWitness lw = kef::bayesian_witness_bkl(X, Y, G, b, o, wc);
    w = lw.witness;
    bw = {{"sigma", lw.bkl.sigma},
          {"rule", f.integrate ? "bkl-hmc" : "bkl"},
          {"how", lw.bkl.provenance},
          {"mode", lw.bkl.mode},
          {"log_likelihood", lw.bkl.log_likelihood},
          {"landmarks", lw.bkl.landmarks},
          {"lengthscales", w.lengthscales}};
    if (f.integrate) {
      bw["posterior_q05"] = lw.bkl.posterior_q05;
      bw["posterior_q95"] = lw.bkl.posterior_q95;
      bw["hmc"] = lw.bkl.hmc_summary;
    }
    // The profile of log L in ℓ, with the fields a pipeline records under chosen.KEY.bkl, so that
    // scripts/bkl_profile_plot.py draws either; −inf (ℓ too small for the landmarks) as null.
    nlohmann::ordered_json ll = nlohmann::ordered_json::array();
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
    const kef::ChosenBandwidth c = kef::choose_bandwidth(rule, X, Y, "--kernel-bandwidth", wc);
    w = kef::bayesian_witness(X, Y, G, c.sigma, o, wc);
    bw = {{"sigma", c.sigma}, {"rule", bandwidth_rule_name(rule)}, {"how", c.how}, {"lengthscales", 1}};
  }
  kef::Index excludes = 0;
  for (kef::Index i = 0; i < G.rows(); ++i) excludes += (w.lower[i] > 0.0 || w.upper[i] < 0.0) ? 1 : 0;
  const double fraction = static_cast<double>(excludes) / static_cast<double>(G.rows());
  if (!f.out.empty()) write_witness_csv(f.out, G, w);
  if (!f.plot.empty()) {
    kef::LineSeries s{"posterior mean, central " + kef::number_text(100 * f.level, 3) + "% band", G.col(0),
                      w.mean, w.lower, w.upper};
    kef::LineSeries zero{"0 (no difference)", kef::Vector(2), kef::Vector::Zero(2), {}, {}};
    zero.x << G(0, 0), G(G.rows() - 1, 0);
    kef::LinePlotOptions po;
    po.title = "Bayesian witness function μ_P − μ_Q";
    po.x_label = "x";
    po.y_label = "witness";
    po.footnote = std::to_string(X.rows()) + " vs " + std::to_string(Y.rows()) +
                  " points · ℓ = " + kef::number_text(bw["sigma"].get<double>(), 3) + " (" +
                  bw["rule"].get<std::string>() + ") · band excludes 0 on " +
                  kef::number_text(100 * fraction, 3) + "% of the grid";
    kef::write_line_plot(f.plot, {s, zero}, po);
  }
  nlohmann::ordered_json j;
  j["test"] = "witness";
  j["x"] = {{"file", f.x_file}, {"rows", X.rows()}, {"columns", X.cols()}};
  j["y"] = {{"file", f.y_file}, {"rows", Y.rows()}, {"columns", Y.cols()}};
  j["points"] = G.rows();
  j["level"] = f.level;
  j["tau2"] = f.tau2;
  j["seed"] = f.seed;
  j["bandwidth"] = bw;
  j["band_excludes_zero"] = fraction;
  j["max_abs_mean"] = w.mean.cwiseAbs().maxCoeff();
  j["max_sd"] = w.sd.maxCoeff();
  if (!f.out.empty()) j["out"] = f.out;
  if (!f.plot.empty()) j["plot"] = f.plot;
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "Bayesian witness function: " << X.rows() << " x " << X.cols() << " (" << f.x_file << ") vs "
            << Y.rows() << " x " << Y.cols() << " (" << f.y_file << "), " << G.rows() << " points\n"
            << "  bandwidth = " << kef::number_text(bw["sigma"].get<double>(), 6) << " ("
            << bw["how"].get<std::string>() << ")\n"
            << "  central " << kef::number_text(100 * f.level, 3) << "% band excludes 0 at "
            << kef::number_text(100 * fraction, 4)
            << "% of the points; max |mean| = " << kef::number_text(j["max_abs_mean"].get<double>(), 4)
            << ", max sd = " << kef::number_text(j["max_sd"].get<double>(), 4) << "\n";
  if (!f.out.empty()) std::cout << "  values: " << f.out << "\n";
  if (!f.plot.empty()) std::cout << "  figure: " << f.plot << "\n";
  return 0;
}

}  // namespace kef_cli
