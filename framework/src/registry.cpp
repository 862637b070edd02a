// The plugin host. Three rules shape this file:
//  1. A plugin's descriptor is read from the file and checked before the library is loaded, so an
//     incompatible plugin never runs code (not even static initialisers) in this process.
//  2. Code and data of a plugin (vtables, std::function managers, shared_ptr control blocks) must not
//     outlive its library: every object a plugin makes is handed out through a host-made shared_ptr
//     whose deleter owns the library handle.
//  3. Exceptions leaving plugin code become host-owned exceptions before they travel further.
#include "kef/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <boost/dll/shared_library.hpp>
#include <boost/dll/shared_library_load_mode.hpp>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "elf_descriptor.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/plugin_abi.h"
#include "plugin_compatibility.hpp"

namespace fs = std::filesystem;

namespace kef {

const char* to_string(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::Kernel:
      return "kernel";
    case ComponentKind::FeatureMap:
      return "feature_map";
    case ComponentKind::BaseMeasure:
      return "base_measure";
    case ComponentKind::Estimator:
      return "estimator";
    case ComponentKind::Evaluator:
      return "evaluator";
    case ComponentKind::DataSource:
      return "data_source";
    case ComponentKind::Model:
      return "model";
  }
  return "component";
}

namespace {

constexpr std::size_t kKindCount = 7;

const char* noun(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::Kernel:
      return "kernel";
    case ComponentKind::FeatureMap:
      return "feature map";
    case ComponentKind::BaseMeasure:
      return "base measure";
    case ComponentKind::Estimator:
      return "estimator";
    case ComponentKind::Evaluator:
      return "evaluator";
    case ComponentKind::DataSource:
      return "data source";
    case ComponentKind::Model:
      return "model";
  }
  return "component";
}

std::string qualified(ComponentKind kind, const std::string& type) {
  return std::string(to_string(kind)) + "/" + type;
}

// ---- where components come from ----

using Library = boost::dll::shared_library;
using LibraryPtr = std::shared_ptr<const Library>;

struct Origin {
  std::string name;
  fs::path path;       // empty for builtins
  LibraryPtr library;  // null for builtins

  bool is_plugin() const { return library != nullptr; }
  std::string label() const {
    return is_plugin() ? "plugin " + name + " (" + path.string() + ")" : "builtin " + name;
  }
};
using OriginPtr = std::shared_ptr<const Origin>;

// One registered component. `origin` is declared first so that it is destroyed last: the
// factories are plugin code (std::function managers) and need the library while they die.
struct Entry {
  OriginPtr origin;
  ComponentKind kind = ComponentKind::Kernel;
  ComponentInfo info;
  KernelFactory kernel;
  FeatureMapFactory feature_map;
  BaseMeasureFactory base_measure;
  EstimatorFactory estimator;
  EvaluatorFactory evaluator;
  DataSourceFactory data_source;
  ModelLoader model_loader;
};

