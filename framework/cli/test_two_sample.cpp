// `kef test two-sample X Y` (test_subcommands.hpp): MMD² with permutation and Gamma p-values.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "kef/kernel_tests.hpp"
#include "test_subcommands.hpp"

namespace kef_cli {

CLI::App* add_two_sample_command(CLI::App& test, KernelTestFlags& f, int& threads) {
  CLI::App* sub = test.add_subcommand(
      "two-sample",
      "Do the rows of X and Y come from the same distribution? MMD² with permutation and Gamma p-values");
  add_sample_pair_options(*sub, f, threads);
  sub->add_option("--kernel-bandwidth", f.bandwidth,
                  "Gaussian σ: `median` (median distance of the pooled sample), `bkl` (Bayesian "
                  "kernel learning on the pooled sample), a positive number, or `bkl_multiscale` (a "
                  "Gaussian mixture kernel whose scales and weights BKL learns from --kernel-scales)");
  sub->add_option(
         "--kernel-scales", f.scales,
         "with --kernel-bandwidth bkl_multiscale: the mixture's starting length scales, e.g. 0.5,2,8")
      ->delimiter(',');
  return sub;
}

int cmd_two_sample(kef::Registry& registry, const KernelTestFlags& f, int threads) {
  kef::Matrix X, Y;
  const auto report = run_pair_test(registry, f, threads, true, kef::two_sample_test_json, &X, &Y);
  if (!report) return 0;  // --json: printed
  const nlohmann::ordered_json& j = *report;
  std::cout << "two-sample test (MMD): " << X.rows() << " x " << X.cols() << " (" << f.x_file << ") vs "
            << Y.rows() << " x " << Y.cols() << " (" << f.y_file << ")\n";
  print_permutation_test(j, f.permutations);
  std::cout << "  bandwidth = " << number_text_of(j["bandwidth"]["sigma"]) << " ("
            << j["bandwidth"]["how"].get<std::string>() << ")\n";
  return 0;
}

}  // namespace kef_cli
