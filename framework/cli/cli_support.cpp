// Shared by the kef command's subcommands (cli_support.hpp).
#include "cli_support.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "kef/error.hpp"
#include "kef/pipeline.hpp"
#include "kef/plugin_permissions.hpp"

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

void load_default_plugins(kef::Registry& registry, const std::vector<std::string>& extra) {
  kef::register_core_components(registry);
  registry.load_plugins(kef::plugin_search_path(extra));
  std::vector<fs::path> loaded;
  for (const auto& p : registry.plugins())
    if (p.status == kef::PluginRecord::Status::Loaded) loaded.push_back(p.path);
  for (const auto& w : kef::plugin_permission_warnings(loaded)) std::cerr << "[kef] warning: " << w << "\n";
}

}  // namespace kef_cli
