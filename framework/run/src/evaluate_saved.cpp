// `kef eval`: an evaluator run on saved models outside a pipeline.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>

#include "data_units_model.hpp"
#include "kef/conditional_sampling.hpp"
#include "kef/data_shape.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/model_rows.hpp"
#include "kef/parallel.hpp"
#include "kef/pipeline.hpp"
#include "kef/progress.hpp"

namespace kef {

namespace {

std::string list_text(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + "]";
}

bool positional_names(const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] != positional_column_name(static_cast<Index>(i))) return false;
  return true;
}

bool same_transform(const DataTransform& a, const DataTransform& b) {
  if (a.roles != b.roles) return false;
  if (a.identity() || b.identity()) return a.identity() == b.identity();
  return a.kind == b.kind && a.matrix == b.matrix && a.offset == b.offset;
}

}  // namespace

std::string column_roles_text(const DataTransform& transform, Index dim) {
  if (!transform.roles.conditional()) return "";
  auto names = [&](const std::vector<Index>& idx) {
    std::vector<std::string> out;
    for (Index d : idx)
      out.push_back(static_cast<Index>(transform.columns.size()) == dim
                        ? transform.columns[static_cast<std::size_t>(d)]
                        : positional_column_name(d));
    return list_text(out);
  };
  return "inputs x " + names(transform.roles.inputs(dim)) + ", targets y " + names(transform.roles.targets);
}

void require_unconditional(const SavedModel& saved, const std::string& model_dir,
                           const std::string& command) {
  if (!saved.transform.roles.conditional()) return;
  const std::string roles = column_roles_text(saved.transform, saved.model->dim());
  throw ConfigError(command + ": the model at " + model_dir +
                    " is a conditional density p(y | x) (fitted with [data] targets: " + roles + "), and " +
                    command + " without --given draws whole rows; draw y for given inputs x with `" + command +
                    " " + model_dir + " --given X.npy`");
}

Matrix read_saved_model_input(const std::filesystem::path& file, const std::vector<std::string>& columns,
                              const SavedModel& saved, const std::string& model_dir) {
  const TableData table = read_table(file, columns);
  const Index D = saved.model->dim();
  const std::vector<std::string>& expected = saved.transform.columns;
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".csv" && !expected.empty() && !positional_names(expected) && table.columns != expected)
    throw DataError(file.string() + ": columns " + list_text(table.columns) + " do not match the model at " +
                    model_dir + ", fitted on " + list_text(expected) +
                    " in that order; select and order them with --columns (e.g. --columns " + expected[0] +
                    (expected.size() > 1 ? " --columns " + expected[1] : std::string()) + " ...)");
  if (table.values.cols() != D)
    throw DataError(file.string() + ": has " + std::to_string(table.values.cols()) +
                    " columns, the model at " + model_dir + " has dimension " + std::to_string(D) +
                    (expected.empty() ? std::string() : " (columns " + list_text(expected) + ")") +
                    (saved.transform.roles.conditional()
                         ? "; its rows hold both roles: " + column_roles_text(saved.transform, D)
                         : std::string()));
  return table.values;
}

Matrix score_saved_model(const SavedModel& saved, const Matrix& X, bool normalize,
                         const std::string& model_dir) {
  const ModelRows rows(saved);
  if (normalize && !rows.has_exact_normalizer())
    throw ConfigError("--normalize: the model at " + model_dir + " (" + saved.model->type_name() +
                      ") has no known normalising constant" + (rows.conditional() ? " Z(x)" : "") +
                      "; kef score does not estimate one. Drop --normalize for " + rows.quantity(false) +
                      ", or estimate the log-likelihood with `kef eval --type " +
                      (rows.conditional() ? "conditional_log_likelihood" : "log_likelihood") + "`");
  Matrix result(X.rows(), 1 + rows.score_columns());
  for_model_row_blocks(X.rows(), [&](Index first, Index count) {
    const Matrix block = X.middleRows(first, count);
    result.col(0).segment(first, count) = rows.log_density(block, normalize);
    result.block(first, 1, count, rows.score_columns()) = rows.score(block);
  });
  return result;
}

namespace {

// The evaluator's table ("type" and the caller's keys) and what the evaluator needs, checked before any
// model is loaded: a data file has no exact density, and comparative evaluators take two models.
const ComponentInfo& saved_evaluator_info(Registry& registry, const Config& cfg, bool has_other,
                                          const std::string& against_name, const std::string& against_hint) {
  const ComponentInfo& info = registry.info_for(ComponentKind::Evaluator, cfg);
  if (info.needs_truth)
    throw ConfigError("evaluator " + info.type +
                      " needs the exact density of the data, which a data file does "
                      "not have; run it in a pipeline with a synthetic source");
  if (info.compares_two_models && !has_other)
    throw ConfigError("evaluator " + info.type + " compares two models: give " + against_hint);
  if (!info.compares_two_models && has_other)
    throw ConfigError(against_name + ": evaluator " + info.type + " takes one model");
  return info;
}

}  // namespace

