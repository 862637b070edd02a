#include "kef/pipeline.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "data_units_model.hpp"
#include "input_agreement.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/model_archive.hpp"
#include "kef/output_dir.hpp"
#include "kef/parallel.hpp"
#include "kef/plugin_permissions.hpp"
#include "kef/progress.hpp"
#include "pipeline_plan.hpp"
#include "run_outputs.hpp"

namespace kef {

using namespace pipeline_detail;

namespace {

const KeyList& top_level_keys() {
  static const KeyList keys = {
      KeySpec::integer("schema_version", "pipeline schema version; must be 1", 1).at_least(1).at_most(1),
      KeySpec::integer("seed", "seed of every random stream of the run", 0)
          .non_negative()
          .at_most(static_cast<double>(std::numeric_limits<std::int64_t>::max())),
      KeySpec::table("data", "the data source: `type` and its keys, plus split/shuffle/standardize/whiten")
          .mandatory(),
      KeySpec::table_array("model",
                           "[[model]] entries: name, estimator, and the parts the estimator declares "
                           "(kernel, base_measure, ...)")
          .mandatory(),
      KeySpec::table_array("evaluate",
                           "[[evaluate]] entries: `type`, its keys, optional `models` and `name`"),
      KeySpec::table("output", "where and what to write"),
      KeySpec::table("plugins", "plugin search: `paths`"),
      KeySpec::table("tune", "grid search of one model's numeric keys, scored on a held-out split"),
      KeySpec::number("memory_limit_gb", kMemoryLimitDoc)
          .optional()
          .positive(),
  };
  return keys;
}

const KeyList& output_keys() {
  static const KeyList keys = {
      KeySpec::string("dir", "output directory (relative to the working directory)", std::string("runs/kef")),
      KeySpec::boolean("save_models", "save every fitted model under models/NAME", true),
      KeySpec::boolean("save_splits",
                       "write the splits the models saw as data/train.npy, data/validation.npy and "
                       "data/test.npy, in data units (standardize/whiten undone)",
                       false),
      KeySpec::boolean(
          "plot", "write density.png: log density of every model and the truth (1-D and 2-D data)", false),
      KeySpec::boolean("plot_points", "overlay training points (2-D) / a histogram of them (1-D) on the plot",
                       true),
      KeySpec::integer("plot_max_points", "at most this many training points overlaid (evenly spaced rows)",
                       1000)
          .at_least(1)
          .at_most(1000000),
      KeySpec::integer("plot_grid", "grid cells per side (2-D) or curve points (1-D) of the plot", 200)
          .at_least(10)
          .at_most(2000),
      KeySpec::numbers("plot_extent",
                       "plotted region [xmin, xmax, ymin, ymax] (1-D: [xmin, xmax]); "
                       "default: the data's 0.1-99.9% quantile range padded by 15%")
          .optional(),
  };
  return keys;
}

std::string pipeline_stem(const std::string& path) { return fs::path(path).stem().string(); }

void warn_refused_plugins(const Registry& registry, bool quiet) {
  std::vector<fs::path> loaded;
  for (const auto& p : registry.plugins())
    if (p.status == PluginRecord::Status::Loaded) loaded.push_back(p.path);
  // Shown even with --quiet: they are about security, not progress.
  for (const auto& w : plugin_permission_warnings(loaded)) std::cerr << "[kef] warning: " << w << "\n";
  if (quiet) return;
  for (const auto& p : registry.plugins())
    if (p.status == PluginRecord::Status::Refused)
      std::cerr << "[kef] warning: plugin " << p.path.string() << " refused: " << p.reason << "\n";
}

DataShape data_shape(const Dataset& data) {
  DataShape shape;
  shape.dim = data.dim();
  shape.train_rows = data.train_count();
  shape.validation_rows = data.validation.rows();
  shape.test_rows = data.test.rows();
  shape.has_truth = static_cast<bool>(data.truth);
  shape.target_dim = static_cast<Index>(data.roles.targets.size());
  return shape;
}

// An evaluator's checks against the data's shape and every model it will run on (docs/design.md:
// everything that depends only on the config and the data fails before the first fit).
void check_evaluation(const Plan& plan, const EvalPlan& ep) {
  ep.evaluator->check(plan.shape);
  auto planned = [&](const std::string& name) {
    for (const auto& mp : plan.models)
      if (mp.name == name) return PlannedModel{name, mp.facets};
    return PlannedModel{name, std::nullopt};
  };
  for (const auto& name : ep.models) {
    if (ep.info->compares_two_models && name == ep.other) continue;
    ep.evaluator->check_model(plan.shape, planned(name));
  }
  if (!ep.other.empty()) ep.evaluator->check_model(plan.shape, planned(ep.other));
}

}  // namespace

std::string pipeline_detail::format_metric(double v) {
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

namespace {

// `path` is the pipeline file ("" for a Config given in memory: relative plugin paths then resolve
// against the working directory); `in`, when given, replaces the [data] source.
// Whether a distributed run can leave its training split in the data file (kef/training_rows.hpp): the
// data allow it, and every component that would read the split reads it by rows or not at all (their
// ComponentInfo says so); otherwise why not, for log.txt.
bool training_split_by_rows(const Config& root, const Registry& registry, std::string& why_not) {
  if (!data_readable_by_rows(root.table("data"), why_not)) return false;
  std::string extension = fs::path(root.table("data").string("path")).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool npy_file = extension == ".npy";
  const Config output = root.table("output");
  if (output.has("plot") && output.boolean("plot")) {
    why_not = "[output] plot draws the training rows";
    return false;
  }
  for (const Config& m : root.table_array("model")) {
    const Config est = m.table("estimator");
    const ComponentInfo* info = est.type() ? registry.find(Estimator::kInterface, *est.type()) : nullptr;
    if (!info || !info->reads_training_rows) {
      why_not = "estimator `" + (est.type() ? *est.type() : std::string("?")) + "` reads the whole training split";
      return false;
    }
    if (info->reads_scattered_rows && !npy_file) {
      why_not = "estimator `" + *est.type() +
                "` reads scattered training rows at every step, and a CSV file would be scanned again for "
                "each (a .npy file is read at each row's offset)";
      return false;
    }
  }
  // The pipeline's evaluators and [tune]'s (score_matching_loss unless it names another): each must
  // read the split by position or not at all. [tune]'s candidates are fitted as the models are.
  std::vector<std::pair<std::string, std::string>> evaluators;  // (type, split)
  auto type_and_split = [](const Config& e, const std::string& default_type) {
    return std::pair{e.type() ? *e.type() : default_type, e.has("split") ? e.string("split") : std::string()};
  };
  for (const Config& e : root.table_array("evaluate")) evaluators.push_back(type_and_split(e, "?"));
  if (root.has("tune")) {
    const Config tune = root.table("tune");
    evaluators.push_back(tune.has("evaluate") ? type_and_split(tune.table("evaluate"), "score_matching_loss")
                                              : std::pair{std::string("score_matching_loss"), std::string()});
  }
  for (const auto& [type, split] : evaluators) {
    const ComponentInfo* info = registry.find(Evaluator::kInterface, type);
    if (!info || !(info->ignores_training_split || info->reads_training_rows) || split == "train") {
      why_not = "evaluator `" + type + "` reads the training split";
      return false;
    }
  }
  return true;
}

namespace {

// The core components and the plugins: [plugins] paths (relative to the pipeline file) first, then the
// default search path.
std::unique_ptr<Registry> load_registry(Config& root, const std::string& path, const RunOptions& options) {
  Config plugins = root.table("plugins");
  plugins.validate({KeySpec::strings("paths", "extra plugin directories, searched first")});
  std::vector<std::string> plugin_paths;
  for (const auto& p : plugins.strings("paths")) {
    fs::path pp(p);
    plugin_paths.push_back(pp.is_absolute() ? p : (fs::path(path).parent_path() / pp).string());
  }
  auto registry = std::make_unique<Registry>();
  register_core_components(*registry);
  registry->load_plugins(plugin_search_path(plugin_paths));
  warn_refused_plugins(*registry, options.quiet);
  return registry;
}

// [output]'s directory (the command line's --output wins) and what the run saves.
void read_output_keys(Plan& plan, Config& output, const std::string& path, const RunOptions& options) {
  std::string dir =
      options.output_dir
          ? *options.output_dir
          : (output.has("dir") ? output.string("dir")
                               : "runs/" + (path.empty() ? std::string("kef") : pipeline_stem(path)));
  if (dir.empty()) output.fail("dir", "empty output directory");
  plan.output_dir = dir;
  plan.save_models = output.boolean("save_models");
  plan.save_splits = output.boolean("save_splits");
}

// Under several processes, whether each reads only the training rows its share of the sums needs
// (returned: the communicator that splits them) or holds the whole split; plan.data_reading says which.
const Communicator* training_row_reader(Plan& plan, const InMemoryData* in, const RunOptions& options) {
  if (in || !options.communicator || options.communicator->size() <= 1) return nullptr;
  std::string why_not;
  if (training_split_by_rows(plan.root, *plan.registry, why_not)) {
    plan.data_reading = "data: the training split is read by rows (each process reads the rows its share of the "
                        "sums needs)";
    return options.communicator;
  }
  plan.data_reading = "data: every process holds the whole training split (" + why_not + ")";
  return nullptr;
}

// [output]'s density-plot keys; plot_extent is checked against the data's dimension.
void read_plot_keys(Plan& plan, Config& output, Index D) {
  plan.plot = output.boolean("plot");
  // Said on stderr (even with --quiet) as well as in log.txt: the user asked for a figure.
  if (plan.plot && !density_plot_supported(D))
    std::cerr << "[kef] warning: " << output.where("plot") << ": the data has " << D
              << " columns; density plots are drawn for 1-D and 2-D data only, so no density.png is written\n";
  plan.plot_options.show_points = output.boolean("plot_points");
  plan.plot_options.max_points = output.integer("plot_max_points");
  plan.plot_options.grid = output.integer("plot_grid");
  if (output.has("plot_extent") && density_plot_supported(D)) {
    const std::vector<double> v = output.numbers("plot_extent");
    if (v.size() != static_cast<std::size_t>(2 * D))
      output.fail("plot_extent", "expected " +
                                     std::string(D == 1 ? "[xmin, xmax] for 1-D data"
                                                        : "[xmin, xmax, ymin, ymax] for 2-D data") +
                                     ", got " + std::to_string(v.size()) + " numbers");
    for (std::size_t i = 0; i < v.size(); i += 2)
      if (!std::isfinite(v[i]) || !std::isfinite(v[i + 1]) || !(v[i] < v[i + 1]))
        output.fail("plot_extent", "each range must be finite with min < max");
    plan.plot_options.extent = PlotExtent{v[0], v[1], D == 2 ? v[2] : 0.0, D == 2 ? v[3] : 1.0};
  }
}

// Every [[model]], in order; `names` receives their names (unique, usable as directory names).
void build_models(Plan& plan, Config& root, std::set<std::string>& names) {
  auto model_tables = root.table_array("model");
  if (model_tables.empty()) root.fail("model", "at least one [[model]] is required");
  for (std::size_t i = 0; i < model_tables.size(); ++i) {
    Config m = model_tables[i];
    const std::string name = m.has("name") ? m.string("name") : "model" + std::to_string(i);
    // The name is a directory name: at most 255 bytes (NAME_MAX), no NUL or other control character.
    const bool control = std::any_of(
        name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
    if (name.empty() || name.size() > 255 || control || name.find_first_of("/\\ \t") != std::string::npos ||
        name[0] == '.')
      m.fail("name",
             "model names must be 1 to 255 bytes, without spaces, slashes or control characters, not "
             "starting with '.' (got " +
                 std::to_string(name.size()) + " bytes)");
    if (!names.insert(name).second) m.fail("name", "duplicate model name \"" + name + "\"");
    plan.models.push_back(build_model(plan, m, name));
  }
}

// Which [[evaluate]] reports under each key (its `name`, else its type) on each model.
using ReporterMap = std::map<std::pair<std::string, std::string>, std::size_t>;

// The models an [[evaluate]] judges (`models`, else all) and its label; two of one type without names
// on one model would write the same metrics, found only after the fits without this check.
void select_judged_models(EvalPlan& ep, Config& e, std::size_t i, const Plan& plan,
                          const std::set<std::string>& names, ReporterMap& reporter) {
  if (e.has("models")) {
    for (const auto& n : e.strings("models"))
      if (!names.count(n)) e.fail("models", "no [[model]] named \"" + n + "\"");
    ep.models = e.strings("models");
  } else {
    for (const auto& mp : plan.models) ep.models.push_back(mp.name);
  }
  if (e.has("name")) ep.label = e.string("name");
  for (const std::string& model : ep.models) {
    const std::string key = ep.label.empty() ? ep.info->type : ep.label;
    const auto [at, inserted] = reporter.emplace(std::pair{key, model}, i);
    if (!inserted)
      e.fail(ep.label.empty() ? "type" : "name",
             (ep.label.empty() ? "a second `" + key + "` without a `name`" : "the `name` \"" + key + "\" again") +
                 " on model " + model + " (evaluate[" + std::to_string(at->second) +
                 "] reports the same metrics on it); give each [[evaluate]] a distinct `name`");
  }
  if (ep.info->compares_two_models) {
    if (!e.has("against")) e.fail("", "`" + ep.info->type + "` compares two models: set `against = \"NAME\"`");
    ep.other = e.string("against");
    if (!names.count(ep.other)) e.fail("against", "no [[model]] named \"" + ep.other + "\"");
  }
}

// An estimator that declares its models' facets is checked here, before any fit; the others' models
// are checked when they are evaluated.
void check_declared_facets(const EvalPlan& ep, Config& e, const Plan& plan) {
  for (const auto& mp : plan.models) {
    const bool judged = std::find(ep.models.begin(), ep.models.end(), mp.name) != ep.models.end();
    if (!judged && mp.name != ep.other) continue;
    if (!mp.facets) continue;
    const FacetSet missing = ep.info->facets.minus(*mp.facets);
    if (!missing.empty())
      e.fail("type", "`" + ep.info->type + "` needs the " + missing.text() + " of model `" + mp.name +
                         "`, which estimator `" + mp.info->type + "` does not provide (its models have: " +
                         mp.facets->text() + "); restrict it with `models = [...]`");
  }
  if (ep.info->needs_truth && !plan.data.truth)
    e.fail("type", "`" + ep.info->type +
                       "` needs the exact density of the data, and this data source has none "
                       "(use a synthetic source)");
}

// One [[evaluate]]: the host's keys (models, name, against) checked here, the evaluator's own keys by
// the registry when it builds the evaluator.
EvalPlan build_evaluation(Plan& plan, Config e, std::size_t i, const std::set<std::string>& names,
                          ReporterMap& reporter) {
  EvalPlan ep;
  ep.table = e;
  ep.info = &plan.registry->info_for(Evaluator::kInterface, e);
  std::vector<std::string> host = {"models", "name"};
  if (ep.info->compares_two_models) host.push_back("against");
  select_judged_models(ep, e, i, plan, names, reporter);
  check_declared_facets(ep, e, plan);
  RandomStream init_rng(plan.seed, e.dotted("init"));
  ep.evaluator = plan.registry->make_evaluator(
      e, BuildContext{plan.data.dim(), plan.registry.get(), &init_rng, plan.data.train_count()}, host);
  e.fill_defaults();
  check_evaluation(plan, ep);
  return ep;
}

}  // namespace

Plan build_plan(Config pipeline, const std::string& path, const RunOptions& options, const InMemoryData* in) {
  Plan plan;
  plan.path = path;
  plan.overrides = options.overrides;
  plan.root = std::move(pipeline);
  Config& root = plan.root;
  plan.seed = static_cast<std::uint64_t>(root.integer("seed"));
  // Before any component is built: their up-front memory estimates are checked against it.
  set_memory_limit_bytes(root.has("memory_limit_gb") ? std::optional<double>(root.number("memory_limit_gb") * 1e9)
                                                     : std::nullopt);
  plan.registry = load_registry(root, path, options);

  Config output = root.table("output");
  output.validate(output_keys());
  read_output_keys(plan, output, path, options);

  const Communicator* by_rows = training_row_reader(plan, in, options);
  plan.data = in ? prepare_dataset(*plan.registry, root.table("data"), *in, plan.seed)
                 : prepare_dataset(*plan.registry, root.table("data"), plan.seed, by_rows);
  plan.shape = data_shape(plan.data);
  read_plot_keys(plan, output, plan.data.dim());

  std::set<std::string> names;
  build_models(plan, root, names);
  if (root.has("tune")) plan.tune = build_tune(plan, root.table("tune"));

  auto eval_tables = root.table_array("evaluate");
  ReporterMap reporter;
  for (std::size_t i = 0; i < eval_tables.size(); ++i)
    plan.evaluations.push_back(build_evaluation(plan, eval_tables[i], i, names, reporter));
  root.fill_defaults();
  output.fill_defaults();
  return plan;
}

Plan build_plan(const std::string& path, const RunOptions& options) {
  return build_plan(load_pipeline_config(path, options.overrides), path, options, nullptr);
}

// A pipeline given as a Config: the overrides and the top-level schema, as load_pipeline_config does
// for a file. The [data] table may be absent (the caller's matrix is the data).
Config in_memory_root(const Config& pipeline, const RunOptions& options) {
  Config root = pipeline;
  for (const auto& o : options.overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + o + ": expected KEY=VALUE");
    root.set_from_text(o.substr(0, eq), o.substr(eq + 1));
  }
  (void)root.table("data");  // inserts an empty [data] when absent
  root.validate(top_level_keys());
  return root;
}

Plan build_in_memory_plan(const Config& pipeline, const InMemoryData& data, const RunOptions& options) {
  return build_plan(in_memory_root(pipeline, options), "", options, &data);
}

// Staging, checking and publishing the output directory: kef/output_dir.hpp.
void publish(const fs::path& staging, const fs::path& target) { publish_staging_dir(staging, target); }

// results.json's record of the map from data units to the models' coordinates.
Json transform_json(const DataTransform& t) {
  Json j = {{"kind", t.kind}, {"columns", t.columns}, {"model_space", t.model_space()}};
  if (!t.identity()) j["log_abs_det"] = t.log_abs_det;
  return j;
}

Json preprocessing_json(const PreprocessingReport& p) {
  Json out = Json::object();
  if (!p.split_rule.empty()) out["split_rule"] = p.split_rule;
  if (!p.excluded.empty()) out["excluded"] = p.excluded;
  if (!p.targets.empty()) out["targets"] = p.targets;
  if (!p.dequantized.empty()) {
    Json gaps = Json::object();
    for (const auto& d : p.dequantized) gaps[d.column] = d.gap;
    out["dequantized_gaps"] = gaps;
  }
  if (!p.dropped.empty()) {
    Json dropped = Json::array();
    for (const auto& d : p.dropped)
      dropped.push_back(
          {{"column", d.column}, {"correlated_with", d.partner}, {"correlation", d.correlation}});
    out["dropped_correlated"] = dropped;
  }
  if (p.statistics_rows > 0) out["statistics_rows"] = p.statistics_rows;
  return out;
}

std::string metrics_table(const Json& models) {
  std::ostringstream table;
  for (const auto& [name, entry] : models.items()) {
    table << std::left << std::setw(16) << name << " fit "
          << format_metric(entry["fit"]["seconds"].get<double>()) << " s";
    for (const auto& [metric, value] : entry["metrics"].items())
      table << "  " << metric << " = " << format_metric(value.get<double>());
    table << "\n";
    // An evaluator's warning (e.g. an unreliable log-likelihood) is printed with the numbers it
    // qualifies, never left in log.txt alone.
    if (entry.contains("notes"))
      for (const auto& n : entry["notes"])
        if (n.get<std::string>().find(": warning: ") != std::string::npos)
          table << "  " << name << ": " << n.get<std::string>() << "\n";
  }
  return table.str();
}

struct FailureInfo {
  std::string kind = "error";
  std::string message;
  int exit_status = 1;
};

FailureInfo describe_failure(const std::exception_ptr& error, const std::string& step) {
  FailureInfo f;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    f.kind = e.kind();
    f.message = e.what();
    f.exit_status = e.exit_status();
  } catch (const std::bad_alloc&) {
    const OutOfMemoryError e = out_of_memory_error(step);
    f.kind = e.kind();
    f.message = e.what();
    f.exit_status = e.exit_status();
  } catch (const std::exception& e) {
    f.kind = "internal error";
    f.message = e.what();
  } catch (...) {
    f.kind = "internal error";
    f.message = "unknown exception";
  }
  return f;
}

}  // namespace

Config load_pipeline_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config root = Config::parse_file(path);
  for (const auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + o + ": expected KEY=VALUE");
    root.set_from_text(o.substr(0, eq), o.substr(eq + 1));
  }
  root.validate(top_level_keys());
  return root;
}

