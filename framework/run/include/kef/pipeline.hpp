#pragma once
// Running a TOML pipeline: data -> split -> fit each [[model]] -> save -> each [[evaluate]] ->
// results.json, all written atomically into the output directory.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kef/communicator.hpp"
#include "kef/config.hpp"
#include "kef/dataset.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef {

class Communicator;

struct RunOptions {
  std::vector<std::string> overrides;     // "a.b.c=value"
  std::optional<std::string> output_dir;  // replaces [output] dir
  int threads = 0;                        // 0: default_threads(); < 0: ConfigError naming --threads
  bool quiet = false;
  // The processes of a distributed run (`mpirun -np K kef run`, kef/communicator.hpp), or null for one
  // process. Every process runs the pipeline: they agree that all read and validated the inputs before
  // any work, share the sums over rows and draws, and only rank 0 writes the output directory.
  const Communicator* communicator = nullptr;
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

// The in-memory entry point (for embedding programs and the Python bindings): a caller's matrix in
// place of the [data] source. The [data] table's host keys (split, shuffle, standardize, whiten,
// exclude, dequantize, drop_correlated, statistics_rows, targets) apply as in a file run; its source
// keys (`type` and that source's keys, e.g. `path`) are checked but not read, and results.json's
// data.provenance says the matrix replaced them; the [data] table may be absent. Rows must be finite,
// with one name per column (none: the positional names x0, x1, ... a .npy file gets): DataError naming
// the row and column otherwise. Relative [plugins] paths resolve against the working directory.
struct InMemoryData {
  Matrix samples;                    // N x D, one row per sample, split by [data] split
  std::vector<std::string> columns;  // D names, or empty
  ModelPtr truth{};  // the rows' exact density, when the caller knows it (evaluators needing it); or none
  // Or, when `samples` is empty, the caller's N x D values in column-major order, read in place (not
  // copied; the Python package passes Fortran-order NumPy arrays so). The memory must stay valid and
  // unchanged until the call returns.
  const double* values = nullptr;
  Index values_rows = 0, values_cols = 0;

