#include "sample_given.hpp"

#include <filesystem>
#include <iostream>

#include "kef/conditional_model.hpp"
#include "kef/context.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "kef/pipeline.hpp"
#include "kef/progress.hpp"

namespace kef_cli {

namespace fs = std::filesystem;

namespace {

// The roles of the saved model's columns: the recorded ones, or (a model saved without them) x first.
kef::ColumnRoles roles_of(const kef::SavedModel& saved, const kef::ConditionalModel& c) {
  if (saved.transform.roles.conditional()) return saved.transform.roles;
  kef::ColumnRoles r;
  for (kef::Index j = 0; j < c.target_dim(); ++j) r.targets.push_back(c.input_dim() + j);
  return r;
}

// The columns of the model for messages: the recorded names and roles, or the layout of a model saved
// without them.
std::string columns_text(const kef::SavedModel& saved, const kef::ConditionalModel* c) {
  const std::string t = kef::column_roles_text(saved.transform, saved.model->dim());
  if (!t.empty() || c == nullptr) return t;
  return "inputs x the first " + std::to_string(c->input_dim()) + ", targets y the last " +
         std::to_string(c->target_dim());
}

}  // namespace

void refuse_conditional_without_given(const kef::SavedModel& saved, const std::string& model_dir) {
  if (!saved.transform.roles.conditional() && saved.model->conditional() == nullptr) return;
  throw kef::ConfigError(
      "kef sample: the model at " + model_dir +
      " is a conditional density p(y | x) (columns: " + columns_text(saved, saved.model->conditional()) +
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
  const kef::ConditionalModel* c = saved.model->conditional();
  const kef::FacetSet facets = saved.model->facets();
  if (c == nullptr)
    throw kef::ConfigError("--given " + given + ": the model at " + model_dir + " (" +
                           saved.model->type_name() +
                           ") is a density of whole rows, not a conditional density p(y | x); drop --given");
  if (!facets.has(kef::Facet::ConditionalSampler))
    throw kef::ConfigError("--given " + given + ": the model at " + model_dir + " (" +
                           saved.model->type_name() +
                           ") has no conditional sampler (it has: " + facets.text() + ")");
  const kef::Index Dx = c->input_dim(), Dy = c->target_dim();
  // read_table refuses non-finite entries, naming the file, row and column.
  const kef::Matrix X = kef::read_table(given).values;
  const kef::ColumnRoles roles = roles_of(saved, *c);
  if (X.cols() != Dx)
    throw kef::DataError("--given " + given + ": has " + std::to_string(X.cols()) +
                         " columns, the model at " + model_dir + " takes its " + std::to_string(Dx) +
                         " input columns x (expected " + std::to_string(Dx) + " columns, got " +
                         std::to_string(X.cols()) + "; columns of the model: " + columns_text(saved, c) +
                         ")");
  if (X.rows() < 1) throw kef::DataError("--given " + given + ": has no rows");
  if (static_cast<double>(X.rows()) * static_cast<double>(n) > 1e9)
    throw kef::ConfigError("-n " + std::to_string(n) + " with " + std::to_string(X.rows()) +
                           " rows in --given: more than 10^9 draws");
  // Each x repeated n times, in data units; to the model's coordinates through the full rows (the
  // transform does not mix inputs and targets, so the target columns' zeros leave x's block exact).
  const kef::Index rows = X.rows() * static_cast<kef::Index>(n);
  kef::Matrix Xrep(rows, Dx);
  for (kef::Index i = 0; i < X.rows(); ++i) Xrep.middleRows(i * n, n) = X.row(i).replicate(n, 1);
  const kef::Matrix Xm =
      roles.inputs_of(saved.transform.to_model(roles.join(Xrep, kef::Matrix::Zero(rows, Dy))));
  auto shown = quiet ? kef::make_silent_progress() : kef::make_stderr_progress();
  kef::Context context = kef::Context(seed, threads, shown.get(), "--threads").child("sample");
  const kef::Matrix Ym = c->sample(Xm, context.rng());
  // Back to data units; the x columns are the given rows themselves (not a round trip of them).
  const kef::Matrix Ydata = roles.targets_of(saved.transform.to_data(roles.join(Xm, Ym)));
  const kef::Matrix result = roles.join(Xrep, Ydata);
  if (!result.allFinite())
    throw kef::NumericalError("kef sample --given: the model at " + model_dir + " drew non-finite values");
  kef::write_npy(out_path, result);
  if (!quiet) {
    if (facets.has(kef::Facet::ApproximateSampler))
      std::cerr << "[kef] drawn with the model's approximate conditional sampler: draws from its learned "
                   "q(y | x), not exact draws from its density\n";
    else
      std::cerr << "[kef] drawn with the model's exact conditional sampler\n";
  }
  std::cerr << "[kef] wrote " << result.rows() << " x " << result.cols() << " rows (" << n
            << " draws of y for each of " << X.rows() << " rows x; " << columns_text(saved, c) << ") to "
            << out << (saved.transform.identity() ? "" : " (data units)") << "\n";
  return 0;
}

}  // namespace kef_cli