void validate_pipeline(const std::string& path, const RunOptions& options) {
  (void)Context::resolve_threads(options.threads, kThreadsKey);
  (void)build_plan(path, options);
}

void validate_pipeline(const Config& pipeline, const InMemoryData& data, const RunOptions& options) {
  (void)Context::resolve_threads(options.threads, kThreadsKey);
  (void)build_in_memory_plan(pipeline, data, options);
}

namespace {

// results.json's description of the run before any work: version, seed, pipeline, plugins, threads and
// the data with its preprocessing.
Json run_header(const Plan& plan, const Context& run) {
  Json results;
  results["kef_version"] = version();
  results["seed"] = plan.seed;
  results["config_file"] = plan.path.empty() ? Json(nullptr) : Json(fs::absolute(plan.path).string());
  results["config"] = Json::parse(plan.root.to_json(false));
  Json plugins = Json::object();
  for (const auto& p : plan.registry->plugins())
    if (p.status == PluginRecord::Status::Loaded) plugins[p.name] = p.version;
  results["plugins"] = plugins;
  results["threads"] = run.threads();
  results["data"] = {{"train_rows", plan.data.train_count()},
                     {"validation_rows", plan.data.validation.rows()},
                     {"test_rows", plan.data.test.rows()},
                     {"dim", plan.data.dim()},
                     {"provenance", plan.data.provenance},
                     {"truth", plan.data.truth ? plan.data.truth->describe() : std::string()}};
  Json preprocessing = preprocessing_json(plan.data.preprocessing);
  const Json transform = transform_json(plan.data.transform);  // named: items() would dangle on a temporary
  for (const auto& [key, value] : transform.items()) preprocessing[key] = value;
  results["data"]["columns"] = plan.data.columns;
  results["data"]["preprocessing"] = preprocessing;
  return results;
}

// A model fitted by its estimator, or by the search that tuned it (with the chosen values and the same
// stream), with its report and fit time.
struct FittedModel {
  ModelPtr model;
  FitReport report;
  double seconds = 0.0;
};

FittedModel fit_planned_model(Plan& plan, ModelPlan& mp, const Context& run) {
  Context context = run.child("model." + mp.name + ".fit", "model " + mp.name);
  FittedModel f;
  f.report = mp.prefit ? mp.prefit_report : FitReport{};
  FitInput in{plan.data.train, plan.data.validation, context, f.report, plan.data.roles};
  in.train_rows = plan.data.train_rows.get();
  auto t0 = std::chrono::steady_clock::now();
  f.model = mp.prefit ? mp.prefit : mp.estimator->fit(in);
  f.seconds = mp.prefit ? mp.prefit_seconds
                        : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!f.model) throw Error("model " + mp.name + ": the estimator returned no model");
  if (f.model->dim() != plan.data.dim())
    throw Error("model " + mp.name + ": fitted dimension " + std::to_string(f.model->dim()) +
                " differs from the data's " + std::to_string(plan.data.dim()));
  return f;
}