// Runs plugin code and turns what escapes it into host-owned exceptions. kef::Errors keep their
// class and message but are re-created here: the exception object of a throw inside a plugin uses
// the plugin's copies of the (inline) vtable and destructor, which must not outlive the library.
template <class F>
auto guarded(const Origin& origin, const std::string& context, F&& f) -> decltype(f()) {
  if (!origin.is_plugin()) return f();  // the program's own code: its exceptions are its own
  try {
    return f();
  } catch (const PluginError& e) {
    throw PluginError(e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(e.what());
  } catch (const DataError& e) {
    throw DataError(e.what());
  } catch (const ModelFileError& e) {
    throw ModelFileError(e.what());
  } catch (const NumericalError& e) {
    throw NumericalError(e.what());
  } catch (const Error& e) {
    throw Error(e.what());
  } catch (const std::exception& e) {
    throw PluginError(origin.label() + ": " + context + ": " + e.what());
  } catch (...) {
    throw PluginError(origin.label() + ": " + context + ": an exception that is not a std::exception");
  }
}

// A shared_ptr whose control block is host code and whose deleter keeps the library loaded until
// the plugin's destructor has run.
template <class T>
std::shared_ptr<T> hold(std::unique_ptr<T> object, const LibraryPtr& library) {
  if (!library) return std::shared_ptr<T>(std::move(object));
  return std::shared_ptr<T>(object.release(), [library](T* p) { delete p; });
}

// A model made by plugin code may come with the plugin's own control block (make_shared): the
// wrapper's control block is ours, and releases the plugin's before letting go of the library.
ModelPtr hold_model(ModelPtr model, const LibraryPtr& library) {
  if (!model || !library) return model;
  const Model* raw = model.get();
  return ModelPtr(raw, [model = std::move(model), library](const Model*) mutable { model.reset(); });
}

class PluginEstimator final : public Estimator {
 public:
  PluginEstimator(EstimatorPtr inner, OriginPtr origin, std::string name)
      : inner_(std::move(inner)), origin_(std::move(origin)), name_(std::move(name)) {}
  ModelPtr fit(const FitInput& input) override {
    ModelPtr model = guarded(*origin_, name_ + " failed in fit", [&] { return inner_->fit(input); });
    if (!model) throw PluginError(origin_->label() + ": " + name_ + ": fit returned no model");
    return hold_model(std::move(model), origin_->library);
  }
  void check(const DataShape& data) const override {
    guarded(*origin_, name_ + " failed in check", [&] { inner_->check(data); });
  }
  std::optional<ModelFacets> facets() const override {
    return guarded(*origin_, name_ + " failed in facets", [&] { return inner_->facets(); });
  }

 private:
  EstimatorPtr inner_;
  OriginPtr origin_;
  std::string name_;
};

class PluginEvaluator final : public Evaluator {
 public:
  PluginEvaluator(EvaluatorPtr inner, OriginPtr origin, std::string name)
      : inner_(std::move(inner)), origin_(std::move(origin)), name_(std::move(name)) {}
  EvaluationResult evaluate(const EvalInput& input) override {
    return guarded(*origin_, name_ + " failed in evaluate", [&] { return inner_->evaluate(input); });
  }
  void check(const DataShape& data) const override {
    guarded(*origin_, name_ + " failed in check", [&] { inner_->check(data); });
  }
  void check_model(const DataShape& data, const PlannedModel& model) const override {
    guarded(*origin_, name_ + " failed in check_model", [&] { inner_->check_model(data, model); });
  }

 private:
  EvaluatorPtr inner_;
  OriginPtr origin_;
  std::string name_;
};

class PluginDataSource final : public DataSource {
 public:
  PluginDataSource(DataSourcePtr inner, OriginPtr origin, std::string name)
      : inner_(std::move(inner)), origin_(std::move(origin)), name_(std::move(name)) {}
  SourceData load(RandomStream& rng) override {
    SourceData data = guarded(*origin_, name_ + " failed in load", [&] { return inner_->load(rng); });
    data.truth = hold_model(std::move(data.truth), origin_->library);
    return data;
  }

 private:
  DataSourcePtr inner_;
  OriginPtr origin_;
  std::string name_;
};

// What a registration function writes into: nothing reaches the registry until the whole
// registration has succeeded, so a plugin is either fully registered or not at all.
class StagingRegistrar final : public PluginRegistrar {
 public:
  explicit StagingRegistrar(OriginPtr origin) : origin_(std::move(origin)) {}

  void add_kernel(ComponentInfo info, KernelFactory f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::Kernel, std::move(info), ok).kernel = std::move(f);
  }
  void add_feature_map(ComponentInfo info, FeatureMapFactory f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::FeatureMap, std::move(info), ok).feature_map = std::move(f);
  }
  void add_base_measure(ComponentInfo info, BaseMeasureFactory f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::BaseMeasure, std::move(info), ok).base_measure = std::move(f);
  }
  void add_estimator(ComponentInfo info, EstimatorFactory f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::Estimator, std::move(info), ok).estimator = std::move(f);
  }
  void add_evaluator(ComponentInfo info, EvaluatorFactory f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::Evaluator, std::move(info), ok).evaluator = std::move(f);
  }
  void add_data_source(ComponentInfo info, DataSourceFactory f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::DataSource, std::move(info), ok).data_source = std::move(f);
  }
  void add_model_loader(ComponentInfo info, ModelLoader f) override {
    const bool ok = static_cast<bool>(f);
    stage(ComponentKind::Model, std::move(info), ok).model_loader = std::move(f);
  }

  std::vector<Entry>& entries() { return entries_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  Entry& stage(ComponentKind kind, ComponentInfo info, bool has_factory) {
    const std::string name = qualified(kind, info.type);
    if (info.type.empty())
      problems_.push_back("registers a " + std::string(noun(kind)) + " with an empty type name");
    if (!has_factory) problems_.push_back("registers " + name + " with an empty factory");
    for (const Entry& e : entries_)
      if (e.kind == kind && e.info.type == info.type) problems_.push_back("registers " + name + " twice");
    for (std::size_t i = 0; i < info.keys.size(); ++i) {
      if (info.keys[i].name == "type") problems_.push_back(name + " declares the reserved key `type`");
      for (std::size_t j = 0; j < i; ++j)
        if (info.keys[j].name == info.keys[i].name)
          problems_.push_back(name + " declares the key `" + info.keys[i].name + "` twice");
    }
    info.plugin = origin_->name;
    Entry& e = entries_.emplace_back();
    e.origin = origin_;
    e.kind = kind;
    e.info = std::move(info);
    return e;
  }

  OriginPtr origin_;
  std::vector<Entry> entries_;
  std::vector<std::string> problems_;
};

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

