#pragma once
// The registry of named components ("kernel/gaussian", "estimator/lite", "sampler/...", ...) and the
// plugin host that fills it. Components are keyed by interface name and type; the registry knows
// nothing of particular interfaces beyond an optional guard per interface (see below), so a new kind
// of component needs no change here, in the CLI or in the registrar's vtable.
//
// Plugins register factories explicitly from their registration function; every object a factory
// makes keeps its plugin library loaded; exceptions escaping plugin code are rethrown as host-owned
// exceptions (kef::Errors keep their class and message, anything else becomes a kef::PluginError
// naming the plugin and its file). Estimators, evaluators, data sources and models made by plugins
// are wrapped so that this holds for every later call into them too.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kef/component_info.hpp"
#include "kef/config.hpp"
#include "kef/plugin_registrar.hpp"

namespace kef {

class ModelReader;

// Shorthands for the interfaces the host itself defines; the registry is keyed by the names
// (to_string), and any other interface name works the same way.
enum class ComponentKind { Kernel, FeatureMap, BaseMeasure, Estimator, Evaluator, DataSource, Model };
const char* to_string(ComponentKind kind);

struct PluginRecord {
  enum class Status { Loaded, Refused, Shadowed };
  std::filesystem::path path;
  Status status = Status::Refused;
  std::string name, version, summary;
  std::string reason;                   // why refused or shadowed
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
  // Registers libkef's own components (builtin "kef core": the `file` data source and the `lite`
  // model loader) unless they are registered already; true when they are registered on return.
  // Loading a saved model calls it, so embedding programs need not (kef::register_core_components is
  // the same call).
  bool add_core_components();

  // Every interface name that has at least one component, sorted.
  std::vector<std::string> interfaces() const;
  std::vector<ComponentInfo> components(std::string_view interface) const;
  const ComponentInfo* find(std::string_view interface, std::string_view type) const;
  // The ComponentInfo for cfg's type; ConfigError listing the valid types otherwise.
  const ComponentInfo& info_for(std::string_view interface, const Config& cfg) const;

  // Validates cfg against the type's keys (ConfigError on any problem; `host_keys` are keys the caller
  // handles, allowed besides the component's own), then builds the component. The object is a T* of
  // the interface's type, as void; make<T> is the typed form.
  std::shared_ptr<void> make_any(std::string_view interface, Config cfg, const BuildContext& ctx,
                                 const std::vector<std::string>& host_keys = {});
  template <class T>
  std::shared_ptr<T> make(Config cfg, const BuildContext& ctx,
                          const std::vector<std::string>& host_keys = {}) {
    return std::static_pointer_cast<T>(make_any(T::kInterface, std::move(cfg), ctx, host_keys));
  }
  // Builds the parts `info` declares from the tables of `owner` (a [[model]] table: [model.kernel],
  // [model.sampler], ...); a missing required part is a ConfigError naming the table. Tables of
  // `owner` that are not parts are the caller's to check (see part_names).
  Parts make_parts(const ComponentInfo& info, const Config& owner, const BuildContext& ctx);

  ModelPtr load_model(const ModelReader& reader);

  // The forms of the host's own interfaces, kept for source compatibility with kef 0.2.
  std::vector<ComponentInfo> components(ComponentKind kind) const { return components(to_string(kind)); }
  const ComponentInfo* find(ComponentKind kind, std::string_view type) const {
    return find(to_string(kind), type);
  }
  const ComponentInfo& info_for(ComponentKind kind, const Config& cfg) const {
    return info_for(to_string(kind), cfg);
  }
  KernelPtr make_kernel(Config cfg, const BuildContext& ctx) { return make<Kernel>(std::move(cfg), ctx); }
  FeatureMapPtr make_feature_map(Config cfg, const BuildContext& ctx) {
    return make<FeatureMap>(std::move(cfg), ctx);
  }
  BaseMeasurePtr make_base_measure(Config cfg, const BuildContext& ctx) {
    return make<BaseMeasure>(std::move(cfg), ctx);
  }
  EstimatorPtr make_estimator(Config cfg, const EstimatorParts& parts, const BuildContext& ctx);
  EvaluatorPtr make_evaluator(Config cfg, const BuildContext& ctx,
                              const std::vector<std::string>& host_keys = {}) {
    return make<Evaluator>(std::move(cfg), ctx, host_keys);
  }
  DataSourcePtr make_data_source(Config cfg, const BuildContext& ctx,
                                 const std::vector<std::string>& host_keys = {}) {
    return make<DataSource>(std::move(cfg), ctx, host_keys);
  }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Plugin directories in search order: config paths, KEF_PLUGIN_PATH, then the directory installed
// next to libkef (lib/kef/plugins, which is also where the build tree puts them).
std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::string>& config_paths);
std::filesystem::path installed_plugin_dir();

namespace detail {
// libkef's upper layers (run) install the core components' registration here when the library loads:
// the host layer cannot name them itself (docs/design.md, "Layers").
void install_core_components(const char* origin, RegisterFunction* fn);
}  // namespace detail

// Version of the library, "major.minor.patch".
const char* version();
constexpr int kVersionMajor = 0;
constexpr int kVersionMinor = 3;
constexpr int kVersionPatch = 0;

}  // namespace kef