// A model's entry in results.json (its fit report, curves, notes and chosen values), also logged.
Json fitted_model_entry(const ModelPlan& mp, const FittedModel& f, std::ostream& log) {
  Json fit = {{"seconds", f.seconds}, {"iterations", f.report.iterations}};
  for (const auto& [k, v] : f.report.values) fit[k] = v;
  if (!f.report.curve.empty()) {
    Json curve = Json::array();
    for (const auto& [s, loss] : f.report.curve) curve.push_back({s, loss});
    fit["curve"] = curve;
  }
  for (const auto& [name, points] : f.report.curves) {
    Json curve = Json::array();
    for (const auto& [s, value] : points) curve.push_back({s, value});
    fit["curves"][name] = curve;
  }
  for (const auto& n : f.report.notes) log << "model " << mp.name << ": " << n << "\n";
  if (!f.report.notes.empty()) fit["notes"] = f.report.notes;
  Json entry = {{"fit", fit}, {"metrics", Json::object()}, {"description", f.model->describe()}};
  for (const auto& c : mp.choices) {
    entry["chosen"][c.key] = {{"value", c.value}, {"rule", c.rule}};
    if (!c.details.is_null()) entry["chosen"][c.key]["bkl"] = c.details;
    log << "model " << mp.name << ": " << c.key << " = " << format_metric(c.value) << " (" << c.rule << ")\n";
  }
  return entry;
}

