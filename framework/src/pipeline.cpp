#include "kef/pipeline.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kef/density_plot.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/output_dir.hpp"
#include "kef/parallel.hpp"
#include "kef/plugin_permissions.hpp"

namespace kef {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

const KeyList& top_level_keys() {
  static const KeyList keys = {
      KeySpec::integer("schema_version", "pipeline schema version; must be 1", 1).at_least(1).at_most(1),
      KeySpec::integer("seed", "seed of every random stream of the run", 0)
          .non_negative()
          .at_most(static_cast<double>(std::numeric_limits<std::int64_t>::max())),
      KeySpec::table("data", "the data source: `type` and its keys, plus split/shuffle/standardize/whiten").mandatory(),
      KeySpec::table_array("model", "[[model]] entries: name, estimator, kernel, base_measure").mandatory(),
      KeySpec::table_array("evaluate", "[[evaluate]] entries: `type`, its keys, optional `models` and `name`"),
      KeySpec::table("output", "where and what to write"),
      KeySpec::table("plugins", "plugin search: `paths`"),
  };
  return keys;
}

const KeyList& model_keys() {
  static const KeyList keys = {
      KeySpec::string("name", "unique model name (results.json key, model directory)").optional(),
      KeySpec::table("estimator", "the fitting method: `type` and its keys").mandatory(),
      KeySpec::table("kernel", "the kernel, for estimators that use one"),
      KeySpec::table("base_measure", "the base measure q0, for estimators that use one"),
  };
  return keys;
}

const KeyList& output_keys() {
  static const KeyList keys = {
      KeySpec::string("dir", "output directory (relative to the working directory)", std::string("runs/kef")),
      KeySpec::boolean("save_models", "save every fitted model under models/NAME", true),
      KeySpec::boolean("plot", "write density.png: log density of every model and the truth (1-D and 2-D data)", false),
      KeySpec::boolean("plot_points", "overlay training points (2-D) / a histogram of them (1-D) on the plot", true),
      KeySpec::integer("plot_max_points", "at most this many training points overlaid (evenly spaced rows)", 1000)
          .at_least(1).at_most(1000000),
      KeySpec::integer("plot_grid", "grid cells per side (2-D) or curve points (1-D) of the plot", 200)
          .at_least(10).at_most(2000),
      KeySpec::numbers("plot_extent", "plotted region [xmin, xmax, ymin, ymax] (1-D: [xmin, xmax]); "
                                      "default: the data's 0.1-99.9% quantile range padded by 15%").optional(),
  };
  return keys;
}

struct ModelPlan {
  std::string name;
  Config table;
  EstimatorPtr estimator;
  KernelPtr kernel;
  BaseMeasurePtr base_measure;
};

struct EvalPlan {
  std::string label;  // metric prefix ("" for none)
  Config table;
  const ComponentInfo* info = nullptr;
  EvaluatorPtr evaluator;
  std::vector<std::string> models;
  std::string other;  // second model of comparative evaluators
};

struct Plan {
  Config root;
  std::uint64_t seed = 0;
  std::unique_ptr<Registry> registry;
  Dataset data;
  std::vector<ModelPlan> models;
  std::vector<EvalPlan> evaluations;
  fs::path output_dir;
  bool save_models = true;
  bool plot = false;
  DensityPlotOptions plot_options;
};

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

Plan build_plan(const std::string& path, const RunOptions& options) {
  Plan plan;
  plan.root = load_pipeline_config(path, options.overrides);
  Config& root = plan.root;
  plan.seed = static_cast<std::uint64_t>(root.integer("seed"));

  Config plugins = root.table("plugins");
  plugins.validate({KeySpec::strings("paths", "extra plugin directories, searched first")});
  std::vector<std::string> plugin_paths;
  for (const auto& p : plugins.strings("paths")) {
    fs::path pp(p);
    plugin_paths.push_back(pp.is_absolute() ? p : (fs::path(path).parent_path() / pp).string());
  }
  plan.registry = std::make_unique<Registry>();
  register_core_components(*plan.registry);
  plan.registry->load_plugins(plugin_search_path(plugin_paths));
  warn_refused_plugins(*plan.registry, options.quiet);

  Config output = root.table("output");
  output.validate(output_keys());
  std::string dir = options.output_dir ? *options.output_dir
                                       : (output.has("dir") ? output.string("dir") : "runs/" + pipeline_stem(path));
  if (dir.empty()) output.fail("dir", "empty output directory");
  plan.output_dir = dir;
  plan.save_models = output.boolean("save_models");

  plan.data = prepare_dataset(*plan.registry, root.table("data"), plan.seed);
  const Index D = plan.data.dim();

  plan.plot = output.boolean("plot");
  plan.plot_options.show_points = output.boolean("plot_points");
  plan.plot_options.max_points = output.integer("plot_max_points");
  plan.plot_options.grid = output.integer("plot_grid");
  if (output.has("plot_extent") && density_plot_supported(D)) {
    const std::vector<double> v = output.numbers("plot_extent");
    if (v.size() != static_cast<std::size_t>(2 * D))
      output.fail("plot_extent", "expected " + std::string(D == 1 ? "[xmin, xmax] for 1-D data"
                                                                  : "[xmin, xmax, ymin, ymax] for 2-D data") +
                                     ", got " + std::to_string(v.size()) + " numbers");
    for (std::size_t i = 0; i < v.size(); i += 2)
      if (!std::isfinite(v[i]) || !std::isfinite(v[i + 1]) || !(v[i] < v[i + 1]))
        output.fail("plot_extent", "each range must be finite with min < max");
    plan.plot_options.extent = PlotExtent{v[0], v[1], D == 2 ? v[2] : 0.0, D == 2 ? v[3] : 1.0};
  }

  std::set<std::string> names;
  auto model_tables = root.table_array("model");
  if (model_tables.empty()) root.fail("model", "at least one [[model]] is required");
  for (std::size_t i = 0; i < model_tables.size(); ++i) {
    Config m = model_tables[i];
    m.validate(model_keys());
    ModelPlan mp;
    mp.name = m.has("name") ? m.string("name") : "model" + std::to_string(i);
    // The name is a directory name: at most 255 bytes (NAME_MAX), no NUL or other control character.
    const bool control = std::any_of(mp.name.begin(), mp.name.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (mp.name.empty() || mp.name.size() > 255 || control ||
        mp.name.find_first_of("/\\ \t") != std::string::npos || mp.name[0] == '.')
      m.fail("name",
             "model names must be 1 to 255 bytes, without spaces, slashes or control characters, not "
             "starting with '.' (got " +
                 std::to_string(mp.name.size()) + " bytes)");
    if (!names.insert(mp.name).second) m.fail("name", "duplicate model name \"" + mp.name + "\"");
    mp.table = m;
    Config est = m.table("estimator");
    const ComponentInfo& info = plan.registry->info_for(ComponentKind::Estimator, est);
    RandomStream init_rng(plan.seed, m.dotted("init"));
    BuildContext ctx{D, plan.registry.get(), &init_rng, plan.data.train.rows()};
    if (info.uses_kernel) {
      if (!m.has("kernel")) m.fail("", "estimator `" + info.type + "` needs a [" + m.dotted("kernel") + "] table");
      Config kcfg = m.table("kernel");
      mp.kernel = plan.registry->make_kernel(kcfg, ctx);
      kcfg.fill_defaults();
    } else if (m.has("kernel")) {
      m.fail("kernel", "estimator `" + info.type + "` does not use a kernel");
    }
    if (info.uses_base_measure) {
      if (!m.has("base_measure"))
        m.fail("", "estimator `" + info.type + "` needs a [" + m.dotted("base_measure") + "] table");
      Config bcfg = m.table("base_measure");
      mp.base_measure = plan.registry->make_base_measure(bcfg, ctx);
      bcfg.fill_defaults();
      mp.base_measure->check_dimension(D);
    } else if (m.has("base_measure")) {
      m.fail("base_measure", "estimator `" + info.type + "` does not use a base measure");
    }
    mp.estimator = plan.registry->make_estimator(est, EstimatorParts{mp.kernel, mp.base_measure, plan.registry.get()}, ctx);
    est.fill_defaults();
    plan.models.push_back(std::move(mp));
  }

  auto eval_tables = root.table_array("evaluate");
  for (std::size_t i = 0; i < eval_tables.size(); ++i) {
    Config e = eval_tables[i];
    EvalPlan ep;
    ep.table = e;
    ep.info = &plan.registry->info_for(ComponentKind::Evaluator, e);
    std::vector<std::string> host = {"models", "name"};
    if (ep.info->compares_two_models) host.push_back("against");
    // The host's keys are checked here; the evaluator's own keys by the registry.
    if (e.has("models")) {
      for (const auto& n : e.strings("models"))
        if (!names.count(n)) e.fail("models", "no [[model]] named \"" + n + "\"");
      ep.models = e.strings("models");
    } else {
      for (const auto& mp : plan.models) ep.models.push_back(mp.name);
    }
    if (e.has("name")) ep.label = e.string("name");
    if (ep.info->compares_two_models) {
      if (!e.has("against")) e.fail("", "`" + ep.info->type + "` compares two models: set `against = \"NAME\"`");
      ep.other = e.string("against");
      if (!names.count(ep.other)) e.fail("against", "no [[model]] named \"" + ep.other + "\"");
    }
    if (ep.info->needs_truth && !plan.data.truth)
      e.fail("type", "`" + ep.info->type + "` needs the exact density of the data, and this data source has none "
                     "(use a synthetic source)");
    RandomStream init_rng(plan.seed, e.dotted("init"));
    ep.evaluator = plan.registry->make_evaluator(e, BuildContext{D, plan.registry.get(), &init_rng, plan.data.train.rows()}, host);
    e.fill_defaults();
    plan.evaluations.push_back(std::move(ep));
  }
  root.fill_defaults();
  output.fill_defaults();
  return plan;
}

std::string format_metric(double v) {
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

// Staging, checking and publishing the output directory: kef/output_dir.hpp.
void publish(const fs::path& staging, const fs::path& target) { publish_staging_dir(staging, target); }

// density.png of a run: the truth first (captioned with the metrics that describe it), then every model
// captioned with its held-out metrics. D > 2 is skipped with a note, as there is no 2-D view to draw.
void write_run_plot(const Plan& plan, const std::map<std::string, ModelPtr>& fitted, const Json& models,
                    const fs::path& staging, int threads, std::ostream& log) {
  const Index D = plan.data.dim();
  if (!density_plot_supported(D)) {
    log << "density plot: skipped, the data has dimension " << D << " (plots are drawn for 1-D and 2-D data)\n";
    return;
  }
  std::vector<std::pair<std::string, double>> all_metrics;
  std::vector<PlotModel> panels;
  std::optional<PlotModel> truth;
  if (plan.data.truth) truth = PlotModel{"truth", plan.data.truth.get(), {}};
  for (const auto& mp : plan.models) {
    std::vector<std::pair<std::string, double>> metrics;
    for (const auto& [k, v] : models.at(mp.name).at("metrics").items()) metrics.emplace_back(k, v.get<double>());
    all_metrics.insert(all_metrics.end(), metrics.begin(), metrics.end());
    panels.push_back(PlotModel{mp.name, fitted.at(mp.name).get(), metrics_caption(metrics, false)});
    // The truth's metrics are computed on the same test rows for every model: take the first model's.
    if (truth && truth->caption.empty()) truth->caption = metrics_caption(metrics, true);
  }
  DensityPlotOptions options = plan.plot_options;
  options.threads = threads;
  options.footnote = metrics_legend(all_metrics);
  DensityPlotResult r = write_density_plot(staging / "density.png", panels, truth, plan.data.train,
                                           plan.data.test, options);
  log << "density plot: density.png, " << r.width << " x " << r.height << " pixels, extent x [" << r.extent.xmin
      << ", " << r.extent.xmax << "]";
  if (D == 2) log << " y [" << r.extent.ymin << ", " << r.extent.ymax << "]";
  log << ", grid " << options.grid << "\n";
  for (const auto& n : r.notes) log << n << "\n";
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
  (void)build_plan(path, options);
}

RunSummary run_pipeline(const std::string& path, const RunOptions& options) {
  Plan plan = build_plan(path, options);
  const int threads = options.threads > 0 ? options.threads : default_threads();
  check_output_target(plan.output_dir);
  std::unique_ptr<Progress> progress = options.quiet ? make_silent_progress() : make_stderr_progress();

  fs::path staging = make_staging_dir(plan.output_dir);
  try {
    Json results;
    results["kef_version"] = version();
    results["seed"] = plan.seed;
    results["config_file"] = fs::absolute(path).string();
    results["config"] = Json::parse(plan.root.to_json(false));
    Json plugins = Json::object();
    for (const auto& p : plan.registry->plugins())
      if (p.status == PluginRecord::Status::Loaded) plugins[p.name] = p.version;
    results["plugins"] = plugins;
    results["threads"] = threads;
    results["data"] = {{"train_rows", plan.data.train.rows()},
                       {"validation_rows", plan.data.validation.rows()},
                       {"test_rows", plan.data.test.rows()},
                       {"dim", plan.data.dim()},
                       {"provenance", plan.data.provenance},
                       {"truth", plan.data.truth ? plan.data.truth->describe() : std::string()}};
    Json models = Json::object();
    std::map<std::string, ModelPtr> fitted;
    std::ofstream log(staging / "log.txt");

    for (auto& mp : plan.models) {
      RandomStream rng(plan.seed, "model." + mp.name + ".fit");
      FitReport report;
      FitInput in{plan.data.train, plan.data.validation, rng, *progress, threads, report};
      auto t0 = std::chrono::steady_clock::now();
      ModelPtr model = mp.estimator->fit(in);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!model) throw Error("model " + mp.name + ": the estimator returned no model");
      if (model->dim() != plan.data.dim())
        throw Error("model " + mp.name + ": fitted dimension " + std::to_string(model->dim()) +
                    " differs from the data's " + std::to_string(plan.data.dim()));
      std::string msg = "fitted in " + format_metric(seconds) + " s";
      progress->done("model " + mp.name, msg);
      log << "model " << mp.name << ": " << msg << "\n";
      Json fit = {{"seconds", seconds}, {"iterations", report.iterations}};
      for (const auto& [k, v] : report.values) fit[k] = v;
      if (!report.curve.empty()) {
        Json curve = Json::array();
        for (const auto& [step, loss] : report.curve) curve.push_back({step, loss});
        fit["curve"] = curve;
      }
      for (const auto& n : report.notes) log << "model " << mp.name << ": " << n << "\n";
      if (!report.notes.empty()) fit["notes"] = report.notes;
      Json entry = {{"fit", fit}, {"metrics", Json::object()}, {"description", model->describe()}};
      if (plan.save_models && model->can_save()) {
        save_model(*model, staging / "models" / mp.name);
        entry["model_dir"] = "models/" + mp.name;
      } else {
        entry["model_dir"] = nullptr;
      }
      models[mp.name] = entry;
      fitted[mp.name] = model;
    }

    for (std::size_t i = 0; i < plan.evaluations.size(); ++i) {
      auto& ep = plan.evaluations[i];
      for (const auto& name : ep.models) {
        if (ep.info->compares_two_models && name == ep.other) continue;
        RandomStream rng(plan.seed, "evaluate[" + std::to_string(i) + "]." + name);
        EvalInput in{*fitted.at(name), name, plan.data, rng, *progress, threads,
                     ep.other.empty() ? nullptr : fitted.at(ep.other).get(), ep.other};
        EvaluationResult r = ep.evaluator->evaluate(in);
        Json& metrics = models[name]["metrics"];
        for (const auto& [metric, value] : r.metrics) {
          if (!std::isfinite(value))
            throw NumericalError("evaluate[" + std::to_string(i) + "] (" + ep.info->type + ") on model " +
                                 name + ": metric " + metric + " is not finite");
          std::string key = ep.label.empty() ? metric : ep.label + "." + metric;
          if (metrics.contains(key))
            ep.table.fail("name", "metric `" + key + "` of model " + name +
                                      " is already reported by another [[evaluate]]; give this one a `name`");
          metrics[key] = value;
        }
        for (const auto& n : r.notes) {
          models[name]["notes"].push_back(ep.info->type + ": " + n);
          log << "model " << name << ": " << ep.info->type << ": " << n << "\n";
        }
        if (!r.summary.empty()) log << "model " << name << ": " << r.summary << "\n";
      }
    }
    if (plan.plot) write_run_plot(plan, fitted, models, staging, threads, log);
    results["models"] = models;
    {
      std::ofstream out(staging / "results.json");
      out << results.dump(2) << "\n";
      out.close();  // the data reaches the disk here, not at the <<: check after it
      if (!out) throw Error((plan.output_dir / "results.json").string() + ": cannot write (disk full?)");
    }
    log.close();
    if (!log) throw Error((plan.output_dir / "log.txt").string() + ": cannot write (disk full?)");
    publish(staging, plan.output_dir);

    RunSummary summary;
    summary.output_dir = plan.output_dir;
    std::ostringstream table;
    for (const auto& [name, entry] : models.items()) {
      table << std::left << std::setw(16) << name << " fit " << format_metric(entry["fit"]["seconds"].get<double>())
            << " s";
      for (const auto& [metric, value] : entry["metrics"].items())
        table << "  " << metric << " = " << format_metric(value.get<double>());
      table << "\n";
    }
    summary.table = table.str();
    return summary;
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace kef
