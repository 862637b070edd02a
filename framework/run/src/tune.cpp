// [tune]: a grid search over numeric keys of one model, every candidate fitted on the training split and
// scored by one evaluator on a held-out split (docs/pipelines.md, "Tuning").
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "kef/error.hpp"
#include "kef/pipeline.hpp"
#include "kef/progress.hpp"
#include "pipeline_plan.hpp"

namespace kef::pipeline_detail {

namespace {

const KeyList& tune_keys() {
  static const KeyList keys = {
      KeySpec::string("model", "the [[model]] to tune (default: the only one)").optional(),
      KeySpec::table("grid",
                     "[tune.grid.estimator], [tune.grid.kernel], [tune.grid.base_measure]: lists of "
                     "values for numeric keys of the model's tables")
          .mandatory(),
      KeySpec::table("evaluate",
                     "the scoring evaluator: score_matching_loss (lowest wins, the default) or "
                     "log_likelihood (highest wins), with its keys; split defaults to validation"),
      KeySpec::integer("max_candidates", "refuse grids with more candidates than this", 1000).at_least(1),
  };
  return keys;
}

// "model.NAME.kernel.sigma=0.5": integral values are written as integers so integer keys accept them.
std::string candidate_setting(const std::string& model, const std::string& key, double value) {
  std::ostringstream os;
  os << "model." << model << "." << key << "=";
  if (std::abs(value) < 9.0e15 && value == std::floor(value))
    os << static_cast<long long>(value);
  else
    os << std::setprecision(17) << value;
  return os.str();
}

std::vector<std::string> candidate_settings(const TunePlan& tune, const std::vector<double>& values) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < tune.grid.size(); ++k)
    out.push_back(candidate_setting(tune.model, tune.grid[k].first, values[k]));
  return out;
}

// The model's table in the pipeline parsed again with one candidate's values set.
Config candidate_model_table(const Plan& plan, const TunePlan& tune, const std::vector<double>& values) {
  std::vector<std::string> overrides = plan.overrides;
  for (auto& s : candidate_settings(tune, values)) overrides.push_back(std::move(s));
  Config root = load_pipeline_config(plan.path, overrides);
  return root.table_array("model")[tune.model_index];
}

}  // namespace