// One [[evaluate]] on one model: its metrics, in data units, are recorded in `models` only when every
// one of them is finite and new, so a model's metrics hold whole evaluations only.
void run_evaluation(Plan& plan, std::size_t i, const std::string& name,
                    const std::map<std::string, ModelPtr>& fitted, const Context& run, Json& models,
                    std::ostream& log) {
  auto& ep = plan.evaluations[i];
  const std::string who = "evaluate[" + std::to_string(i) + "] (" + ep.info->type + ")";
  require_facets(*fitted.at(name), ep.info->facets, who, name);
  if (!ep.other.empty()) require_facets(*fitted.at(ep.other), ep.info->facets, who, ep.other);
  Context context = run.child("evaluate[" + std::to_string(i) + "]." + name, "model " + name + ", " + who);
  const auto t0 = std::chrono::steady_clock::now();
  EvalInput in{*fitted.at(name),
               name,
               plan.data,
               context,
               ep.other.empty() ? nullptr : fitted.at(ep.other).get(),
               ep.other};
  EvaluationResult r = ep.evaluator->evaluate(in);
  const double eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::pair<std::string, std::string>> spaces;
  r.metrics = metrics_in_data_units(r.metrics, plan.data.transform, &spaces);
  for (const auto& [metric, space] : spaces)
    models[name]["metric_spaces"][ep.label.empty() ? metric : ep.label + "." + metric] = space;
  Json& metrics = models[name]["metrics"];
  for (const auto& [metric, value] : r.metrics) {
    if (!std::isfinite(value))
      throw NumericalError("evaluate[" + std::to_string(i) + "] (" + ep.info->type + ") on model " + name +
                           ": metric " + metric + " is not finite");
    std::string key = ep.label.empty() ? metric : ep.label + "." + metric;
    if (metrics.contains(key))
      ep.table.fail("name", "metric `" + key + "` of model " + name +
                                " is already reported by another [[evaluate]]; give this one a `name`");
  }
  for (const auto& [metric, value] : r.metrics) metrics[ep.label.empty() ? metric : ep.label + "." + metric] = value;
  // Seconds per evaluation, like fit.seconds: keyed as the metrics are (label, else the type).
  models[name]["evaluation_seconds"][ep.label.empty() ? ep.info->type : ep.label] = eval_seconds;
  for (const auto& n : r.notes) {
    models[name]["notes"].push_back(ep.info->type + ": " + n);
    log << "model " << name << ": " << ep.info->type << ": " << n << "\n";
  }
  if (!r.summary.empty()) log << "model " << name << ": " << r.summary << "\n";
}

