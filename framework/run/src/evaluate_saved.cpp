// `kef eval`: an evaluator run on saved models outside a pipeline.
#include <filesystem>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/parallel.hpp"
#include "kef/pipeline.hpp"

namespace kef {

EvaluationResult evaluate_saved_model(Registry& registry, const SavedEvalOptions& o) {
  Config cfg = Config::parse_string("type = \"" + o.evaluator + "\"\n", "kef eval");
  for (const auto& s : o.settings) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + s + ": expected KEY=VALUE");
    cfg.set_from_text(s.substr(0, eq), s.substr(eq + 1));
  }
  const ComponentInfo& info = registry.info_for(ComponentKind::Evaluator, cfg);
  if (info.needs_truth)
    throw ConfigError("evaluator " + info.type + " needs the exact density of the data, which a data file does "
                      "not have; run it in a pipeline with a synthetic source");
  if (info.compares_two_models && o.against_dir.empty())
    throw ConfigError("evaluator " + info.type + " compares two models: give --against MODEL_DIR");
  if (!info.compares_two_models && !o.against_dir.empty())
    throw ConfigError("--against: evaluator " + info.type + " takes one model");

  ModelPtr model = load_model(o.model_dir, registry);
  ModelPtr other = o.against_dir.empty() ? nullptr : load_model(o.against_dir, registry);
  if (other && other->dim() != model->dim())
    throw DataError(o.against_dir + ": dimension " + std::to_string(other->dim()) + ", the model at " + o.model_dir +
                    " has " + std::to_string(model->dim()));

  Dataset data;
  data.test = read_table(o.data_file, o.columns).values;
  if (data.test.cols() != model->dim())
    throw DataError(o.data_file + ": has " + std::to_string(data.test.cols()) + " columns, the model at " +
                    o.model_dir + " has dimension " + std::to_string(model->dim()));
  data.train.resize(0, data.test.cols());
  data.validation.resize(0, data.test.cols());
  data.provenance = o.data_file;

  RandomStream init_rng(o.seed, "eval.init");
  EvaluatorPtr evaluator =
      registry.make_evaluator(cfg, BuildContext{model->dim(), &registry, &init_rng, 0}, {});
  RandomStream rng(o.seed, "eval");
  auto progress = o.quiet ? make_silent_progress() : make_stderr_progress();
  const std::string name = std::filesystem::path(o.model_dir).filename().string();
  EvalInput in{*model, name, data, rng, *progress, o.threads > 0 ? o.threads : default_threads(), other.get(),
               o.against_dir.empty() ? std::string() : std::filesystem::path(o.against_dir).filename().string()};
  EvaluationResult r = evaluator->evaluate(in);
  for (const auto& [metric, value] : r.metrics)
    if (!std::isfinite(value)) throw NumericalError(info.type + ": metric " + metric + " is not finite");
  return r;
}

}  // namespace kef
