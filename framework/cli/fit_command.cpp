// `kef fit DATA` (fit_command.hpp): the pipeline of one model on a data file, with fit_defaults'
// choices, run by the pipeline's own plan and saved as a model directory by the publishing rule of
// kef/output_dir.hpp.
#include "fit_command.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "cli_support.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/estimator.hpp"
#include "kef/fit_defaults.hpp"
#include "kef/memory_budget.hpp"
#include "kef/model_archive.hpp"
#include "kef/output_dir.hpp"
#include "kef/pipeline.hpp"
#include "text.hpp"

namespace kef_cli {

namespace fs = std::filesystem;

namespace {

// The [[model]] name of the pipeline `kef fit` runs.
constexpr const char* kModelName = "model";

// A TOML value: numbers keep every digit (a double as %.17g, with a point so that it stays a float),
// strings are JSON strings, which are TOML basic strings.
std::string toml_value(const kef::DefaultValue& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", *d);
    std::string s = text;
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  if (const auto* s = std::get_if<std::string>(&v)) return nlohmann::json(*s).dump();
  if (const auto* list = std::get_if<std::vector<double>>(&v)) {
    std::string s = "[";
    for (std::size_t i = 0; i < list->size(); ++i) s += (i ? ", " : "") + toml_value((*list)[i]);
    return s + "]";
  }
  return "\"\"";
}

std::string toml_strings(const std::vector<std::string>& names) {
  std::string s = "[";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + nlohmann::json(names[i]).dump();
  return s + "]";
}

// One --set KEY=VALUE: the table it goes to ("estimator", or a part such as "kernel"), the key within
// it (dotted for a table inside the estimator's, e.g. inner.type) and the value's text.
struct Setting {
  std::string given;  // as written, for messages
  std::string table, key, value;
};

// A --set value as TOML: kept when it parses as a TOML value, else quoted as a string (as `kef run
// --set` takes `solver=pinv`).
std::string setting_toml(const std::string& value) {
  try {
    (void)kef::Config::parse_string("v = " + value + "\n", "--set");
    return value;
  } catch (const kef::ConfigError&) {
    return nlohmann::json(value).dump();
  }
}

std::string unquoted(const std::string& v) {
  return v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front() ? v.substr(1, v.size() - 2) : v;
}

std::string part_interface(const kef::ComponentInfo& info, const std::string& part) {
  for (const kef::PartSpec& p : info.all_parts())
    if (p.name == part) return p.interface;
  return {};
}

// The --set settings, each checked against the declaration of what it sets: the estimator's keys,
// its parts, and the keys of the part's type (the type given by --set PART.type, else fit_defaults').
std::vector<Setting> read_settings(const kef::Registry& registry, const kef::ComponentInfo& info,
                                   const std::vector<std::string>& given,
                                   const std::vector<kef::DefaultSetting>& defaults) {
  std::vector<std::string> estimator_keys, parts;
  for (const kef::KeySpec& k : info.keys) estimator_keys.push_back(k.name);
  for (const kef::PartSpec& p : info.all_parts()) parts.push_back(p.name);
  std::vector<Setting> out;
  for (const std::string& text : given) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw kef::ConfigError("--set " + text + ": expected KEY=VALUE (an estimator key, or PART.KEY)");
    Setting s{text, "estimator", text.substr(0, eq), setting_toml(text.substr(eq + 1))};
    const std::string head = s.key.substr(0, s.key.find('.'));
    const bool dotted = head.size() < s.key.size();
    const kef::KeySpec* spec = nullptr;
    for (const kef::KeySpec& k : info.keys)
      if (k.name == head) spec = &k;
    if (spec && dotted && spec->kind != kef::ValueKind::Table)
      throw kef::ConfigError("--set " + text + ": `" + head + "` of estimator " + info.type +
                             " is a single value, not a table");
    if (!spec && dotted && std::find(parts.begin(), parts.end(), head) != parts.end()) {
      // A part's key: checked against the declaration of the part's type.
      s.table = head;
      s.key = s.key.substr(head.size() + 1);
      if (s.key != "type") {
        std::string type;
        for (const std::string& other : given)
          if (other.rfind(head + ".type=", 0) == 0) type = unquoted(other.substr(head.size() + 6));
        for (const kef::DefaultSetting& d : defaults)
          if (type.empty() && d.table == head && d.key == "type") type = std::get<std::string>(d.value);
        const kef::ComponentInfo* part = type.empty() ? nullptr : registry.find(part_interface(info, head), type);
        if (part) {
          std::vector<std::string> keys = {"type"};
          for (const kef::KeySpec& k : part->keys) keys.push_back(k.name);
          if (std::find(keys.begin(), keys.end(), s.key) == keys.end()) {
            const std::string best = kef::detail::closest(s.key, keys);
            throw kef::ConfigError("--set " + text + ": " + head + " `" + type + "` has no key `" + s.key + "`" +
                                   (best.empty() ? "" : " (did you mean `" + head + "." + best + "`?)") +
                                   "; its keys: " + kef::detail::join(keys) + " (`kef plugins --describe " +
                                   part_interface(info, head) + "/" + type + "`)");
          }
        }
      }
    } else if (!spec) {
      std::vector<std::string> known = estimator_keys;
      for (const std::string& p : parts) known.push_back(p + "." + (dotted ? s.key.substr(head.size() + 1) : "KEY"));
      std::string best = kef::detail::closest(dotted ? s.key : head, known);
      if (best.empty() && dotted) best = kef::detail::closest(head, parts);
      throw kef::ConfigError("--set " + text + ": estimator " + info.type + " has no key `" + s.key + "`" +
                             (best.empty() ? "" : " (did you mean `" + best + "`?)") + "; its keys: " +
                             (estimator_keys.empty() ? std::string("none") : kef::detail::join(estimator_keys)) +
                             (parts.empty() ? "" : "; its parts' keys as PART.KEY, parts: " + kef::detail::join(parts)) +
                             " (`kef plugins --describe estimator/" + info.type + "`)");
    }
    // A key set twice: the last value, as `kef run --set` takes it.
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const Setting& o) { return o.table == s.table && o.key == s.key; }),
              out.end());
    out.push_back(s);
  }
  return out;
}