// What a finished run hands back: results.json's text, the fitted models (and their data-units
// views), the data, the metrics table and the log.
RunResult finished_run(Plan& plan, const Json& results, const Json& models,
                       const std::map<std::string, ModelPtr>& fitted, bool write_output, std::string log) {
  RunResult out;
  out.results_json = results.dump(2);
  for (const auto& mp : plan.models) {
    const ModelPtr& model = fitted.at(mp.name);
    out.fitted.emplace_back(mp.name, model);
    out.models.emplace_back(mp.name, make_data_units_model(model, plan.data.transform));
  }
  out.data = std::move(plan.data);
  if (write_output) out.output_dir = plan.output_dir;
  out.table = metrics_table(models);
  if (results.contains("tuning")) out.table += tuning_table(results.at("tuning"));
  out.log = std::move(log);
  out.registry = std::move(plan.registry);
  return out;
}

// The output of a run that failed after finishing some work: the fitted models and every whole
// evaluation are published with the failure recorded in results.json. False when even that could not
// be written.
bool publish_failed_run(const Plan& plan, const FailureInfo& failure, const std::string& step, Json& results,
                        const Json& models, std::ofstream& log_file, std::ostream& log, const fs::path& staging) {
  try {
    results["status"] = "failed";
    results["failure"] = {{"step", step}, {"kind", failure.kind}, {"error", failure.message}};
    results["models"] = models;
    log << "run failed at " << step << ": " << failure.kind << ": " << failure.message << "\n";
    log_file.close();
    if (!log) throw Error("log.txt: cannot write");
    write_results(results, staging);
    publish(staging, plan.output_dir);
    return true;
  } catch (...) {
    return false;
  }
}