TunePlan build_tune(const Plan& plan, Config t) {
  t.validate(tune_keys());
  TunePlan tune;
  if (t.has("model")) {
    tune.model = t.string("model");
  } else if (plan.models.size() == 1) {
    tune.model = plan.models[0].name;
  } else {
    t.fail("model", "there are " + std::to_string(plan.models.size()) + " models: name the one to tune");
  }
  bool found = false;
  for (std::size_t i = 0; i < plan.models.size(); ++i)
    if (plan.models[i].name == tune.model) {
      tune.model_index = i;
      found = true;
    }
  if (!found) t.fail("model", "no [[model]] named \"" + tune.model + "\"");
  const ModelPlan& mp = plan.models[tune.model_index];

  Config grid = t.table("grid");
  for (const auto& part : grid.keys()) {
    if (part != "estimator" && part != "kernel" && part != "base_measure")
      grid.fail(part, "expected a table named estimator, kernel or base_measure (the model's tables)");
    if (!mp.table.has(part)) grid.fail(part, "model " + tune.model + " has no [" + part + "] table");
    Config values = grid.table(part);
    for (const auto& key : values.keys()) {
      std::vector<double> v = values.numbers(key);
      if (v.empty()) values.fail(key, "give at least one value");
      for (double x : v)
        if (!std::isfinite(x)) values.fail(key, "values must be finite numbers");
      tune.grid.emplace_back(part + "." + key, std::move(v));
    }
  }
  if (tune.grid.empty()) t.fail("grid", "no keys to search: add e.g. [tune.grid.kernel] sigma = [0.5, 1, 2]");
  double count = 1;
  for (const auto& g : tune.grid) count *= static_cast<double>(g.second.size());
  if (count > static_cast<double>(t.integer("max_candidates")))
    t.fail("grid", "has " + format_metric(count) + " candidates, more than max_candidates = " +
                       std::to_string(t.integer("max_candidates")));
  // The product in odometer order, the last key varying fastest.
  std::vector<std::size_t> at(tune.grid.size(), 0);
  for (;;) {
    std::vector<double> c;
    for (std::size_t k = 0; k < at.size(); ++k) c.push_back(tune.grid[k].second[at[k]]);
    tune.candidates.push_back(std::move(c));
    std::size_t k = at.size();
    while (k > 0 && ++at[k - 1] == tune.grid[k - 1].second.size()) at[--k] = 0;
    if (k == 0) break;
  }

  // The defaults (score_matching_loss on the validation split) are written into the table; errors about
  // a key the user did not write cite [tune] evaluate.
  const bool given_evaluate = t.has("evaluate");
  tune.evaluate = given_evaluate ? t.table("evaluate") : Config::parse_string("", t.source());
  const bool given_type = tune.evaluate.has("type"), given_split = tune.evaluate.has("split");
  auto fail = [&](bool given, const char* key, const std::string& what) {
    if (given) tune.evaluate.fail(key, what);
    t.fail("evaluate", what + " (`" + key + "` defaults to " +
                           (std::string(key) == "type" ? "score_matching_loss" : "validation") + ")");
  };
  if (!given_type) tune.evaluate.set("type", std::string("score_matching_loss"));
  if (!given_split) tune.evaluate.set("split", std::string("validation"));
  const std::string type = tune.evaluate.string("type");
  if (type != "score_matching_loss" && type != "log_likelihood")
    fail(given_type, "type",
         "tuning scores with score_matching_loss or log_likelihood, got \"" + type + "\"");
  tune.metric = type;
  tune.maximize = type == "log_likelihood";
  const std::string split = tune.evaluate.string("split");
  if (split == "train") fail(given_split, "split", "scoring on the training split would reward overfitting");
  if (plan.shape.rows(split) <= 0)
    fail(given_split, "split", "the " + split + " split is empty; tuning scores candidates on held-out rows");
  RandomStream init_rng(plan.seed, "tune.init");
  tune.evaluator = plan.registry->make_evaluator(
      tune.evaluate, BuildContext{plan.data.dim(), plan.registry.get(), &init_rng, plan.data.train_count()});
  tune.evaluate.fill_defaults();
  tune.evaluator->check(plan.shape);
  // Every candidate builds and passes its checks before anything is fitted.
  for (const auto& c : tune.candidates) {
    ModelPlan cp = build_model(plan, candidate_model_table(plan, tune, c), tune.model);
    tune.evaluator->check_model(plan.shape, PlannedModel{tune.model, cp.facets});
  }
  t.fill_defaults();
  return tune;
}
// The grid search of [tune]: every candidate fitted on the training split with the model's own stream
// and scored by the tuning evaluator with one stream shared by all candidates (so their scores differ
// only by the candidates). The best candidate's values are written into the pipeline and its fit
// becomes the model's. A candidate whose fit or score fails numerically is recorded and skipped.
Json run_tuning(Plan& plan, const Context& run, std::ostream& log) {
  Progress& progress = run.progress();
  TunePlan& tune = *plan.tune;
  Json candidates = Json::array();
  std::optional<std::size_t> best;
  double best_score = 0.0;
  ModelPtr best_model;
  FitReport best_report;
  double best_seconds = 0.0;
  for (std::size_t i = 0; i < tune.candidates.size(); ++i) {
    const std::vector<double>& values = tune.candidates[i];
    Json entry;
    std::string label;
    for (std::size_t k = 0; k < tune.grid.size(); ++k) {
      entry["values"][tune.grid[k].first] = values[k];
      label += (label.empty() ? "" : ", ") + tune.grid[k].first + " = " + format_metric(values[k]);
    }
    ModelPlan cp = build_model(plan, candidate_model_table(plan, tune, values), tune.model);
    Context context = run.child("model." + tune.model + ".fit",
                                "tune model " + tune.model + " [" + std::to_string(i + 1) + "/" +
                                    std::to_string(tune.candidates.size()) + "]");
    FitReport report;
    FitInput in{plan.data.train, plan.data.validation, context, report, plan.data.roles};
    in.train_rows = plan.data.train_rows.get();  // a split left in the data file, as the main fit reads it
    try {
      auto t0 = std::chrono::steady_clock::now();
      ModelPtr model = cp.estimator->fit(in);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!model || model->dim() != plan.data.dim())
        throw Error("tune: the estimator of model " + tune.model +
                    " returned no model of the data's dimension");
      Context eval_context = run.child("tune." + tune.model, "tune " + tune.model);
      EvalInput ein{*model, tune.model, plan.data, eval_context, nullptr, ""};
      const EvaluationResult r = tune.evaluator->evaluate(ein);
      std::optional<double> score;
      for (const auto& [metric, value] : r.metrics)
        if (metric == tune.metric) score = value;
      if (!score) throw Error("tune: the evaluator reported no `" + tune.metric + "`");
      if (!std::isfinite(*score)) throw NumericalError(tune.metric + " is not finite");
      entry["score"] = *score;
      entry["seconds"] = seconds;
      for (const auto& c : cp.choices) entry["chosen"][c.key] = {{"value", c.value}, {"rule", c.rule}};
      const bool better = !best || (tune.maximize ? *score > best_score : *score < best_score);
      if (better) {
        best = i;
        best_score = *score;
        best_model = model;
        best_report = report;
        best_seconds = seconds;
      }
      log << "tune " << tune.model << " [" << i << "] " << label << ": " << tune.metric << " = "
          << format_metric(*score) << "\n";
      progress.done("tune " + tune.model + " [" + std::to_string(i + 1) + "/" +
                        std::to_string(tune.candidates.size()) + "] " + label,
                    tune.metric + " = " + format_metric(*score));
    } catch (const NumericalError& e) {
      entry["score"] = nullptr;
      entry["error"] = e.what();
      log << "tune " << tune.model << " [" << i << "] " << label << ": failed: " << e.what() << "\n";
    }
    candidates.push_back(entry);
  }
  if (!best)
    throw NumericalError("tune: every one of the " + std::to_string(tune.candidates.size()) +
                         " candidates of model " + tune.model +
                         " failed (log.txt and results.json list the errors)");
  // The chosen values go into the pipeline itself, so results.json's config is the one fitted.
  for (const auto& setting : candidate_settings(tune, tune.candidates[*best])) {
    const auto eq = setting.find('=');
    plan.root.set_from_text(setting.substr(0, eq), setting.substr(eq + 1));
  }
  ModelPlan& mp = plan.models[tune.model_index];
  mp = build_model(plan, plan.root.table_array("model")[tune.model_index], tune.model);
  mp.prefit = best_model;
  mp.prefit_report = best_report;
  mp.prefit_seconds = best_seconds;
  Json out;
  out["model"] = tune.model;
  out["evaluator"] = Json::parse(tune.evaluate.to_json(true));
  out["metric"] = tune.metric;
  out["goal"] = tune.maximize ? "max" : "min";
  out["candidates"] = candidates;
  out["chosen"] = candidates[*best]["values"];
  out["chosen_index"] = *best;
  out["chosen_score"] = best_score;
  return out;
}

std::string tuning_table(const Json& tuning) {
  std::ostringstream os;
  os << "tune " << tuning["model"].get<std::string>() << " (" << tuning["metric"].get<std::string>() << ", "
     << (tuning["goal"] == "max" ? "highest" : "lowest") << " wins, on the "
     << tuning["evaluator"]["split"].get<std::string>() << " split):\n";
  const std::size_t chosen = tuning["chosen_index"].get<std::size_t>();
  for (std::size_t i = 0; i < tuning["candidates"].size(); ++i) {
    const Json& c = tuning["candidates"][i];
    os << (i == chosen ? "  * " : "    ");
    bool first = true;
    for (const auto& [k, v] : c["values"].items()) {
      os << (first ? "" : ", ") << k << " = " << format_metric(v.get<double>());
      first = false;
    }
    if (c["score"].is_null())
      os << ": failed (" << c["error"].get<std::string>() << ")\n";
    else
      os << ": " << format_metric(c["score"].get<double>()) << "\n";
  }
  return os.str();
}

}  // namespace kef::pipeline_detail
