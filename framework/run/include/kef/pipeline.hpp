#pragma once
// Running a TOML pipeline: data -> split -> fit each [[model]] -> save -> each [[evaluate]] ->
// results.json, all written atomically into the output directory.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/dataset.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef {

struct RunOptions {
  std::vector<std::string> overrides;        // "a.b.c=value"
  std::optional<std::string> output_dir;     // replaces [output] dir
  int threads = 0;                            // 0: default_threads(); < 0: ConfigError naming --threads
  bool quiet = false;
};

struct RunSummary {
  std::filesystem::path output_dir;
  std::string table;  // short human-readable table of the metrics
};

// Parses the file, applies overrides, and checks the top-level schema (not the components).
Config load_pipeline_config(const std::string& path, const std::vector<std::string>& overrides);

// Everything a run checks before it starts work: schema, plugins, every component's keys.
void validate_pipeline(const std::string& path, const RunOptions& options);
RunSummary run_pipeline(const std::string& path, const RunOptions& options);

// `kef eval`: one evaluator on saved models, with a data file as the test split.
struct SavedEvalOptions {
  std::string model_dir;
  std::string against_dir;               // second model of comparative evaluators (optional)
  std::string data_file;
  std::vector<std::string> columns;
  std::string evaluator;                 // evaluator type
  std::vector<std::string> settings;     // "key=value" for the evaluator
  std::uint64_t seed = 0;
  int threads = 0;                       // as RunOptions::threads
  bool quiet = false;
};
// The evaluator runs in the model's coordinates on the data mapped there; log-likelihoods come back in
// data units plus their model-space value (metrics_in_data_units), and `metric_spaces`, when given,
// receives the space of every metric and `transform` the saved map.
EvaluationResult evaluate_saved_model(
    Registry& registry, const SavedEvalOptions& options,
    std::vector<std::pair<std::string, std::string>>* metric_spaces = nullptr,
    DataTransform* transform = nullptr);

// The rows of a data file for a saved model, in data units. A CSV's columns (all, or `columns`)
// must be the saved column names in the saved order; a .npy file (or a model whose columns are the
// positional x0, x1, ...) is checked by count. DataError naming the file and both column lists.
Matrix read_saved_model_input(const std::filesystem::path& file, const std::vector<std::string>& columns,
                              const SavedModel& saved, const std::string& model_dir);

// `kef score`: N x (1 + D), log p~ then its gradient, in data units (Jacobian included). With
// `normalize`, log p = log p~ − log Z, which needs a known normaliser (Model::log_normalizer());
// ConfigError naming the model otherwise.
Matrix score_saved_model(const SavedModel& saved, const Matrix& X, bool normalize,
                         const std::string& model_dir);


// Components that come with the framework itself (the `file` data source).
void register_core_components(Registry& registry);
// Keys of [data] that the host handles for every source.
std::vector<std::string> data_host_keys();

// The data of a pipeline's [data] table: load, split, standardise/whiten (train statistics).
Dataset prepare_dataset(Registry& registry, const Config& data_table, std::uint64_t seed);

}  // namespace kef