// The run of a plan, for both entry points. Without `write_output` nothing is written: no staging
// directory, no saved models, no plot, and the log is kept in memory.
RunResult execute_plan(Plan& plan, const RunOptions& options, bool write_output) {
  (void)Context::resolve_threads(options.threads, kThreadsKey);  // before any work
  if (write_output) check_output_target(plan.output_dir);
  std::unique_ptr<Progress> progress = options.quiet ? make_silent_progress() : make_stderr_progress();
  // The run's root context: every fit and evaluation gets a child keyed by its path.
  Context root(plan.seed, options.threads, progress.get(), kThreadsKey);
  if (options.communicator) root.set_communicator(*options.communicator);
  const Context& run = root;
  // What only rank 0 does (the density plot) runs on that process alone: the others are not there to
  // share its reductions.
  Context rank0_only = root;
  rank0_only.set_communicator(single_process());

  fs::path staging = write_output ? make_staging_dir(plan.output_dir) : fs::path();
  Json results;
  Json models = Json::object();
  std::ofstream log_file;
  std::ostringstream log_memory;
  std::ostream& log = write_output ? static_cast<std::ostream&>(log_file) : log_memory;
  // The step under way, and whether anything worth keeping is finished: a failure after the first fit
  // publishes the fitted models and finished metrics with the failure recorded, then reports it.
  std::string step = "start";
  bool kept_work = false;
  try {
    results = run_header(plan, run);
    std::map<std::string, ModelPtr> fitted;
    if (write_output) log_file.open(staging / "log.txt");
    if (write_output && !plan.data_reading.empty()) log_file << plan.data_reading << "\n";
    if (write_output && plan.save_splits) {
      step = "saving the splits";
      write_splits(plan, staging);
    }
    if (plan.tune) {
      step = "tuning of model " + plan.tune->model;
      results["tuning"] = run_tuning(plan, run, log);
      results["config"] = Json::parse(plan.root.to_json(false));  // with the chosen values
    }

    for (auto& mp : plan.models) {
      step = "fit of model " + mp.name;
      const FittedModel f = fit_planned_model(plan, mp, run);
      std::string msg = "fitted in " + format_metric(f.seconds) + " s";
      progress->done("model " + mp.name, msg);
      log << "model " << mp.name << ": " << msg << "\n";
      Json entry = fitted_model_entry(mp, f, log);
      if (write_output && plan.save_models && f.model->can_save()) {
        step = "saving model " + mp.name;
        save_model(*f.model, staging / "models" / mp.name, plan.data.transform, plan.registry.get());
        entry["model_dir"] = "models/" + mp.name;
      } else {
        entry["model_dir"] = nullptr;
      }
      models[mp.name] = entry;
      fitted[mp.name] = f.model;
      kept_work = true;
    }

    for (std::size_t i = 0; i < plan.evaluations.size(); ++i) {
      const auto& ep = plan.evaluations[i];
      for (const auto& name : ep.models) {
        if (ep.info->compares_two_models && name == ep.other) continue;
        step = "evaluate[" + std::to_string(i) + "] (" + ep.info->type + ") on model " + name;
        run_evaluation(plan, i, name, fitted, run, models, log);
      }
    }
    step = "density plot";
    if (plan.plot && write_output) write_run_plot(plan, fitted, models, staging, rank0_only, log);
    if (plan.plot && !write_output) log << "density plot: skipped, the run writes no output directory\n";
    step = "writing results";
    results["status"] = "complete";
    results["models"] = models;
    if (write_output) {
      write_results(results, staging);
      log_file.close();
      if (!log) throw Error((staging / "log.txt").string() + ": cannot write (disk full?)");
      publish(staging, plan.output_dir);
    }
    return finished_run(plan, results, models, fitted, write_output, log_memory.str());
  } catch (...) {
    const FailureInfo failure = describe_failure(std::current_exception(), step);
    // A run whose own files could not be written (a full disk: saving a model, log.txt, results.json)
    // publishes nothing, since what it would publish is truncated; any other failure after a fit
    // publishes what is finished.
    const bool write_failed = step.rfind("saving model ", 0) == 0 || step == "writing results" || !log.good();
    if (write_output && kept_work && !write_failed &&
        publish_failed_run(plan, failure, step, results, models, log_file, log, staging))
      throw_error_of_kind(failure.kind, failure.message + "\n(the run failed at " + step +
                                            "; the fitted models and finished metrics are kept in " +
                                            plan.output_dir.string() + ", whose results.json records the failure)");
    std::error_code ec;
    if (write_output) fs::remove_all(staging, ec);
    // Rethrown as an error of the same kind made here, so it stays valid when the plan's plugins unload.
    throw_error_of_kind(failure.kind, failure.message);
  }
}