EvaluationResult evaluate_model(Registry& registry, const ModelEvalInput& in,
                                std::vector<std::pair<std::string, std::string>>* metric_spaces) {
  const ComponentInfo& info =
      saved_evaluator_info(registry, in.evaluator, in.other != nullptr, in.against_name, in.against_hint);
  const SavedModel& saved = *in.model;
  const ModelPtr model = saved.model;
  // What the evaluator needs of the models, checked as a pipeline checks it: a conditional model meets
  // the evaluators of conditional densities, a density of whole rows the others.
  const std::string who = in.command + ": evaluator " + info.type;
  require_facets(*model, info.facets, who, in.model_name);
  if (in.other) require_facets(*in.other->model, info.facets, who, in.other_name);
  const ModelPtr other = in.other ? in.other->model : nullptr;
  if (other && other->dim() != model->dim())
    throw DataError(in.other_name + ": dimension " + std::to_string(other->dim()) + ", the model at " +
                    in.model_name + " has " + std::to_string(model->dim()));
  // Both models see the same mapped rows, so they must have been fitted in the same coordinates.
  if (other && !same_transform(saved.transform, in.other->transform))
    throw DataError(in.other_name + ": fitted in other coordinates (" + in.other->transform.kind +
                    ") than the model at " + in.model_name + " (" + saved.transform.kind +
                    "); compare models fitted on the same preprocessed data");
  if (in.rows->cols() != model->dim())
    throw DataError(in.provenance + ": has " + std::to_string(in.rows->cols()) + " columns, the model at " +
                    in.model_name + " has dimension " + std::to_string(model->dim()));

  // The evaluator runs where the model was fitted: on the data mapped to model coordinates.
  Dataset data;
  data.test = saved.transform.to_model(*in.rows);
  data.columns = saved.transform.columns;
  data.transform = saved.transform;
  // A conditional model's evaluators split each row into x and y by the roles it was fitted with.
  if (const ConditionalModel* c = model->conditional()) data.roles = conditional_roles(saved, *c);
  data.train.resize(0, data.test.cols());
  data.validation.resize(0, data.test.cols());
  data.provenance = in.provenance;

  RandomStream init_rng(in.seed, "eval.init");
  EvaluatorPtr evaluator =
      registry.make_evaluator(in.evaluator, BuildContext{model->dim(), &registry, &init_rng, 0}, {});
  // The evaluator's checks of the data's shape, as a pipeline makes them before any work: among them its
  // up-front memory estimates (kef/memory_budget.hpp), against the limit --memory-limit-gb sets.
  DataShape shape;
  shape.dim = data.test.cols();
  shape.test_rows = data.test.rows();
  shape.target_dim = static_cast<Index>(data.roles.targets.size());
  evaluator->check(shape);
  auto progress = in.quiet ? make_silent_progress() : make_stderr_progress();
  const std::string name = std::filesystem::path(in.model_name).filename().string();
  // The root context of `kef eval`; the evaluator's stream is RandomStream(seed, "eval").
  Context context = Context(in.seed, in.threads, progress.get(), in.threads_key)
                        .child("eval", "model " + name + ", " + info.type);
  EvalInput input{
      *model,      name,
      data,        context,
      other.get(), in.other ? std::filesystem::path(in.other_name).filename().string() : std::string()};
  EvaluationResult r = evaluator->evaluate(input);
  for (const auto& [metric, value] : r.metrics)
    if (!std::isfinite(value)) throw NumericalError(info.type + ": metric " + metric + " is not finite");
  r.metrics = metrics_in_data_units(r.metrics, saved.transform, metric_spaces);
  return r;
}

EvaluationResult evaluate_saved_model(Registry& registry, const SavedEvalOptions& o,
                                      std::vector<std::pair<std::string, std::string>>* metric_spaces,
                                      DataTransform* transform) {
  Config cfg = Config::parse_string("type = \"" + o.evaluator + "\"\n", "kef eval");
  for (const auto& s : o.settings) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + s + ": expected KEY=VALUE");
    cfg.set_from_text(s.substr(0, eq), s.substr(eq + 1));
  }
  (void)saved_evaluator_info(registry, cfg, !o.against_dir.empty(), "--against", "--against MODEL_DIR");

  const SavedModel saved = load_saved_model(o.model_dir, registry);
  SavedModel saved_other;
  if (!o.against_dir.empty()) saved_other = load_saved_model(o.against_dir, registry);
  const Matrix rows = read_saved_model_input(o.data_file, o.columns, saved, o.model_dir);
  ModelEvalInput in;
  in.model = &saved;
  in.model_name = o.model_dir;
  in.other = o.against_dir.empty() ? nullptr : &saved_other;
  in.other_name = o.against_dir;
  in.against_name = "--against";
  in.against_hint = "--against MODEL_DIR";
  in.rows = &rows;
  in.provenance = o.data_file;
  in.evaluator = cfg;
  in.seed = o.seed;
  in.threads = o.threads;
  in.threads_key = "--threads";
  in.quiet = o.quiet;
  in.command = "kef eval";
  EvaluationResult r = evaluate_model(registry, in, metric_spaces);
  if (transform) *transform = saved.transform;
  return r;
}

}  // namespace kef
