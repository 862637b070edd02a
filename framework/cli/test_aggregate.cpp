// `kef test two-sample|independence --aggregate` (test_subcommands.hpp): MMDAgg and HSICAgg, one
// test per kernel and bandwidth of a collection with the level corrected for the multiple testing.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"
#include "kef/aggregated_test_figure.hpp"
#include "kef/aggregated_test_report.hpp"
#include "kef/kernel_tests.hpp"
#include "test_subcommands.hpp"

namespace kef_cli {

void add_aggregate_flags(KernelTestCommand& c, KernelTestFlags& f) {
  for (CLI::App* sub : {c.two_sample, c.independence}) {
    const bool two = sub == c.two_sample;
    CLI::Option* on = sub->add_flag(
        "--aggregate", f.aggregate,
        two ? "MMDAgg: one test per kernel and bandwidth of a collection, the level corrected for the "
              "multiple testing (no bandwidth to choose)"
            : "HSICAgg: one test per pair of Gaussian bandwidths on X and Y, the level corrected for the "
              "multiple testing (no bandwidth to choose)");
    sub->get_option("--kernel-bandwidth")->excludes(on);
    sub->get_option("--permutations")->excludes(on);
    sub->add_option("--alpha", f.alpha, "with --aggregate: the level (default 0.05)")->needs(on);
    sub->add_option("--bootstrap-draws", f.bootstrap_draws,
                    "with --aggregate: simulated statistics for the single tests' quantiles (default 2000)")
        ->check(integer_in(1, 100000000))
        ->needs(on);
    sub->add_option("--level-draws", f.level_draws,
                    "with --aggregate: simulated statistics for the level correction (default 2000)")
        ->check(integer_in(1, 100000000))
        ->needs(on);
    sub->add_option("--bisection-steps", f.bisection_steps,
                    "with --aggregate: bisection steps of the level correction (default 50)")
        ->check(integer_in(1, 1000))
        ->needs(on);
    sub->add_option(
           "--plot", f.plot,
           two ? "with --aggregate: PNG of the single tests, one panel per kernel family: the statistic "
                 "and its level-corrected threshold against the bandwidth, the rejecting tests marked"
               : "with --aggregate: PNG of the single tests, one panel per bandwidth of Y: the "
                 "statistic and its level-corrected threshold against X's bandwidth, the rejecting "
                 "tests marked")
        ->needs(on);
  }
  c.independence->get_option("--kernel-bandwidth-y")->excludes(c.independence->get_option("--aggregate"));
  CLI::App* two = c.two_sample;
  CLI::Option* on = two->get_option("--aggregate");
  two->get_option("--kernel-scales")->excludes(on);
  two->add_option("--kernels", f.kernels,
                  "with --aggregate: the kernel collection, gaussian, laplace, imq, matern_P.5_l1 or "
                  "matern_P.5_l2 (P = 0..4), laplace_gaussian (default), all_matern_l1, all_matern_l2, "
                  "all_matern_l1_l2 or all")
      ->needs(on);
  two->add_option("--number-bandwidths", f.number_bandwidths,
                  "with --aggregate: bandwidths per kernel, geometric between the scaled smallest and "
                  "largest distances (default 10)")
      ->check(integer_in(1, 1000))
      ->needs(on);
  two->add_option("--weights", f.weights,
                  "with --aggregate: the level's share per bandwidth, uniform (default), decreasing, "
                  "increasing or centred")
      ->needs(on);
  two->add_option("--approximation", f.approximation,
                  "with --aggregate: auto (the wild bootstrap for samples of equal size, else "
                  "permutations) or permutations")
      ->check(CLI::IsMember({"auto", "permutations"}))
      ->needs(on);
  CLI::App* ind = c.independence;
  CLI::Option* ind_on = ind->get_option("--aggregate");
  ind->add_option("--hsic-power", f.hsic_power,
                  "with --aggregate: the bandwidths are power^i times each sample's median distance "
                  "(default 2)")
      ->needs(ind_on);
  ind->add_option("--hsic-lower", f.hsic_lower, "with --aggregate: the smallest exponent i (default -2)")
      ->needs(ind_on);
  ind->add_option("--hsic-upper", f.hsic_upper, "with --aggregate: the largest exponent i (default 2)")
      ->needs(ind_on);
}

int cmd_aggregated_test(const KernelTestFlags& f, bool two_sample, int threads) {
  kef::AggregateRequest r;
  kef::AggregateOptions& o = r.options;
  o.alpha = f.alpha;
  o.bootstrap_draws = f.bootstrap_draws;
  o.level_draws = f.level_draws;
  o.bisection_steps = f.bisection_steps;
  o.bandwidths = f.number_bandwidths;
  o.kernels = f.kernels;
  o.weights = f.weights;
  o.permutations = f.approximation == "permutations";
  o.hsic_power = f.hsic_power;
  o.hsic_lower = f.hsic_lower;
  o.hsic_upper = f.hsic_upper;
  o.flag_names = true;
  r.seed = f.seed;
  r.threads = threads;
  // Arguments first, before any file is read.
  kef::check_aggregate_options(o, two_sample ? kef::AggregateKind::Mmd : kef::AggregateKind::Hsic);
  if (!f.plot.empty()) check_output_file("--plot", f.plot);
  const kef::Matrix X = read_test_sample("X", f.x_file), Y = read_test_sample("Y", f.y_file);
  const kef::TestSample x{&X, "X (" + f.x_file + ")", f.x_file}, y{&Y, "Y (" + f.y_file + ")", f.y_file};
  const std::string report =
      two_sample ? kef::aggregated_two_sample_json(x, y, r) : kef::aggregated_independence_json(x, y, r);
  if (!f.plot.empty())
    for (const std::string& note : kef::write_aggregated_test_figure(f.plot, report, "--plot").notes)
      std::cerr << "[kef] note: " << note << "\n";
  if (f.json && f.plot.empty()) {
    std::cout << report << "\n";
    return 0;
  }
  if (f.json) {
    auto j = nlohmann::ordered_json::parse(report);
    j["plot"] = f.plot;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const auto j = nlohmann::ordered_json::parse(report)["aggregate"];
  std::cout << (two_sample ? "two-sample test (MMDAgg, " : "independence test (HSICAgg, ")
            << j["approximation"].get<std::string>() << "): " << X.rows() << " x " << X.cols() << " ("
            << f.x_file << ") " << (two_sample ? "vs " : "with ") << Y.rows() << " x " << Y.cols() << " ("
            << f.y_file << ")\n";
  std::cout << "  " << (j["reject"].get<bool>() ? "reject" : "do not reject") << " at level " << f.alpha
            << " (level correction u = " << number_text_of(j["level_correction"]) << ", "
            << j["single_tests"].size() << " single tests)\n";
  std::cout << "  kernel            bandwidth     statistic     quantile      p-value    threshold  reject\n";
  for (const auto& t : j["single_tests"]) {
    std::string bandwidth = number_text_of(t["bandwidth"]);
    if (t.contains("bandwidth_y")) bandwidth += ", " + number_text_of(t["bandwidth_y"]);
    char line[256];
    std::snprintf(line, sizeof line, "  %-16s %-12s %12.5g %12.5g %10.4g %10.4g  %s\n",
                  t["kernel"].get<std::string>().c_str(), bandwidth.c_str(), t["statistic"].get<double>(),
                  t["quantile"].get<double>(), t["p_value"].get<double>(), t["threshold"].get<double>(),
                  t["reject"].get<bool>() ? "yes" : "no");
    std::cout << line;
  }
  if (!f.plot.empty()) std::cout << "  figure: " << f.plot << "\n";
  return 0;
}

}  // namespace kef_cli
