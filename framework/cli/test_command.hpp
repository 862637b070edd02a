#pragma once
// `kef test`: kernel tests on data files (two-sample, independence, witness) and causal structure
// discovery. Each subcommand is its own file (test_two_sample.cpp, test_independence.cpp,
// test_causal.cpp, test_witness.cpp); test_command.cpp declares `kef test` and runs the subcommand
// given. Internal to the kef command.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "kef/registry.hpp"

namespace kef_cli {

// `kef test two-sample X Y` and `kef test independence X Y`: kernel tests on two data files
// (kef/mmd_test.hpp, kef/hsic_test.hpp; docs/math.md §8.9, §8.10).
struct KernelTestFlags {
  std::string x_file, y_file;
  std::string bandwidth = "median", bandwidth_y;
  std::vector<double> scales;  // two-sample, --kernel-bandwidth bkl_multiscale: the starting length scales
  long long permutations = 1000;
  std::uint64_t seed = 0;
  bool json = false;
  std::vector<std::string> plugin_paths;
  // --aggregate: the aggregated test (MMDAgg, HSICAgg) over a collection of kernels and bandwidths,
  // with the level corrected for the multiple testing (kef/aggregated_test.hpp).
  bool aggregate = false;
  std::string kernels = "laplace_gaussian", weights = "uniform", approximation = "auto";
  double alpha = 0.05, hsic_power = 2;
  long long bootstrap_draws = 2000, level_draws = 2000, bisection_steps = 50, number_bandwidths = 10;
  int hsic_lower = -2, hsic_upper = 2;
  std::string plot;  // --plot: the figure of the single tests (kef/aggregated_test_figure.hpp)
};

// `kef test causal DATA`: the PC algorithm with HSIC tests on GP-regression residuals.
struct CausalFlags {
  std::string data, truth, bandwidth = "median";
  double alpha = 0.05;
  long long permutations = 200, max_given = -1;
  std::uint64_t seed = 0;
  bool json = false;
  std::vector<std::string> plugin_paths;
};

// `kef test witness X Y --grid a:b:n`: the Bayesian witness function, the posterior of μ_P − μ_Q
// (kef/bayesian_witness.hpp; docs/math.md §9.5), with its central credible band, as CSV and PNG.
struct WitnessFlags {
  std::string x_file, y_file, grid, bandwidth = "median", out, plot;
  bool integrate = false;  // --integrate-lengthscale: the mixture over BKL's HMC draws of ℓ
  double tau2 = 1.0, level = 0.8;
  std::uint64_t seed = 0;
  bool json = false;
};

// The flags of every subcommand. two-sample and independence share theirs: one of them is given.
struct TestFlags {
  KernelTestFlags pair;
  CausalFlags causal;
  WitnessFlags witness;
};

struct KernelTestCommand {
  CLI::App* test = nullptr;
  CLI::App* two_sample = nullptr;
  CLI::App* independence = nullptr;
  CLI::App* causal = nullptr;
  CLI::App* witness = nullptr;
};

// Declares `kef test` and its subcommands two-sample, independence, causal and witness.
KernelTestCommand add_test_command(CLI::App& app, TestFlags& f, int& threads);
// Runs the subcommand of `kef test` that was given (c.test parsed).
int cmd_test(kef::Registry& registry, const KernelTestCommand& c, const TestFlags& f, int threads);

}  // namespace kef_cli
