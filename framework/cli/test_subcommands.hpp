#pragma once
// The subcommands of `kef test`, one file each, and what they share (test_command.cpp). Internal to
// the kef command.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kef/kernel_tests.hpp"
#include "kef/registry.hpp"
#include "kef/types.hpp"
#include "test_command.hpp"

namespace kef_cli {

// test_two_sample.cpp: `kef test two-sample X Y` (MMD).
CLI::App* add_two_sample_command(CLI::App& test, KernelTestFlags& f, int& threads);
int cmd_two_sample(kef::Registry& registry, const KernelTestFlags& f, int threads);
// test_independence.cpp: `kef test independence X Y` (HSIC).
CLI::App* add_independence_command(CLI::App& test, KernelTestFlags& f, int& threads);
int cmd_independence(kef::Registry& registry, const KernelTestFlags& f, int threads);
// test_causal.cpp: `kef test causal DATA`.
CLI::App* add_causal_command(CLI::App& test, CausalFlags& f, int& threads);
int cmd_causal(kef::Registry& registry, const CausalFlags& f, int threads);
// test_witness.cpp: `kef test witness X Y --grid ...`.
CLI::App* add_witness_command(CLI::App& test, WitnessFlags& f, int& threads);
int cmd_witness(const WitnessFlags& f, int threads);
// test_aggregate.cpp: `kef test two-sample|independence --aggregate` (MMDAgg, HSICAgg). Declares
// --aggregate and its options on two-sample and independence (after their own options).
void add_aggregate_flags(KernelTestCommand& c, KernelTestFlags& f);
int cmd_aggregated_test(const KernelTestFlags& f, bool two_sample, int threads);

// The options two-sample and independence both take: X, Y, --permutations, --seed, --threads, --json
// and --path.
void add_sample_pair_options(CLI::App& sub, KernelTestFlags& f, int& threads);
// The library's options from the flags of two-sample or independence.
kef::KernelTestOptions kernel_test_options(const KernelTestFlags& f, int threads);
// A sample file (`argument`: "X" or "Y"), refused when empty or not finite with a DataError naming
// the argument, the file, and the row and column.
kef::Matrix read_test_sample(const std::string& argument, const std::string& file);
// The part two-sample and independence share: checks the options (before any file is read), reads X
// and Y into *X and *Y, loads the plugins and runs `test`. With --json it prints the report and returns
// nothing; otherwise it returns the parsed report for the subcommand's text.
using PairTestJson = std::string (*)(kef::Registry&, const kef::TestSample&, const kef::TestSample&,
                                     const kef::KernelTestOptions&);
std::optional<nlohmann::ordered_json> run_pair_test(kef::Registry& registry, const KernelTestFlags& f,
                                                    int threads, bool two_sample, PairTestJson test,
                                                    kef::Matrix* X, kef::Matrix* Y);
// The lines of a permutation test's text report after its head: each statistic and both p-values.
void print_permutation_test(const nlohmann::ordered_json& report, long long permutations);
// A number of the text report as printed (6 significant digits), or why there is none.
std::string number_text_of(const nlohmann::ordered_json& v);

}  // namespace kef_cli