// The estimators `kef fit` takes: those of unconditional densities (the Python kef.sklearn classes').
std::vector<std::string> fit_estimator_types(const kef::Registry& registry) {
  std::vector<std::string> names;
  for (const kef::ComponentInfo& i : registry.components(kef::Estimator::kInterface))
    if (!i.facets.has(kef::Facet::ConditionalDensity) || i.facets.has(kef::Facet::LogDensity))
      names.push_back(i.type);
  return names;
}

// The estimator `--model` names: a registered estimator of unconditional densities.
const kef::ComponentInfo& fit_estimator(const kef::Registry& registry, const std::string& model) {
  const kef::ComponentInfo* info = registry.find(kef::Estimator::kInterface, model);
  const std::vector<std::string> names = fit_estimator_types(registry);
  if (!info) {
    const std::string best = kef::detail::closest(model, names);
    throw kef::ConfigError("--model " + model + ": no such estimator" +
                           (best.empty() ? "" : " (did you mean `" + best + "`?)") +
                           "; the estimators: " + kef::detail::join(names));
  }
  if (std::find(names.begin(), names.end(), info->type) == names.end())
    throw kef::ConfigError("--model " + model +
                           ": fits conditional densities p(y | x), which need [data] targets; write a pipeline "
                           "for it (`kef run`); the estimators `kef fit` takes: " +
                           kef::detail::join(names));
  return *info;
}

// Where the model goes when --out is not given: DATA's stem and the model type, in the working
// directory (iris.csv -> iris-lite).
std::string default_out(const FitFlags& f) { return fs::path(f.data).stem().string() + "-" + f.model; }

