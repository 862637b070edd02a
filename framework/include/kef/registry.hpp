#pragma once
// The registry of named components ("kernel/gaussian", "estimator/lite", ...) and the plugin host
// that fills it. Plugins register factories explicitly from their registration function; every object
// a factory makes keeps its plugin library loaded; exceptions escaping plugin code that are not
// kef::Errors are rethrown as kef::PluginError naming the plugin and its file.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/config.hpp"
#include "kef/data_source.hpp"
#include "kef/estimator.hpp"
#include "kef/evaluator.hpp"
#include "kef/feature_map.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"

namespace kef {

class ModelReader;
class Registry;

enum class ComponentKind { Kernel, FeatureMap, BaseMeasure, Estimator, Evaluator, DataSource, Model };
const char* to_string(ComponentKind kind);

struct ComponentInfo {
  std::string type;        // "gaussian", "synthetic/banana", ...
  std::string summary;     // one line
  std::string reference;   // paper and section it implements
  KeyList keys;
  // Estimators: which parts of the [[model]] table they use.
  bool uses_kernel = false;
  bool uses_base_measure = false;
  // Evaluators: whether they need the exact density of the source / a second model.
  bool needs_truth = false;
  bool compares_two_models = false;
  std::string plugin;      // filled by the registry
};

struct BuildContext {
  Index dim = -1;                 // data dimension when known
  Registry* registry = nullptr;
  RandomStream* rng = nullptr;    // the component's own stream (initialisation)
  Index train_rows = -1;          // size of the training split when known (early validation)
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const Config&, const BuildContext&)>;
using FeatureMapFactory =
    std::function<std::unique_ptr<FeatureMap>(const Config&, const BuildContext&)>;
using BaseMeasureFactory =
    std::function<std::unique_ptr<BaseMeasure>(const Config&, const BuildContext&)>;
using EstimatorFactory = std::function<std::unique_ptr<Estimator>(
    const Config&, const EstimatorParts&, const BuildContext&)>;
using EvaluatorFactory =
    std::function<std::unique_ptr<Evaluator>(const Config&, const BuildContext&)>;
using DataSourceFactory =
    std::function<std::unique_ptr<DataSource>(const Config&, const BuildContext&)>;
using ModelLoader = std::function<ModelPtr(const ModelReader&, Registry&)>;

// What a plugin's registration function receives.
class PluginRegistrar {
 public:
  virtual ~PluginRegistrar() = default;
  virtual void add_kernel(ComponentInfo info, KernelFactory factory) = 0;
  virtual void add_feature_map(ComponentInfo info, FeatureMapFactory factory) = 0;
  virtual void add_base_measure(ComponentInfo info, BaseMeasureFactory factory) = 0;
  virtual void add_estimator(ComponentInfo info, EstimatorFactory factory) = 0;
  virtual void add_evaluator(ComponentInfo info, EvaluatorFactory factory) = 0;
  virtual void add_data_source(ComponentInfo info, DataSourceFactory factory) = 0;
  // Loader for saved models whose model.toml has `type = info.type`.
  virtual void add_model_loader(ComponentInfo info, ModelLoader loader) = 0;
};

using RegisterFunction = void(PluginRegistrar&);

struct PluginRecord {
  enum class Status { Loaded, Refused, Shadowed };
  std::filesystem::path path;
  Status status = Status::Refused;
  std::string name, version, summary;
  std::string reason;  // why refused or shadowed
  std::vector<std::string> components;  // "kernel/gaussian", ...
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Loads every kef_*.so in each directory, in order. A broken, mismatched or conflicting plugin is
  // refused (recorded in plugins(), with the reason); it never stops the others.
  void load_plugins(const std::vector<std::filesystem::path>& directories);
  // Loads one file; throws PluginError with the reason when it is refused. A file whose plugin name
  // is already loaded is recorded as Shadowed and not loaded; that is not an error.
  void load_plugin(const std::filesystem::path& file);
  const std::vector<PluginRecord>& plugins() const;

  // Components linked into the program itself (tests, embedding); `origin` names them.
  void register_builtin(const std::string& origin, const std::function<RegisterFunction>& fn);

  std::vector<ComponentInfo> components(ComponentKind kind) const;
  const ComponentInfo* find(ComponentKind kind, std::string_view type) const;
  // The ComponentInfo for cfg's type; ConfigError listing the valid types otherwise.
  const ComponentInfo& info_for(ComponentKind kind, const Config& cfg) const;

  // Validate cfg against the type's keys (ConfigError on any problem), then build.
  KernelPtr make_kernel(Config cfg, const BuildContext& ctx);
  FeatureMapPtr make_feature_map(Config cfg, const BuildContext& ctx);
  BaseMeasurePtr make_base_measure(Config cfg, const BuildContext& ctx);
  EstimatorPtr make_estimator(Config cfg, const EstimatorParts& parts, const BuildContext& ctx);
  // host_keys: keys the host handles (e.g. `models`), allowed besides the evaluator's own.
  EvaluatorPtr make_evaluator(Config cfg, const BuildContext& ctx,
                              const std::vector<std::string>& host_keys = {});
  DataSourcePtr make_data_source(Config cfg, const BuildContext& ctx,
                                 const std::vector<std::string>& host_keys = {});
  ModelPtr load_model(const ModelReader& reader);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Plugin directories in search order: config paths, KEF_PLUGIN_PATH, then the directory installed
// next to libkef (lib/kef/plugins, which is also where the build tree puts them).
std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::string>& config_paths);
std::filesystem::path installed_plugin_dir();

// Version of the library, "major.minor.patch".
const char* version();
constexpr int kVersionMajor = 0;
constexpr int kVersionMinor = 2;
constexpr int kVersionPatch = 0;

}  // namespace kef