// What the processes compare once their plans are built: the resolved pipeline (with its defaults),
// the plugins that resolved it and the splits each holds.
InputFingerprint resolved_inputs(const Plan& plan) {
  InputFingerprint inputs;
  add_pipeline(inputs, plan.root, true);
  add_plugins(inputs, *plan.registry);
  add_held_splits(inputs, plan.data);
  return inputs;
}

}  // namespace

RunSummary run_pipeline(const std::string& path, const RunOptions& options) {
  const Communicator& comm = options.communicator ? *options.communicator : single_process();
  if (comm.size() == 1) {
    Plan plan = build_plan(path, options);
    RunResult r = execute_plan(plan, options, true);
    RunSummary summary;
    summary.output_dir = plan.output_dir;
    summary.table = std::move(r.table);
    return summary;
  }
  // A distributed run: every process reads and validates the file, its plugins and data, and rank 0
  // checks the output directory; then they agree, so a bad input (on any process) is the same error
  // on every process before any work, never a process waiting in a reduction for one that stopped.
  // They also compare what they read (input_agreement.hpp) twice: the pipeline as written and the data
  // files before building the plan (whose data preparation may already share sums), then the resolved
  // pipeline, the plugins and the held splits.
  std::optional<Config> root;
  std::string print;
  std::exception_ptr error;
  try {
    (void)Context::resolve_threads(options.threads, kThreadsKey);
    root.emplace(load_pipeline_config(path, options.overrides));
    InputFingerprint inputs;
    add_pipeline(inputs, *root, false);
    add_data_files(inputs, root->table("data"));
    print = inputs.encode();
  } catch (...) {
    error = std::current_exception();
  }
  require_same_inputs(exchange(comm, CollectiveStep::prepare, print, error));
  std::optional<Plan> plan;
  try {
    plan.emplace(build_plan(std::move(*root), path, options, nullptr));
    if (comm.rank() == 0) check_output_target(plan->output_dir);
    print = resolved_inputs(*plan).encode();
  } catch (...) {
    error = std::current_exception();
  }
  require_same_inputs(exchange(comm, CollectiveStep::prepare, print, error));
  // Only rank 0 writes: the others run the same fits and evaluations and keep nothing.
  RunResult r = execute_plan(*plan, options, comm.rank() == 0);
  RunSummary summary;
  summary.output_dir = plan->output_dir;
  summary.table = std::move(r.table);
  return summary;
}