// An existing non-empty --out is replaced only with --force, and then only when it is a saved model
// (kef/output_dir.hpp refuses anything else, with or without --force).
void check_out(const std::string& out, bool force) {
  std::error_code ec;
  const bool non_empty = fs::is_directory(out, ec) && !fs::is_empty(out, ec);
  if (non_empty && !force)
    throw kef::ConfigError("--out " + out +
                           ": exists and is not empty; pass --force to replace it (only a saved model is "
                           "replaced) or choose another --out");
  if (fs::exists(fs::symlink_status(out, ec)) && !fs::is_directory(fs::symlink_status(out, ec)))
    throw kef::ConfigError("--out " + out + ": exists and is not a directory");
  kef::check_output_target(out, kef::OutputKind::SavedModel);
}

// The data file, checked before any work: a regular .csv or .npy file.
fs::path data_file(const std::string& data) {
  struct stat st {};
  if (::stat(data.c_str(), &st) != 0) throw kef::DataError(data + ": no such file");
  if (!S_ISREG(st.st_mode)) throw kef::DataError(data + ": not a regular file (expected a .csv or .npy file)");
  std::string ext = fs::path(data).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext != ".csv" && ext != ".npy")
    throw kef::DataError(data + ": expected a .csv or .npy file (by its extension), got `" + ext + "`");
  return fs::absolute(data).lexically_normal();
}

struct FitPipeline {
  std::string text;                           // the pipeline, as written to pipeline.toml
  std::vector<kef::DefaultSetting> defaults;  // what fit_defaults chose (those --set did not replace)
};

// The pipeline that fits --model to DATA: [data] from the flags (no test split), one [[model]] with
// the defaults and the --set values.
FitPipeline fit_pipeline(const kef::Registry& registry, const FitFlags& f, const fs::path& data,
                         const kef::ComponentInfo& info) {
  const kef::Index rows = kef::count_table_rows(data, !f.no_header);
  // The tables and estimator keys the user gave: only what is absent gets a default.
  std::vector<std::string> given_tables, given_keys;
  for (const std::string& s : f.settings) {
    const std::string key = s.substr(0, s.find('='));
    const auto dot = key.find('.');
    if (dot == std::string::npos) given_keys.push_back(key);
    if (dot != std::string::npos && key.substr(dot + 1) == "type") given_tables.push_back(key.substr(0, dot));
    if (dot != std::string::npos) given_keys.push_back(key.substr(0, dot));
  }
  FitPipeline p;
  const std::vector<kef::DefaultSetting> all_defaults = kef::fit_defaults(info, given_tables, given_keys, rows);
  const std::vector<Setting> settings = read_settings(registry, info, f.settings, all_defaults);
  auto set_by_user = [&](const std::string& table, const std::string& key) {
    for (const Setting& s : settings)
      if (s.table == table && s.key == key) return true;
    return false;
  };
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> tables;  // table -> key, TOML
  std::string validation;
  for (const kef::DefaultSetting& d : all_defaults) {
    if (d.table == "data") {
      validation = toml_value(d.value);
    } else {
      const auto dot = d.table.find('.');
      const std::string table = d.table.substr(0, dot);
      const std::string key = dot == std::string::npos ? d.key : d.table.substr(dot + 1) + "." + d.key;
      if (set_by_user(table, key)) continue;
      tables[table].emplace_back(key, toml_value(d.value));
    }
    p.defaults.push_back(d);
  }
  std::ostringstream t;
  t << "schema_version = 1\nseed = " << f.seed << "\n";
  if (f.memory_limit_gb) t << "memory_limit_gb = " << toml_value(*f.memory_limit_gb) << "\n";
  if (!f.plugin_paths.empty()) {
    std::vector<std::string> absolute;
    for (const std::string& path : f.plugin_paths) absolute.push_back(fs::absolute(path).string());
    t << "\n[plugins]\npaths = " << toml_strings(absolute) << "\n";
  }
  t << "\n[data]\ntype = \"file\"\npath = " << nlohmann::json(data.string()).dump() << "\n";
  if (f.no_header) t << "header = false\n";
  if (!f.columns.empty()) t << "columns = " << toml_strings(f.columns) << "\n";
  if (!f.exclude.empty()) t << "exclude = " << toml_strings(f.exclude) << "\n";
  t << "standardize = " << (f.no_standardize ? "false" : "true") << "\n";
  t << "split = { test = 0" << (validation.empty() ? "" : ", validation = " + validation) << " }\n";
  t << "\n[[model]]\nname = \"" << kModelName << "\"\n";
  auto write_table = [&](const std::string& table) {
    t << "\n[model." << table << "]\n";
    if (table == "estimator") t << "type = " << nlohmann::json(info.type).dump() << "\n";
    for (const auto& [key, value] : tables[table]) t << key << " = " << value << "\n";
    for (const Setting& s : settings)
      if (s.table == table) t << s.key << " = " << s.value << "\n";
  };
  std::vector<std::string> order = {"estimator"};
  for (const kef::PartSpec& part : info.all_parts()) order.push_back(part.name);
  for (const std::string& table : order) {
    bool used = table == "estimator" || tables.count(table);
    for (const Setting& s : settings) used = used || s.table == table;
    if (used) write_table(table);
  }
  p.text = t.str();
  return p;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw kef::Error(path.string() + ": cannot write (disk full?)");
}

