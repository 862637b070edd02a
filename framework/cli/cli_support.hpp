#pragma once
// What the kef command's subcommands share: the limits and validators of count and seed options, the
// check of an --out file, and loading the plugins. Internal to the kef command.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kef/registry.hpp"

namespace kef_cli {

// Limits of the count options. -n is bounded so that the sample matrix and every count derived from
// it stay far from overflow (kef sample -n 9223372036854775807 overflowed in 0.2).
inline constexpr long long kMaxThreads = 4096;
inline constexpr long long kMaxSamples = 1000000000;

// An integer option in [lo, hi]. CLI11's own range check prints its bounds as doubles (a 300-digit
// number for PositiveNumber) and wraps negative numbers into unsigned options.
CLI::Validator integer_in(long long lo, long long hi);
// A seed: an unsigned 64-bit integer, written in decimal.
CLI::Validator seed_value();
// A file a command writes (--out): absent or a regular file in an existing writable directory.
void check_output_file(const std::string& option, const std::string& out);
// The built-in components and the plugins of the search path (plus `extra`), with permission warnings.
void load_default_plugins(kef::Registry& registry, const std::vector<std::string>& extra);

}  // namespace kef_cli
