#pragma once
// What the kef command's subcommands share: the limits and validators of count and seed options, the
// check of an --out file, and loading the plugins. Internal to the kef command.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kef/data_transform.hpp"
#include "kef/registry.hpp"
#include "kef/types.hpp"

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
// When CLI11 refused a command line for a word kef does not know (a subcommand, or a --option of the
// command given), a message naming that word and the closest known one ("did you mean"); else empty.
// Checked before CLI11's own message, which for a misspelt subcommand or option names something else
// ("A subcommand is required", "--out is required").
std::string unknown_word_message(CLI::App& app, int argc, const char* const* argv);
// No command writes a non-finite number with exit 0: the first non-finite value of an output (in file
// order) is a NumericalError naming `source` (the model), its row, its column (the component of the
// draw) and how many values are not finite. `rows` names the rows ("sample", "draw").
void require_finite_output(const kef::Matrix& values, const std::string& source, const std::string& rows);
// The memory a command's output needs while it is held whole (about `copies` matrices of rows x cols
// doubles), refused up front (kef/memory_budget.hpp's require_memory) when more than the memory limit,
// naming `option` (e.g. "-n 1000000000").
void require_output_memory(double rows, double cols, double copies, const std::string& option,
                           const std::string& what);
// Rows a command writes to --out: a CSV file for a .csv name (a header of `columns`), else .npy
// (table_file.hpp). `columns`: the names of the written columns.
void write_output_rows(const std::string& out, const kef::Matrix& rows, const std::vector<std::string>& columns);
// The names of the data's columns as a saved model records them (`dim` of them; x0, x1, ... for a model
// that records none or a target that names none).
std::vector<std::string> data_column_names(const kef::DataTransform& transform, kef::Index dim);
// The built-in components and the plugins of the search path (plus `extra`), with permission warnings.
void load_default_plugins(kef::Registry& registry, const std::vector<std::string>& extra);

}  // namespace kef_cli
