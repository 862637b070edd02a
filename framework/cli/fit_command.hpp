#pragma once
// `kef fit DATA`: one model fitted to a data file with the defaults of a fit without a pipeline
// (kef/fit_defaults.hpp, shared with the Python kef.sklearn estimators), run as the equivalent pipeline
// (written beside the model as pipeline.toml) and saved as a model directory. Internal to the kef command.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kef/registry.hpp"

namespace kef_cli {

// The estimator `kef fit` uses when --model is not given.
inline constexpr const char* kDefaultFitModel = "lite";

struct FitFlags {
  std::string data;
  std::string model = kDefaultFitModel;
  std::vector<std::string> settings;  // --set KEY=VALUE: estimator keys, or PART.KEY
  std::string out;                    // empty: derived from the data file's name
  bool force = false;
  std::vector<std::string> columns, exclude;
  bool no_header = false;
  bool no_standardize = false;
  std::uint64_t seed = 0;
  std::optional<double> memory_limit_gb;
  bool quiet = false;
  std::vector<std::string> plugin_paths;
};

// Declares `kef fit` on `app`; `threads` is the command line's shared --threads.
CLI::App* add_fit_command(CLI::App& app, FitFlags& flags, int& threads);
// Fits and publishes the model, then prints the summary on stdout; exit status.
int cmd_fit(kef::Registry& registry, const FitFlags& flags, int threads);

}  // namespace kef_cli
