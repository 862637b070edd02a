#include "sample_given.hpp"

#include <filesystem>
#include <iostream>

#include "cli_support.hpp"
#include "kef/conditional_model.hpp"
#include "kef/conditional_sampling.hpp"
#include "kef/context.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "kef/pipeline.hpp"
#include "kef/progress.hpp"

namespace kef_cli {

namespace fs = std::filesystem;

void refuse_conditional_without_given(const kef::SavedModel& saved, const std::string& model_dir) {
  if (!saved.transform.roles.conditional() && saved.model->conditional() == nullptr) return;
  throw kef::ConfigError("kef sample: the model at " + model_dir +
                         " is a conditional density p(y | x) (columns: " +
                         kef::conditional_columns_text(saved, saved.model->conditional()) +
                         "); give the inputs to sample y for with --given X.npy (one row per x, the input "
                         "columns in data units)");
}

int cmd_sample_given(kef::Registry& registry, const std::string& model_dir, const std::string& given, long n,
                     const std::string& out, std::uint64_t seed, int threads, bool quiet) {
  if (n < 1) throw kef::ConfigError("-n " + std::to_string(n) + ": expected a positive number of samples");
  if (model_dir.empty()) throw kef::ConfigError("--given: give MODEL_DIR, the saved conditional model");
  fs::path out_path(out);
  if (out_path.has_parent_path() && !fs::exists(out_path.parent_path()))
    throw kef::ConfigError("--out " + out + ": directory " + out_path.parent_path().string() +
                           " does not exist");
  const kef::SavedModel saved = kef::load_saved_model(model_dir, registry);
  // read_table refuses non-finite entries, naming the file, row and column.
  const kef::Matrix X = kef::read_table(given).values;
  require_output_memory(static_cast<double>(n) * static_cast<double>(X.rows()),
                        static_cast<double>(saved.model->dim()), 3.0, "-n " + std::to_string(n),
                        "the draws for the " + std::to_string(X.rows()) + " rows of --given " + given +
                            ", held whole until written");
  auto shown = quiet ? kef::make_silent_progress() : kef::make_stderr_progress();
  kef::Context context = kef::Context(seed, threads, shown.get(), "--threads").child("sample");
  const kef::ConditionalDraws draws =
      kef::sample_conditional(saved, X, n, context, "--given " + given, "-n", "the model at " + model_dir);
  const kef::Matrix& result = draws.rows;
  require_finite_output(result, "model " + model_dir, "draw");
  write_output_rows(out, result, data_column_names(saved.transform, result.cols()));
  if (!quiet) {
    if (draws.approximate)
      std::cerr << "[kef] drawn with the model's approximate conditional sampler: draws from its learned "
                   "q(y | x), not exact draws from its density\n";
    else
      std::cerr << "[kef] drawn with the model's exact conditional sampler\n";
  }
  std::cerr << "[kef] wrote " << result.rows() << " x " << result.cols() << " rows (" << n
            << " draws of y for each of " << X.rows() << " rows x; "
            << kef::conditional_columns_text(saved, saved.model->conditional()) << ") to " << out
            << (saved.transform.identity() ? "" : " (data units)") << "\n";
  return 0;
}

}  // namespace kef_cli