std::string seconds_text(double s) {
  std::ostringstream os;
  os.precision(3);
  os << s;
  return os.str();
}

}  // namespace

CLI::App* add_fit_command(CLI::App& app, FitFlags& f, int& threads) {
  CLI::App* fit = app.add_subcommand(
      "fit",
      "Fit one model to a data file (.csv with a header, or .npy) with sensible defaults and save it "
      "(for kef sample, score, eval and Python's kef.load)");
  fit->add_option("data", f.data, "data file: .csv (first line: column names) or .npy")->required();
  fit->add_option("--model", f.model,
                  "estimator type (listed below): lite, the default, fits by closed-form score matching "
                  "with a Gaussian kernel of median-rule bandwidth")
      ->capture_default_str();
  fit->add_option("--set", f.settings,
                  "an estimator key (lambda_alpha=1e-2) or a part's key (kernel.sigma=0.5), checked against "
                  "the model's declaration");
  fit->add_option("--out", f.out,
                  "model directory (default: DATA's name and the model type, e.g. iris-lite); an existing "
                  "non-empty one is refused unless --force");
  fit->add_flag("--force", f.force, "replace an existing saved model at --out");
  fit->add_option("--columns", f.columns, "CSV columns to fit (default: all)")->delimiter(',');
  fit->add_option("--exclude", f.exclude, "CSV columns to leave out")->delimiter(',');
  fit->add_flag("--no-header", f.no_header, "the CSV file has no header line (columns named x0, x1, ...)");
  fit->add_flag("--no-standardize", f.no_standardize,
                "fit on the columns as they are (default: standardised to mean 0, variance 1; the model is "
                "saved in data units either way)");
  fit->add_option("--seed", f.seed, "seed (default 0)")->check(seed_value());
  fit->add_option("--memory-limit-gb", f.memory_limit_gb, kef::kMemoryLimitDoc)
      ->check(CLI::PositiveNumber);
  fit->add_option("--threads", threads, "worker threads (results do not depend on it)")
      ->check(integer_in(1, kMaxThreads));
  fit->add_flag("--quiet", f.quiet, "no progress on stderr (the summary is still printed)");
  fit->add_option("--path", f.plugin_paths, "extra plugin directory (searched first)");
  // Listed from the plugins when the help is shown: plugins add estimators.
  fit->footer([&f] {
    kef::Registry registry;
    load_default_plugins(registry, f.plugin_paths);
    std::string text = "Estimators (--model; `kef plugins --describe estimator/TYPE` lists their keys):\n";
    for (const std::string& type : fit_estimator_types(registry)) {
      const kef::ComponentInfo* info = registry.find(kef::Estimator::kInterface, type);
      std::string summary = info->summary.substr(0, info->summary.find(':'));
      if (summary.size() > 90) summary = summary.substr(0, summary.rfind(' ', 87)) + " ...";
      text += "  " + type + std::string(type.size() < 16 ? 16 - type.size() : 1, ' ') + summary + "\n";
    }
    return text;
  });
  return fit;
}