  // The rows: `samples`, or the caller's values.
  Eigen::Map<const Matrix> matrix() const {
    if (samples.size() > 0 || values == nullptr) return {samples.data(), samples.rows(), samples.cols()};
    return {values, values_rows, values_cols};
  }
};

struct RunResult {
  // What results.json holds (written or not), as its JSON text: the public headers do not depend on a
  // JSON library, and a binding hands the text to its own (Python's json.loads).
  std::string results_json;
  // The fitted models in the units of the caller's data (make_data_units_model over the fitted model
  // and data.transform), by [[model]] name in the pipeline's order, and as fitted (model coordinates).
  std::vector<std::pair<std::string, ModelPtr>> models;
  std::vector<std::pair<std::string, ModelPtr>> fitted;
  Dataset data;  // the prepared splits, in model coordinates, with the transform and column roles
  std::optional<std::filesystem::path> output_dir;  // where the run was published, when written
  std::string table;                                // the summary table `kef run` prints
  std::string log;  // log.txt's text when the run wrote no output directory (else empty: see the file)
  // The registry that built the models: what save_model records as their components' origins.
  std::shared_ptr<Registry> registry;
};

// Runs the pipeline `pipeline` (a parsed TOML document, e.g. Config::parse_string) on `data`, with
// RunOptions::overrides applied first. With `write_output` the output directory is written as by the
// file run ([output] dir, or RunOptions::output_dir); without it nothing touches the disk and
// results.json's model_dir entries are null. The same plan, fits and evaluations as the file run: the
// same data as a CSV file give bitwise the same metrics and models. With a RunOptions::communicator of
// K > 1 processes every process calls it with its own copy of the same data: they agree that every
// one built the plan and that the data (values and column names, compared by a fingerprint) are the
// same, before any work (DataError on every process otherwise); only rank 0 writes.
RunResult run_pipeline(const Config& pipeline, const InMemoryData& data, const RunOptions& options,
                       bool write_output = false);
// `kef validate` of the same: every check a run makes before its first fit.
void validate_pipeline(const Config& pipeline, const InMemoryData& data, const RunOptions& options);
// A pipeline given as a Config whose [data] source is read as a file run reads it (`kef fit` builds
// its pipeline so): the same plan, fits and evaluations as run_pipeline(path), with the output
// directory written only with `write_output`. Relative paths resolve against the working directory.
RunResult run_pipeline(const Config& pipeline, const RunOptions& options, bool write_output = false);

// `kef eval`: one evaluator on saved models, with a data file as the test split.
struct SavedEvalOptions {
  std::string model_dir;
  std::string against_dir;  // second model of comparative evaluators (optional)
  std::string data_file;
  std::vector<std::string> columns;
  std::string evaluator;              // evaluator type
  std::vector<std::string> settings;  // "key=value" for the evaluator
  std::uint64_t seed = 0;
  int threads = 0;  // as RunOptions::threads
  bool quiet = false;
};
// The evaluator runs in the model's coordinates on the data mapped there; log-likelihoods come back in
// data units plus their model-space value (metrics_in_data_units), and `metric_spaces`, when given,
// receives the space of every metric and `transform` the saved map.
EvaluationResult evaluate_saved_model(
    Registry& registry, const SavedEvalOptions& options,
    std::vector<std::pair<std::string, std::string>>* metric_spaces = nullptr,
    DataTransform* transform = nullptr);

// One evaluator on models in memory, what `kef eval` runs after loading (and the Python bindings'
// kef.evaluate): the rows, in data units, are mapped to the model's coordinates, the evaluator's
// stream is RandomStream(seed, "eval"), and metrics come back as evaluate_saved_model's. The names say
// where the models and rows came from in messages; `against_name`/`against_hint` name the second model's
// argument ("--against", "--against MODEL_DIR").
struct ModelEvalInput {
  const SavedModel* model = nullptr;
  std::string model_name;
  const SavedModel* other = nullptr;  // second model of comparative evaluators, or none
  std::string other_name;
  std::string against_name, against_hint;
  const Matrix* rows = nullptr;  // N x D, data units
  std::string provenance;        // the rows' origin, for messages (file name, argument name)
  Config evaluator;              // the evaluator's table: type and keys
  std::uint64_t seed = 0;
  int threads = 0;
  std::string threads_key = "threads";
  bool quiet = false;
  std::string command = "kef eval";  // names the caller in messages
};
EvaluationResult evaluate_model(Registry& registry, const ModelEvalInput& input,
                                std::vector<std::pair<std::string, std::string>>* metric_spaces = nullptr);

// The rows of a data file for a saved model, in data units. A CSV's columns (all, or `columns`)
// must be the saved column names in the saved order; a .npy file (or a model whose columns are the
// positional x0, x1, ...) is checked by count. DataError naming the file and both column lists.
Matrix read_saved_model_input(const std::filesystem::path& file, const std::vector<std::string>& columns,
                              const SavedModel& saved, const std::string& model_dir);

// The column roles of a saved model, as "inputs x [a, b], targets y [c]" ("" for unconditional data).
std::string column_roles_text(const DataTransform& transform, Index dim);
// `kef sample` without --given draws whole rows of an unconditional density: ConfigError naming
// `command`, the model and its roles when the model was fitted with [data] targets.
void require_unconditional(const SavedModel& saved, const std::string& model_dir, const std::string& command);

// `kef score`: N x (1 + D), log p~ then its gradient, in data units (Jacobian included); for a
// conditional model N x (1 + |y|), log p~(y | x) then ∇_y (kef/model_rows.hpp). With `normalize`,
// log p = log p~ − log Z (log Z(x)), which needs a known normaliser; ConfigError naming the model
// otherwise.
Matrix score_saved_model(const SavedModel& saved, const Matrix& X, bool normalize,
                         const std::string& model_dir);

// How `kef score` and the Python package's log_density/score evaluate a model on many rows: in
// consecutive blocks of kModelRowBlock rows from row 0, so that what a model builds per row (a kernel
// matrix K(X, Z) of N x M, a network's activations) is one block's, whatever N. A row's value can
// differ in its last bit with its position in a block (vectorised loops finish blocks in scalar code),
// so both use these same blocks and agree bit for bit. `block(first, count)` is called in row order.
inline constexpr Index kModelRowBlock = 65536;
template <class Block>
void for_model_row_blocks(Index rows, Block&& block) {
  for (Index first = 0; first < rows; first += kModelRowBlock)
    block(first, std::min(kModelRowBlock, rows - first));
}

// Components that come with the framework itself (the `file` data source, the `lite` model loader):
// the same as registry.add_core_components(). Not needed before loading a saved model (the registry
// adds them then); calling it again does nothing.
void register_core_components(Registry& registry);
// Keys of [data] that the host handles for every source.
std::vector<std::string> data_host_keys();

// The host's [data] keys, declared (split, shuffle, standardize, whiten, exclude, targets, ...).
const KeyList& data_host_key_specs();

// The data of a pipeline's [data] table: load, split, standardise/whiten (train statistics), and
// the column roles of `targets`.
// With `read_by_rows` (the processes of a distributed run; only when data_readable_by_rows), the
// training split is left in the file (Dataset::train_rows) and each process checks its own share of
// the file's rows.
Dataset prepare_dataset(Registry& registry, const Config& data_table, std::uint64_t seed,
                        const Communicator* read_by_rows = nullptr);
// Whether the [data] table allows reading the training split by rows (one file `path`, no step that
// needs the whole training split: standardize, whiten, dequantize, drop_correlated); else why not.
bool data_readable_by_rows(const Config& data_table, std::string& why_not);
// The same steps on a caller's matrix in place of the [data] source (see InMemoryData).
Dataset prepare_dataset(Registry& registry, const Config& data_table, const InMemoryData& data,
                        std::uint64_t seed);

}  // namespace kef