// A function with internal linkage: its address is inside libkef even in a program that also
// references libkef's exported functions through canonical PLT entries.
void locate_libkef() {}

}  // namespace

struct Registry::Impl {
  std::array<std::map<std::string, Entry, std::less<>>, kKindCount> entries;
  std::vector<PluginRecord> records;
  // Declared last, destroyed first; the entries still hold their origins until they go.
  std::vector<OriginPtr> loaded;

  std::map<std::string, Entry, std::less<>>& of(ComponentKind kind) {
    return entries[static_cast<std::size_t>(kind)];
  }
  const std::map<std::string, Entry, std::less<>>& of(ComponentKind kind) const {
    return entries[static_cast<std::size_t>(kind)];
  }

  const Entry* find(ComponentKind kind, std::string_view type) const {
    const auto& map = of(kind);
    auto it = map.find(type);
    return it == map.end() ? nullptr : &it->second;
  }

  std::string valid_types(ComponentKind kind) const {
    std::vector<std::string> names;
    for (const auto& [type, entry] : of(kind)) names.push_back(type);
    std::string out = names.empty() ? "(none)" : join(names, ", ");
    const auto refused = std::count_if(records.begin(), records.end(), [](const PluginRecord& r) {
      return r.status == PluginRecord::Status::Refused;
    });
    if (refused == 1) out += " (1 plugin was refused; run `kef plugins`)";
    if (refused > 1) out += " (" + std::to_string(refused) + " plugins were refused; run `kef plugins`)";
    return out;
  }

  const Entry& entry_for(ComponentKind kind, const Config& cfg) const {
    const std::optional<std::string> type = cfg.type();
    if (!type) cfg.fail("type", "missing `type`; valid types: " + valid_types(kind));
    const Entry* entry = find(kind, *type);
    if (!entry) {
      cfg.fail("type", "unknown " + std::string(noun(kind)) + " type `" + *type +
                           "`; valid types: " + valid_types(kind));
    }
    return *entry;
  }

  // Moves the staged entries into the registry, or explains why not (and changes nothing).
  std::string commit(StagingRegistrar& staging, std::vector<std::string>& components) {
    if (!staging.problems().empty()) return join(staging.problems(), "; ");
    for (const Entry& e : staging.entries()) {
      if (const Entry* existing = find(e.kind, e.info.type)) {
        return "registers " + qualified(e.kind, e.info.type) + ", which " + existing->origin->label() +
               " already registered";
      }
    }
    for (Entry& e : staging.entries()) {
      components.push_back(qualified(e.kind, e.info.type));
      std::string type = e.info.type;
      of(e.kind).emplace(std::move(type), std::move(e));
    }
    staging.entries().clear();
    return {};
  }

  const PluginRecord& load_one(const fs::path& requested);
};