int cmd_fit(kef::Registry& registry, const FitFlags& flags, int threads) {
  FitFlags f = flags;
  load_default_plugins(registry, f.plugin_paths);
  const kef::ComponentInfo& info = fit_estimator(registry, f.model);
  f.model = info.type;
  const fs::path data = data_file(f.data);
  const std::string out = f.out.empty() ? default_out(f) : f.out;
  check_out(out, f.force);
  const FitPipeline p = fit_pipeline(registry, f, data, info);

  kef::RunOptions options;
  options.threads = threads;
  options.quiet = f.quiet;
  const kef::Config pipeline = kef::Config::parse_generated(p.text, "kef fit");
  const kef::RunResult r = kef::run_pipeline(pipeline, options, false);
  const nlohmann::json results = nlohmann::json::parse(r.results_json);
  const kef::ModelPtr& fitted = r.fitted.front().second;
  if (!fitted->can_save())
    throw kef::ConfigError("--model " + f.model + ": its models cannot be saved, so `kef fit` cannot keep one");

  // Published as Model.save and `kef run` publish: a staging directory, then one rename.
  const fs::path staging = kef::make_staging_dir(out);
  try {
    kef::save_model(*fitted, staging, r.data.transform, r.registry.get());
    write_text(staging / "pipeline.toml",
               "# The pipeline `kef fit` ran: `kef run pipeline.toml --output RUN` fits the same model "
               "(RUN/models/" + std::string(kModelName) + ").\n" + p.text);
    write_text(staging / "fit.json", r.results_json + "\n");
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  kef::publish_staging_dir(staging, out, kef::PublishMethod::Automatic, kef::OutputKind::SavedModel);

  const auto& entry = results["models"][kModelName];
  const auto& d = results["data"];
  std::cout << "fitted " << f.model << " to " << d["train_rows"].get<long long>() << " rows";
  if (d["validation_rows"].get<long long>() > 0)
    std::cout << " (and " << d["validation_rows"].get<long long>() << " validation rows)";
  std::cout << " x " << d["dim"].get<long long>() << " columns of " << f.data << " in "
            << seconds_text(entry["fit"]["seconds"].get<double>()) << " s\n";
  std::cout << "  columns: " << kef::detail::join(r.data.columns) << "\n";
  std::cout << "  " << (f.no_standardize ? "not standardised" : "standardised (mean 0, variance 1)")
            << "; the model is in the data's units\n";
  for (const kef::DefaultSetting& s : p.defaults)
    std::cout << "  default " << s.table << "." << s.key << " = " << toml_value(s.value) << "\n";
  if (entry.contains("chosen"))
    for (const auto& [key, c] : entry["chosen"].items())
      std::cout << "  chosen " << (key.rfind("model[0].", 0) == 0 ? key.substr(9) : key) << " = " << c["value"].get<double>() << " (" << c["rule"].get<std::string>()
                << ")\n";
  std::cout << "model: " << out << " (pipeline.toml: the pipeline it ran; fit.json: its record)\n"
            << "next:\n"
            << "  kef sample " << out << " -n 1000 --out samples.npy\n"
            << "  kef score " << out << " --data " << f.data << " --out scores.csv\n"
            << "  kef eval " << out << " --data TEST" << fs::path(f.data).extension().string()
            << " --type score_matching_loss\n";
  return 0;
}

}  // namespace kef_cli
