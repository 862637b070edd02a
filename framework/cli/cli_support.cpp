// Shared by the kef command's subcommands (cli_support.hpp).
#include "cli_support.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/memory_budget.hpp"
#include "kef/pipeline.hpp"
#include "kef/plugin_permissions.hpp"
#include "table_file.hpp"
#include "text.hpp"

namespace kef_cli {

namespace fs = std::filesystem;

// An integer option in [lo, hi]. CLI11's own range check prints its bounds as doubles (a 300-digit
// number for PositiveNumber) and wraps negative numbers into unsigned options.
CLI::Validator integer_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        long long v = 0;
        const char* end = text.data() + text.size();
        auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || p != end || v < lo || v > hi)
          return "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got `" +
                 text + "`";
        return std::string();
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// A seed: an integer from 0 to 2^64 - 1 (no sign: "-1" would wrap to 2^64 - 1).
CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        auto [p, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() || p != end)
          return "expected an integer from 0 to 18446744073709551615, got `" + text + "`";
        return std::string();
      },
      "UINT64");
}

// A file a command writes (--out). kef writes a temporary file and renames it over the target, so the
// target must be absent or a regular file, in an existing writable directory: a device (/dev/null)
// would be replaced by a regular file, and a symbolic link replaced rather than written through.
void check_output_file(const std::string& option, const std::string& out) {
  const std::string what = option + " " + out;
  if (out.empty()) throw kef::ConfigError(option + ": empty path");
  struct stat st {};
  if (::lstat(out.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw kef::ConfigError(what +
                             ": is a symbolic link; kef replaces the file, not what the link points to, "
                             "so it refuses: give the link's target");
    if (!S_ISREG(st.st_mode))
      throw kef::ConfigError(what +
                             ": exists and is not a regular file (a device, directory, FIFO or "
                             "socket); refusing to replace it");
    if (::access(out.c_str(), W_OK) != 0)
      throw kef::ConfigError(what + ": not writable (" + std::strerror(errno) + ")");
  } else if (errno != ENOENT && errno != ENOTDIR) {  // a missing directory is reported below
    throw kef::ConfigError(what + ": " + std::strerror(errno));
  }
  const fs::path dir = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw kef::ConfigError(what + ": directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw kef::ConfigError(what + ": directory " + dir.string() + " is not writable (" +
                           std::strerror(errno) + ")");
}

void require_finite_output(const kef::Matrix& values, const std::string& source, const std::string& rows) {
  const auto bad = static_cast<long long>((!values.array().isFinite()).count());
  if (bad == 0) return;
  for (kef::Index i = 0; i < values.rows(); ++i)
    for (kef::Index j = 0; j < values.cols(); ++j) {
      const double v = values(i, j);
      if (std::isfinite(v)) continue;
      std::ostringstream got;
      got << v;
      throw kef::NumericalError(source + ": " + rows + " " + std::to_string(i) + " (0-based), component " +
                                std::to_string(j) + " is " + got.str() + " (" + std::to_string(bad) + " of " +
                                std::to_string(values.size()) +
                                " values are not finite); nothing was written. The model's parameters take "
                                "its draws beyond the range of a double: check its saved arrays");
    }
}

void require_output_memory(double rows, double cols, double copies, const std::string& option,
                           const std::string& what) {
  const double bytes = 8.0 * rows * cols * copies;
  kef::require_memory(bytes, option, what);
}

std::string unknown_word_message(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* current = &app;
  std::string command = "kef";
  auto suggestion = [](const std::string& word, const std::vector<std::string>& known) {
    const std::string best = kef::detail::closest(word, known);
    return best.empty() ? std::string() : " (did you mean `" + best + "`?)";
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) == 0) {
      const std::string name = arg.substr(0, arg.find('='));
      if (current->get_option_no_throw(name) || app.get_option_no_throw(name)) continue;
      std::vector<std::string> known;
      for (const CLI::App* a : {static_cast<const CLI::App*>(current), static_cast<const CLI::App*>(&app)})
        for (const CLI::Option* o : a->get_options())
          for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
      return "unknown option `" + name + "` of `" + command + "`" + suggestion(name, known) + "; see `" +
             command + " --help`";
    }
    if (arg.empty() || arg[0] == '-') continue;  // a short option, a negative number or a value
    const std::vector<CLI::App*> subcommands = current->get_subcommands([](CLI::App*) { return true; });
    if (subcommands.empty()) continue;  // a positional argument or an option's value
    CLI::App* found = nullptr;
    std::vector<std::string> names;
    for (CLI::App* sub : subcommands) {
      names.push_back(sub->get_name());
      if (sub->check_name(arg)) found = sub;
    }
    if (found) {
      current = found;
      command += " " + found->get_name();
      continue;
    }
    // A word where a subcommand is needed (kef's own subcommands, or those of one that requires one).
    if (current == &app || current->get_require_subcommand_min() > 0)
      return "unknown command `" + arg + "`" + (current == &app ? "" : " of `" + command + "`") +
             suggestion(arg, names) + "; the commands are: " + kef::detail::join(names);
  }
  return {};
}

void write_output_rows(const std::string& out, const kef::Matrix& rows, const std::vector<std::string>& columns) {
  kef::write_table(out, rows, columns);
}

std::vector<std::string> data_column_names(const kef::DataTransform& transform, kef::Index dim) {
  if (static_cast<kef::Index>(transform.columns.size()) == dim) return transform.columns;
  std::vector<std::string> names;
  for (kef::Index j = 0; j < dim; ++j) names.push_back(kef::positional_column_name(j));
  return names;
}

void load_default_plugins(kef::Registry& registry, const std::vector<std::string>& extra) {
  kef::register_core_components(registry);
  registry.load_plugins(kef::plugin_search_path(extra));
  std::vector<fs::path> loaded;
  for (const auto& p : registry.plugins())
    if (p.status == kef::PluginRecord::Status::Loaded) loaded.push_back(p.path);
  for (const auto& w : kef::plugin_permission_warnings(loaded)) std::cerr << "[kef] warning: " << w << "\n";
}

}  // namespace kef_cli