const PluginRecord& Registry::Impl::load_one(const fs::path& requested) {
  std::error_code ec;
  fs::path file = fs::absolute(requested, ec);
  if (ec) file = requested;
  file = file.lexically_normal();

  PluginRecord record;
  record.path = file;
  auto finish = [&](PluginRecord::Status status, std::string reason) -> const PluginRecord& {
    record.status = status;
    record.reason = std::move(reason);
    records.push_back(std::move(record));
    return records.back();
  };
  auto refuse = [&](std::string reason) -> const PluginRecord& {
    return finish(PluginRecord::Status::Refused, std::move(reason));
  };

  if (!fs::exists(file, ec)) return refuse("no such file");
  if (!fs::is_regular_file(file, ec)) return refuse("not a regular file");

  const detail::DescriptorRead read = detail::read_plugin_descriptor(file);
  if (!read.descriptor) return refuse(read.error);
  const kef_plugin_descriptor_t& d = *read.descriptor;
  const kef_plugin_descriptor_t& host = detail::host_descriptor();
  if (d.abi_version != host.abi_version) {
    return refuse(detail::mismatch_text("plugin ABI version mismatch", std::to_string(host.abi_version),
                                        std::to_string(d.abi_version),
                                        "rebuild the plugin with this kef's SDK"));
  }
  if (d.struct_size < host.struct_size) {
    return refuse(detail::mismatch_text(
        "plugin descriptor too small", "at least " + std::to_string(host.struct_size) + " bytes",
        std::to_string(d.struct_size) + " bytes", "rebuild the plugin with this kef's SDK"));
  }
  record.name = detail::bounded(d.name, sizeof d.name);
  record.version = detail::bounded(d.version, sizeof d.version);
  record.summary = detail::bounded(d.summary, sizeof d.summary);
  if (record.name.empty()) return refuse("the plugin descriptor has an empty name");

  // The first plugin of a name in search order wins; later copies (often stale builds) are not
  // even checked further, let alone loaded.
  for (const PluginRecord& r : records) {
    if (r.status == PluginRecord::Status::Loaded && !r.path.empty() && r.name == record.name) {
      return finish(PluginRecord::Status::Shadowed, "shadowed by plugin " + r.name + " from " +
                                                        r.path.string() + " (earlier in the search path)");
    }
  }
  if (std::string why = detail::incompatibility(d); !why.empty()) return refuse(why);

  LibraryPtr library;
  try {
    library = std::make_shared<const Library>(
        file, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_lazy);
  } catch (const std::exception& e) {
    return refuse(std::string("cannot load the library: ") + e.what());
  }
  if (!library->has(KEF_PLUGIN_REGISTER_SYMBOL)) {
    return refuse("no registration function (symbol " KEF_PLUGIN_REGISTER_SYMBOL
                  " not exported; was it declared with KEF_PLUGIN?)");
  }
  auto origin = std::make_shared<const Origin>(Origin{record.name, file, library});

  std::string problem;
  {
    StagingRegistrar staging(origin);
    try {
      auto& register_fn = library->get_alias<RegisterFunction>(KEF_PLUGIN_REGISTER_SYMBOL);
      register_fn(staging);
    } catch (const std::exception& e) {
      problem = std::string("registration threw: ") + e.what();
    } catch (...) {
      problem = "registration threw an exception that is not a std::exception";
    }
    if (problem.empty()) problem = commit(staging, record.components);
  }  // a refused plugin's staged factories die here, while its library is still loaded
  if (!problem.empty()) {
    record.components.clear();
    return refuse(problem);
  }
  loaded.push_back(std::move(origin));
  return finish(PluginRecord::Status::Loaded, {});
}

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

void Registry::load_plugins(const std::vector<fs::path>& directories) {
  for (const fs::path& dir : directories) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code type_ec;
      if (name.size() > 7 && name.rfind("kef_", 0) == 0 && name.ends_with(".so") &&
          it->is_regular_file(type_ec)) {
        files.push_back(it->path());
      }
    }
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
    for (const fs::path& file : files) impl_->load_one(file);
  }
}

void Registry::load_plugin(const fs::path& file) {
  const PluginRecord& record = impl_->load_one(file);
  if (record.status == PluginRecord::Status::Refused) {
    const std::string who = record.name.empty() ? "plugin" : "plugin " + record.name;
    throw PluginError(record.path.string() + ": " + who + " refused: " + record.reason);
  }
}

