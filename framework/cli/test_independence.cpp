// `kef test independence X Y` (test_subcommands.hpp): HSIC on paired rows with permutation and Gamma
// p-values.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "kef/kernel_tests.hpp"
#include "test_subcommands.hpp"

namespace kef_cli {

CLI::App* add_independence_command(CLI::App& test, KernelTestFlags& f, int& threads) {
  CLI::App* sub = test.add_subcommand(
      "independence",
      "Are the paired rows x_i of X and y_i of Y independent? HSIC with permutation and Gamma p-values");
  add_sample_pair_options(*sub, f, threads);
  sub->add_option(
      "--kernel-bandwidth", f.bandwidth,
      "Gaussian σ on X (and on Y unless --kernel-bandwidth-y): `median`, `bkl` or a positive number");
  sub->add_option("--kernel-bandwidth-y", f.bandwidth_y,
                  "Gaussian σ on Y: `median`, `bkl` or a positive number");
  return sub;
}

int cmd_independence(kef::Registry& registry, const KernelTestFlags& f, int threads) {
  kef::Matrix X, Y;
  const auto report = run_pair_test(registry, f, threads, false, kef::independence_test_json, &X, &Y);
  if (!report) return 0;  // --json: printed
  const nlohmann::ordered_json& j = *report;
  std::cout << "independence test (HSIC): " << X.rows() << " x " << X.cols() << " (" << f.x_file << ") with "
            << Y.rows() << " x " << Y.cols() << " (" << f.y_file << ")\n";
  print_permutation_test(j, f.permutations);
  for (const char* v : {"x", "y"})
    std::cout << "  bandwidth " << v << " = " << number_text_of(j["bandwidth"][v]["sigma"]) << " ("
              << j["bandwidth"][v]["how"].get<std::string>() << ")\n";
  return 0;
}

}  // namespace kef_cli