RunResult run_pipeline(const Config& pipeline, const RunOptions& options, bool write_output) {
  if (options.communicator && options.communicator->size() > 1)
    throw ConfigError("a pipeline given in memory with its own data source runs in one process");
  Plan plan = build_plan(in_memory_root(pipeline, options), "", options, nullptr);
  return execute_plan(plan, options, write_output);
}

RunResult run_pipeline(const Config& pipeline, const InMemoryData& data, const RunOptions& options,
                       bool write_output) {
  const Communicator& comm = options.communicator ? *options.communicator : single_process();
  if (comm.size() == 1) {
    Plan plan = build_in_memory_plan(pipeline, data, options);
    return execute_plan(plan, options, write_output);
  }
  // A distributed run on in-memory data (the Python package under mpi4py): every process builds and
  // checks the plan on its own copy of the matrix, and the processes agree on success and on the data
  // (the same values and names on every process) before any work. Only rank 0 writes.
  // They compare the pipeline as given and the caller's matrix first, then the resolved pipeline, the
  // plugins and the held splits (input_agreement.hpp).
  std::optional<Config> root;
  std::string print;
  std::exception_ptr error;
  try {
    (void)Context::resolve_threads(options.threads, kThreadsKey);
    root.emplace(in_memory_root(pipeline, options));
    InputFingerprint inputs;
    add_pipeline(inputs, *root, false);
    add_matrix(inputs, "the caller's matrix", data);
    print = inputs.encode();
  } catch (...) {
    error = std::current_exception();
  }
  require_same_inputs(exchange(comm, CollectiveStep::prepare, print, error));
  std::optional<Plan> plan;
  try {
    plan.emplace(build_plan(std::move(*root), "", options, &data));
    if (comm.rank() == 0 && write_output) check_output_target(plan->output_dir);
    print = resolved_inputs(*plan).encode();
  } catch (...) {
    error = std::current_exception();
  }
  require_same_inputs(exchange(comm, CollectiveStep::prepare, print, error));
  return execute_plan(*plan, options, write_output && comm.rank() == 0);
}

}  // namespace kef