const std::vector<PluginRecord>& Registry::plugins() const { return impl_->records; }

void Registry::register_builtin(const std::string& origin_name, const std::function<RegisterFunction>& fn) {
  auto origin = std::make_shared<const Origin>(Origin{origin_name, {}, nullptr});
  std::vector<std::string> components;
  StagingRegistrar staging(origin);
  fn(staging);
  if (std::string problem = impl_->commit(staging, components); !problem.empty())
    throw PluginError("builtin components `" + origin_name + "` refused: " + problem);
  for (PluginRecord& r : impl_->records) {
    if (r.path.empty() && r.name == origin_name) {
      r.components.insert(r.components.end(), components.begin(), components.end());
      return;
    }
  }
  PluginRecord record;
  record.status = PluginRecord::Status::Loaded;
  record.name = origin_name;
  record.version = kef::version();
  record.summary = "built into the program";
  record.components = std::move(components);
  impl_->records.push_back(std::move(record));
}

std::vector<ComponentInfo> Registry::components(ComponentKind kind) const {
  std::vector<ComponentInfo> out;
  for (const auto& [type, entry] : impl_->of(kind)) out.push_back(entry.info);
  return out;
}

const ComponentInfo* Registry::find(ComponentKind kind, std::string_view type) const {
  const Entry* entry = impl_->find(kind, type);
  return entry ? &entry->info : nullptr;
}

const ComponentInfo& Registry::info_for(ComponentKind kind, const Config& cfg) const {
  return impl_->entry_for(kind, cfg).info;
}

namespace {

BuildContext with_registry(const BuildContext& ctx, Registry* registry) {
  BuildContext out = ctx;
  if (!out.registry) out.registry = registry;
  return out;
}

// Calls the factory and checks it made something; context names the component and its table.
template <class T, class Call>
std::unique_ptr<T> build(const Entry& entry, const Config& cfg, Call&& call) {
  const std::string name = qualified(entry.kind, entry.info.type);
  std::unique_ptr<T> object =
      guarded(*entry.origin, name + " failed while being built from " + cfg.where(), call);
  if (!object) throw PluginError(entry.origin->label() + ": " + name + ": the factory returned nothing");
  return object;
}

}  // namespace

KernelPtr Registry::make_kernel(Config cfg, const BuildContext& ctx) {
  const Entry& e = impl_->entry_for(ComponentKind::Kernel, cfg);
  cfg.validate(e.info.keys);
  const BuildContext local = with_registry(ctx, this);
  auto object = build<Kernel>(e, cfg, [&] { return e.kernel(cfg, local); });
  object->attach_config(e.info.type, cfg);
  return hold(std::move(object), e.origin->library);
}

FeatureMapPtr Registry::make_feature_map(Config cfg, const BuildContext& ctx) {
  const Entry& e = impl_->entry_for(ComponentKind::FeatureMap, cfg);
  cfg.validate(e.info.keys);
  const BuildContext local = with_registry(ctx, this);
  auto object = build<FeatureMap>(e, cfg, [&] { return e.feature_map(cfg, local); });
  object->attach_config(e.info.type, cfg);
  return hold(std::move(object), e.origin->library);
}

BaseMeasurePtr Registry::make_base_measure(Config cfg, const BuildContext& ctx) {
  const Entry& e = impl_->entry_for(ComponentKind::BaseMeasure, cfg);
  cfg.validate(e.info.keys);
  const BuildContext local = with_registry(ctx, this);
  auto object = build<BaseMeasure>(e, cfg, [&] { return e.base_measure(cfg, local); });
  object->attach_config(e.info.type, cfg);
  return hold(std::move(object), e.origin->library);
}

EstimatorPtr Registry::make_estimator(Config cfg, const EstimatorParts& parts, const BuildContext& ctx) {
  const Entry& e = impl_->entry_for(ComponentKind::Estimator, cfg);
  cfg.validate(e.info.keys);
  const BuildContext local = with_registry(ctx, this);
  EstimatorParts local_parts = parts;
  if (!local_parts.registry) local_parts.registry = this;
  auto object = build<Estimator>(e, cfg, [&] { return e.estimator(cfg, local_parts, local); });
  EstimatorPtr inner = hold(std::move(object), e.origin->library);
  if (!e.origin->is_plugin()) return inner;
  return std::make_shared<PluginEstimator>(std::move(inner), e.origin, qualified(e.kind, e.info.type));
}

