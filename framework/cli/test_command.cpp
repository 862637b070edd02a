// `kef test` (test_command.hpp): declares the command and its subcommands, runs the one given, and
// holds what the subcommands share (test_subcommands.hpp).
#include "test_command.hpp"

#include <cmath>
#include <sstream>

#include "cli_support.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "test_subcommands.hpp"

namespace kef_cli {

KernelTestCommand add_test_command(CLI::App& app, TestFlags& f, int& threads) {
  KernelTestCommand c;
  c.test = app.add_subcommand(
      "test", "Kernel tests on data files: two-sample (MMD), independence (HSIC), causal, witness");
  c.test->require_subcommand(1);
  c.two_sample = add_two_sample_command(*c.test, f.pair, threads);
  c.independence = add_independence_command(*c.test, f.pair, threads);
  add_aggregate_flags(c, f.pair);
  c.causal = add_causal_command(*c.test, f.causal, threads);
  c.witness = add_witness_command(*c.test, f.witness, threads);
  return c;
}

int cmd_test(kef::Registry& registry, const KernelTestCommand& c, const TestFlags& f, int threads) {
  if (c.causal->parsed()) return cmd_causal(registry, f.causal, threads);
  if (c.witness->parsed()) return cmd_witness(f.witness, threads);
  if (f.pair.aggregate) return cmd_aggregated_test(f.pair, c.two_sample->parsed(), threads);
  if (c.two_sample->parsed()) return cmd_two_sample(registry, f.pair, threads);
  return cmd_independence(registry, f.pair, threads);
}

void add_sample_pair_options(CLI::App& sub, KernelTestFlags& f, int& threads) {
  sub.add_option("X", f.x_file, "first sample (.npy, or .csv with a header row)")->required();
  sub.add_option("Y", f.y_file, "second sample (.npy or .csv)")->required();
  sub.add_option("--permutations", f.permutations, "permutations for the permutation p-value (0: none)")
      ->check(integer_in(0, 100000000));
  sub.add_option("--seed", f.seed, "seed of the permutations (default 0)")->check(seed_value());
  sub.add_option("--threads", threads, "worker threads (results do not depend on it)")
      ->check(integer_in(1, kMaxThreads));
  sub.add_flag("--json", f.json, "print one JSON object instead of text");
  sub.add_option("--path", f.plugin_paths, "extra plugin directory (searched first)");
}

kef::KernelTestOptions kernel_test_options(const KernelTestFlags& f, int threads) {
  kef::KernelTestOptions o;
  o.bandwidth = f.bandwidth;
  o.bandwidth_y = f.bandwidth_y;
  o.scales = f.scales;
  o.permutations = f.permutations;
  o.seed = f.seed;
  o.threads = threads;
  return o;
}

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

std::optional<nlohmann::ordered_json> run_pair_test(kef::Registry& registry, const KernelTestFlags& f,
                                                    int threads, bool two_sample, PairTestJson test,
                                                    kef::Matrix* X, kef::Matrix* Y) {
  const kef::KernelTestOptions o = kernel_test_options(f, threads);
  kef::check_kernel_test_options(o, two_sample);  // arguments first, before any file is read
  *X = read_test_sample("X", f.x_file);
  *Y = read_test_sample("Y", f.y_file);
  load_default_plugins(registry, f.plugin_paths);
  const kef::TestSample x{X, "X (" + f.x_file + ")", f.x_file}, y{Y, "Y (" + f.y_file + ")", f.y_file};
  const std::string report = test(registry, x, y, o);
  if (f.json) {
    std::cout << report << "\n";
    return std::nullopt;
  }
  return nlohmann::ordered_json::parse(report);
}

void print_permutation_test(const nlohmann::ordered_json& j, long long permutations) {
  for (const auto& item : j["statistic"].items())
    std::cout << "  " << item.key() << " = " << number_text_of(item.value()) << "\n";
  std::cout << "  p-value (permutation, " << permutations
            << ") = " << number_text_of(j["p_value"]["permutation"]) << "\n";
  std::cout << "  p-value (Gamma approximation) = " << number_text_of(j["p_value"]["gamma"]) << "\n";
}

std::string number_text_of(const nlohmann::ordered_json& v) {
  if (v.is_null()) return std::string("n/a (--permutations 0)");
  std::ostringstream os;
  os.precision(6);
  os << v.get<double>();
  return os.str();
}

}  // namespace kef_cli
