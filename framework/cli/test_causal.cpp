// `kef test causal DATA` (test_subcommands.hpp): the PC algorithm with HSIC tests on GP-regression
// residuals, and with --truth the structural Hamming distance to the true DAG's CPDAG.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"
#include "kef/bandwidth_rule.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/kernel_tests.hpp"
#include "kef/pc_algorithm.hpp"
#include "test_subcommands.hpp"

namespace kef_cli {

CLI::App* add_causal_command(CLI::App& test, CausalFlags& f, int& threads) {
  CLI::App* causal = test.add_subcommand(
      "causal",
      "Causal structure of the columns of DATA: PC with HSIC tests on GP-regression residuals (a CPDAG)");
  causal->add_option("DATA", f.data, "data (.npy, or .csv with a header row naming the variables)")
      ->required();
  causal->add_option("--alpha", f.alpha, "level of each independence test (default 0.05)")
      ->check(CLI::Range(1e-12, 1.0 - 1e-12));
  causal->add_option("--kernel-bandwidth", f.bandwidth,
                     "Gaussian σ of every variable and residual: `median`, `bkl` or a positive number");
  causal->add_option("--permutations", f.permutations, "HSIC permutations per test (0: Gamma approximation)")
      ->check(integer_in(0, 1000000));
  causal->add_option("--max-given", f.max_given, "largest conditioning set (default: no limit)")
      ->check(integer_in(0, 1000));
  causal->add_option(
      "--truth", f.truth,
      "the true DAG as a .csv adjacency matrix (header = the variables; 1 at row i, column j for i -> j): "
      "also prints the structural Hamming distance to its CPDAG");
  causal->add_option("--seed", f.seed, "seed of the permutations and landmarks (default 0)")
      ->check(seed_value());
  causal->add_option("--threads", threads, "worker threads (results do not depend on it)")
      ->check(integer_in(1, kMaxThreads));
  causal->add_flag("--json", f.json, "print one JSON object instead of text");
  causal->add_option("--path", f.plugin_paths, "extra plugin directory (searched first)");
  return causal;
}

namespace {

// The CPDAG of the DAG in --truth (`p` variables): a p x p adjacency matrix of 0s and 1s.
kef::PartialGraph read_truth_cpdag(const std::string& truth_file, const std::string& data_file,
                                   kef::Index p) {
  const kef::TableData t = kef::read_table(truth_file);
  if (t.values.rows() != p || t.values.cols() != p)
    throw kef::DataError("--truth " + truth_file + ": a " + std::to_string(t.values.rows()) + " x " +
                         std::to_string(t.values.cols()) + " matrix (expected " + std::to_string(p) + " x " +
                         std::to_string(p) + ", one row and column per variable of " + data_file + ")");
  kef::PartialGraph dag(p);
  for (kef::Index i = 0; i < p; ++i)
    for (kef::Index j = 0; j < p; ++j) {
      const double v = t.values(i, j);
      if (v != 0 && v != 1)
        throw kef::DataError("--truth " + truth_file + ": row " + std::to_string(i + 1) + ", column " +
                             std::to_string(j + 1) + " is " + std::to_string(v) + " (expected 0 or 1)");
      if (v == 1) {
        if (i == j || t.values(j, i) == 1)
          throw kef::DataError("--truth " + truth_file + ": variables " + std::to_string(i + 1) + " and " +
                               std::to_string(j + 1) + " point at each other or themselves (expected a DAG)");
        dag.add_directed(i, j);
      }
    }
  try {
    return kef::cpdag_of_dag(dag);
  } catch (const kef::ConfigError& e) {
    throw kef::DataError("--truth " + truth_file + ": " + e.what());
  }
}

}  // namespace

int cmd_causal(kef::Registry& registry, const CausalFlags& f, int threads) {
  kef::parse_bandwidth_rule(f.bandwidth, "--kernel-bandwidth");  // arguments first, before any file is read
  const kef::TableData table = kef::read_table(f.data);
  const kef::Index p = table.values.cols();
  kef::PartialGraph truth;
  if (!f.truth.empty()) truth = read_truth_cpdag(f.truth, f.data, p);
  load_default_plugins(registry, f.plugin_paths);
  kef::CausalRequest request;
  request.bandwidth = f.bandwidth;
  request.alpha = f.alpha;
  request.permutations = f.permutations;
  request.max_given = f.max_given;
  request.seed = f.seed;
  request.threads = threads;
  request.truth_cpdag = f.truth.empty() ? nullptr : &truth;
  const auto j = nlohmann::ordered_json::parse(kef::causal_discovery_json(
      registry, kef::TestSample{&table.values, f.data, f.data}, table.columns, request));
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "causal structure (PC, HSIC on GP-regression residuals, alpha " << f.alpha << ", bandwidth "
            << f.bandwidth << "): " << table.values.rows() << " rows of " << p << " variables (" << f.data
            << ")\n"
            << "  CPDAG: " << j["cpdag"].get<std::string>() << "\n"
            << "  tests: " << j["tests"].get<kef::Index>()
            << ", regressions: " << j["regressions"].get<kef::Index>() << "\n";
  if (!f.truth.empty())
    std::cout << "  truth's CPDAG: " << j["truth_cpdag"].get<std::string>() << "\n"
              << "  structural Hamming distance: " << j["structural_hamming_distance"].get<kef::Index>()
              << "\n";
  return 0;
}

}  // namespace kef_cli