EvaluatorPtr Registry::make_evaluator(Config cfg, const BuildContext& ctx,
                                      const std::vector<std::string>& host_keys) {
  const Entry& e = impl_->entry_for(ComponentKind::Evaluator, cfg);
  cfg.validate(e.info.keys, host_keys);
  const BuildContext local = with_registry(ctx, this);
  auto object = build<Evaluator>(e, cfg, [&] { return e.evaluator(cfg, local); });
  EvaluatorPtr inner = hold(std::move(object), e.origin->library);
  if (!e.origin->is_plugin()) return inner;
  return std::make_shared<PluginEvaluator>(std::move(inner), e.origin, qualified(e.kind, e.info.type));
}

DataSourcePtr Registry::make_data_source(Config cfg, const BuildContext& ctx,
                                         const std::vector<std::string>& host_keys) {
  const Entry& e = impl_->entry_for(ComponentKind::DataSource, cfg);
  cfg.validate(e.info.keys, host_keys);
  const BuildContext local = with_registry(ctx, this);
  auto object = build<DataSource>(e, cfg, [&] { return e.data_source(cfg, local); });
  DataSourcePtr inner = hold(std::move(object), e.origin->library);
  if (!e.origin->is_plugin()) return inner;
  return std::make_shared<PluginDataSource>(std::move(inner), e.origin, qualified(e.kind, e.info.type));
}

ModelPtr Registry::load_model(const ModelReader& reader) {
  const std::string type = reader.model_type();
  const Entry* e = impl_->find(ComponentKind::Model, type);
  if (!e) {
    reader.fail("unknown model type `" + type +
                "`; valid types: " + impl_->valid_types(ComponentKind::Model));
  }
  const std::string name = qualified(e->kind, e->info.type);
  ModelPtr model = guarded(*e->origin, name + " failed while loading " + reader.dir().string(),
                           [&] { return e->model_loader(reader, *this); });
  if (!model) throw PluginError(e->origin->label() + ": " + name + ": the loader returned no model");
  return hold_model(std::move(model), e->origin->library);
}

std::vector<fs::path> plugin_search_path(const std::vector<std::string>& config_paths) {
  std::vector<fs::path> candidates(config_paths.begin(), config_paths.end());
  if (const char* env = std::getenv("KEF_PLUGIN_PATH")) {
    std::stringstream entries(env);
    std::string entry;
    // Empty entries would mean the working directory, which is never searched implicitly.
    while (std::getline(entries, entry, ':'))
      if (!entry.empty()) candidates.emplace_back(entry);
  }
  if (fs::path installed = installed_plugin_dir(); !installed.empty()) candidates.push_back(installed);

  // The same directory twice would only report every plugin in it as shadowed by itself.
  std::vector<fs::path> out, seen;
  for (const fs::path& c : candidates) {
    if (c.empty()) continue;
    std::error_code ec;
    fs::path key = fs::weakly_canonical(c, ec);
    if (ec) key = c.lexically_normal();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(c);
  }
  return out;
}

fs::path installed_plugin_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&locate_libkef), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  fs::path lib_dir = fs::path(info.dli_fname).parent_path();
  fs::path canonical = fs::weakly_canonical(fs::absolute(lib_dir, ec), ec);
  if (!ec) lib_dir = canonical;
  return lib_dir / KEF_PLUGIN_RELATIVE_DIR;
}

// The constants are what plugins compile into their descriptors; the build's project(VERSION) names
// the library file and the CMake package. Both must move together.
static_assert(kVersionMajor == KEF_PROJECT_VERSION_MAJOR && kVersionMinor == KEF_PROJECT_VERSION_MINOR &&
                  kVersionPatch == KEF_PROJECT_VERSION_PATCH,
              "kef/registry.hpp's kVersion* disagree with project(kef VERSION ...) in CMakeLists.txt");

const char* version() {
  static const std::string text = std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor) + "." +
                                  std::to_string(kVersionPatch);
  return text.c_str();
}

}  // namespace kef
