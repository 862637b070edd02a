// The plugin host. Three rules shape this file:
//  1. A plugin's descriptor is read from the file and checked before the library is loaded, so an
//     incompatible plugin never runs code (not even static initialisers) in this process.
//  2. Code and data of a plugin (vtables, std::function managers, shared_ptr control blocks) must not
//     outlive its library: every object a plugin makes is handed out through a host-made shared_ptr
//     whose deleter owns the library handle.
//  3. Exceptions leaving plugin code become host-owned exceptions before they travel further.
#include "kef/registry.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <array>
#include <boost/dll/shared_library.hpp>
#include <boost/dll/shared_library_load_mode.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "elf_descriptor.hpp"
#include "kef/base_measure.hpp"
#include "kef/error.hpp"
#include "kef/feature_map.hpp"
#include "kef/kernel.hpp"
#include "kef/model_archive.hpp"
#include "kef/plugin_abi.h"
#include "kef/radial_profile.hpp"
#include "plugin_compatibility.hpp"
#include "text.hpp"

namespace fs = std::filesystem;

namespace kef {

const char* to_string(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::Kernel:
      return Kernel::kInterface;
    case ComponentKind::FeatureMap:
      return FeatureMap::kInterface;
    case ComponentKind::BaseMeasure:
      return BaseMeasure::kInterface;
    case ComponentKind::Estimator:
      return Estimator::kInterface;
    case ComponentKind::Evaluator:
      return Evaluator::kInterface;
    case ComponentKind::DataSource:
      return DataSource::kInterface;
    case ComponentKind::Model:
      return Model::kInterface;
  }
  return "component";
}

namespace {

// "feature_map" reads as "feature map" in messages.
std::string noun(std::string_view interface) {
  std::string out(interface);
  std::replace(out.begin(), out.end(), '_', ' ');
  return out;
}

std::string qualified(std::string_view interface, const std::string& type) {
  return std::string(interface) + "/" + type;
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

// One registered component. `origin` is declared first so that it is destroyed last: the factory is
// plugin code (a std::function manager) and needs the library while it dies.
struct Entry {
  OriginPtr origin;
  std::string interface;
  ComponentInfo info;
  ErasedFactory factory;
};

// Runs plugin code and turns what escapes it into host-owned exceptions. kef::Errors keep their
// class and message but are re-created here: the exception object of a throw inside a plugin uses
// the plugin's copies of the (inline) vtable and destructor, which must not outlive the library.
// `context` says what was running, for the message: a string, or a callable returning one (built only
// when something escaped, so the guard costs nothing on the hot paths of model calls).
template <class Context, class F>
auto guarded(const Origin& origin, Context&& context, F&& f) -> decltype(f()) {
  if (!origin.is_plugin()) return f();  // the program's own code: its exceptions are its own
  auto where = [&]() -> std::string {
    if constexpr (std::is_invocable_v<Context>) {
      return origin.label() + ": " + context();
    } else {
      return origin.label() + ": " + std::string(context);
    }
  };
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
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(e.what());
  } catch (const Error& e) {
    throw Error(e.what());
  } catch (const std::bad_alloc&) {
    throw out_of_memory_error(where());
  } catch (const std::exception& e) {
    throw PluginError(where() + ": " + e.what());
  } catch (...) {
    throw PluginError(where() + ": an exception that is not a std::exception");
  }
}

// A plugin that crashes while it loads (its static initialisers, run by dlopen, or its registration
// function) would kill the program without a word about which library did it. While one loads, the
// fatal signals print its name and file first, then end the program as the signal would have (the
// previous handlers are restored and the signal raised again). Plugins stay trusted code: this names
// the culprit, it does not survive it. The message is written into a fixed buffer beforehand, since a
// signal handler may only call async-signal-safe functions (write, sigaction, raise).
class LoadCrashGuard {
 public:
  LoadCrashGuard(const std::string& name, const fs::path& file) {
    lock_ = std::unique_lock(mutex());
    const std::string text = "kef: crashed while loading plugin " + name + " (" + file.string() +
                             "); plugins run as trusted code: remove or rebuild it\n";
    length_ = std::min(text.size(), sizeof message_);
    std::memcpy(message_, text.data(), length_);
    struct sigaction action {};
    action.sa_handler = &LoadCrashGuard::handle;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~LoadCrashGuard() {
    for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
    length_ = 0;
  }
  LoadCrashGuard(const LoadCrashGuard&) = delete;
  LoadCrashGuard& operator=(const LoadCrashGuard&) = delete;

 private:
  static constexpr std::array<int, 5> kSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static void handle(int signal) {
    if (length_ > 0) {
      const ssize_t written = ::write(2, message_, length_);
      (void)written;
    }
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      if (kSignals[i] == signal) sigaction(signal, &previous_[i], nullptr);
    raise(signal);
  }
  // One plugin loads at a time (the lock), so one buffer serves.
  static inline char message_[1024];
  static inline std::size_t length_ = 0;
  static inline std::array<struct sigaction, kSignals.size()> previous_{};
  std::unique_lock<std::mutex> lock_;
};

// An object made by plugin code may come with the plugin's own control block (the factory's
// shared_ptr): the result's control block is ours, and releases the plugin's before letting go of
// the library.
std::shared_ptr<void> hold(std::shared_ptr<void> object, const LibraryPtr& library) {
  if (!object || !library) return object;
  void* raw = object.get();
  return std::shared_ptr<void>(raw, [object = std::move(object), library](void*) mutable { object.reset(); });
}

class PluginEstimator final : public Estimator {
 public:
  PluginEstimator(EstimatorPtr inner, OriginPtr origin, std::string name)
      : inner_(std::move(inner)), origin_(std::move(origin)), name_(std::move(name)) {}
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override {
    guarded(*origin_, name_ + " failed in check", [&] { inner_->check(data); });
  }
  std::optional<FacetSet> facets() const override {
    return guarded(*origin_, name_ + " failed in facets", [&] { return inner_->facets(); });
  }

 protected:
  // The plugin's clone, guarded like its other calls and holding the same library.
  Estimator* clone_raw() const override {
    EstimatorPtr copy =
        guarded(*origin_, name_ + " failed in clone", [&] { return EstimatorPtr(inner_->clone()); });
    return new PluginEstimator(std::static_pointer_cast<Estimator>(hold(std::move(copy), origin_->library)),
                               origin_, name_);
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

 protected:
  Evaluator* clone_raw() const override {
    EvaluatorPtr copy =
        guarded(*origin_, name_ + " failed in clone", [&] { return EvaluatorPtr(inner_->clone()); });
    return new PluginEvaluator(std::static_pointer_cast<Evaluator>(hold(std::move(copy), origin_->library)),
                               origin_, name_);
  }

 private:
  EvaluatorPtr inner_;
  OriginPtr origin_;
  std::string name_;
};

// Every call into a plugin's model goes through the guard, so an exception thrown by the model's code
// (during scoring, sampling, saving, ...) reaches the caller as a host-owned exception.
class PluginModel final : public Model {
 public:
  PluginModel(ModelPtr inner, OriginPtr origin) : origin_(std::move(origin)), inner_(std::move(inner)) {}

  Index dim() const override { return inner_->dim(); }
  std::string type_name() const override { return inner_->type_name(); }
  FacetSet facets() const override {
    return call("facets", [&] { return inner_->facets(); });
  }
  Vector log_unnormalized(const Matrix& X) const override {
    return call("log_unnormalized", [&] { return inner_->log_unnormalized(X); });
  }
  Matrix score(const Matrix& X) const override {
    return call("score", [&] { return inner_->score(X); });
  }
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override {
    call("score_and_laplacian", [&] { inner_->score_and_laplacian(X, score, laplacian); });
  }
  bool has_hessian() const override { return inner_->has_hessian(); }
  Matrix hessian(const Vector& x) const override {
    return call("hessian", [&] { return inner_->hessian(x); });
  }
  std::optional<double> log_normalizer() const override {
    return call("log_normalizer", [&] { return inner_->log_normalizer(); });
  }
  const BaseMeasure* base_measure() const override { return inner_->base_measure(); }
  std::optional<double> log_ratio_lower_bound() const override {
    return call("log_ratio_lower_bound", [&] { return inner_->log_ratio_lower_bound(); });
  }
  Vector log_ratio_to_base(const Matrix& X) const override {
    return call("log_ratio_to_base", [&] { return inner_->log_ratio_to_base(X); });
  }
  bool bounded_support() const override { return inner_->bounded_support(); }
  std::vector<bool> in_support(const Matrix& X) const override {
    return call("in_support", [&] { return inner_->in_support(X); });
  }
  bool can_sample() const override { return inner_->can_sample(); }
  Matrix sample(Index n, RandomStream& rng) const override {
    return call("sample", [&] { return inner_->sample(n, rng); });
  }
  const ConditionalModel* conditional() const override { return inner_->conditional(); }
  std::string describe() const override {
    return call("describe", [&] { return inner_->describe(); });
  }
  bool can_save() const override { return inner_->can_save(); }
  void save(ModelWriter& writer) const override {
    call("save", [&] { inner_->save(writer); });
  }

 private:
  template <class F>
  auto call(const char* what, F&& f) const -> decltype(f()) {
    return guarded(
        *origin_, [&] { return "model " + inner_->type_name() + " failed in " + what; }, std::forward<F>(f));
  }
  // The origin (and so the library) is declared first so that it is destroyed last: inner_ may be a
  // pointer made by plugin code whose control block and destructor are that library's code.
  OriginPtr origin_;
  ModelPtr inner_;
};

ModelPtr guard_model(ModelPtr model, const OriginPtr& origin) {
  if (!model || !origin->is_plugin()) return model;
  return std::make_shared<const PluginModel>(std::move(model), origin);
}

ModelPtr PluginEstimator::fit(const FitInput& input) {
  ModelPtr model = guarded(*origin_, name_ + " failed in fit", [&] { return inner_->fit(input); });
  if (!model) throw PluginError(origin_->label() + ": " + name_ + ": fit returned no model");
  return guard_model(std::move(model), origin_);
}

class PluginDataSource final : public DataSource {
 public:
  PluginDataSource(DataSourcePtr inner, OriginPtr origin, std::string name)
      : inner_(std::move(inner)), origin_(std::move(origin)), name_(std::move(name)) {}
  SourceData load(RandomStream& rng) override {
    SourceData data = guarded(*origin_, name_ + " failed in load", [&] { return inner_->load(rng); });
    data.truth = guard_model(std::move(data.truth), origin_);
    return data;
  }

 protected:
  DataSource* clone_raw() const override {
    DataSourcePtr copy =
        guarded(*origin_, name_ + " failed in clone", [&] { return DataSourcePtr(inner_->clone()); });
    return new PluginDataSource(std::static_pointer_cast<DataSource>(hold(std::move(copy), origin_->library)),
                                origin_, name_);
  }

 private:
  DataSourcePtr inner_;
  OriginPtr origin_;
  std::string name_;
};

// Kernels, feature maps and base measures made by plugins are guarded like models: an exception that is
// not a kef::Error becomes a PluginError naming the component's own plugin whichever code called it (a
// model of libkef, another plugin's estimator or evaluator, a command), so the same exception is the same
// error and exit status in every command. The guard is one try block per call on whole matrices. The
// wrapper carries the component's type and config (saved models record them) and forwards everything
// else, parameters included, so results are unchanged bit for bit.
template <class Interface>
class GuardedComponent : public Interface {
 public:
  GuardedComponent(std::shared_ptr<Interface> inner, OriginPtr origin, std::string name)
      : origin_(std::move(origin)), inner_(std::move(inner)), name_(std::move(name)) {
    this->attach_config(inner_->type_name(), inner_->config());
  }
  void initialize(RandomStream& rng) override {
    call("initialize", [&] { inner_->initialize(rng); });
  }
  Index parameter_count() const override { return inner_->parameter_count(); }
  Vector parameters() const override {
    return call("parameters", [&] { return inner_->parameters(); });
  }
  void set_parameters(const Vector& theta) override {
    call("set_parameters", [&] { inner_->set_parameters(theta); });
  }
  std::vector<std::string> parameter_names() const override {
    return call("parameter_names", [&] { return inner_->parameter_names(); });
  }

 protected:
  template <class F>
  auto call(const char* what, F&& f) const -> decltype(f()) {
    return guarded(*origin_, [&] { return name_ + " failed in " + what; }, std::forward<F>(f));
  }
  // A clone made by the plugin, held with its library and guarded again.
  template <class Guard>
  Guard* guarded_clone() const {
    std::shared_ptr<void> copy = call("clone", [&] { return std::shared_ptr<void>(inner_->clone()); });
    return new Guard(std::static_pointer_cast<Interface>(hold(std::move(copy), origin_->library)), origin_, name_);
  }
  // The origin (and so the library) first: destroyed last.
  OriginPtr origin_;
  std::shared_ptr<Interface> inner_;
  std::string name_;
};

class PluginKernel final : public GuardedComponent<Kernel> {
 public:
  using GuardedComponent::GuardedComponent;
  KernelCapabilities capabilities() const override { return inner_->capabilities(); }
  Matrix gram(const Matrix& X, const Matrix& Y) const override {
    return call("gram", [&] { return inner_->gram(X, Y); });
  }
  Vector gram_times(const Matrix& X, const Matrix& Y, const Vector& b) const override {
    return call("gram_times", [&] { return inner_->gram_times(X, Y, b); });
  }
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override {
    call("derivatives", [&] { inner_->derivatives(X, Y, order, out); });
  }
  void cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const override {
    call("cross_derivatives", [&] { inner_->cross_derivatives(X, Y, out); });
  }
  void cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const override {
    call("cross_second_derivatives", [&] { inner_->cross_second_derivatives(X, Y, d2xd2y); });
  }
  void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint, Vector* grad_params,
                Matrix* grad_Y) const override {
    call("backward", [&] { inner_->backward(X, Y, adjoint, grad_params, grad_Y); });
  }
  // The plugin's profile, its calls guarded too; null whenever the plugin's is.
  const RadialProfile* radial_profile() const override { return inner_->radial_profile() ? &profile_ : nullptr; }

 protected:
  Kernel* clone_raw() const override { return guarded_clone<PluginKernel>(); }

 private:
  class Profile final : public RadialProfile {
   public:
    explicit Profile(const PluginKernel& kernel) : kernel_(kernel) {}
    void evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const override {
      kernel_.call("radial profile", [&] { kernel_.inner_->radial_profile()->evaluate(r, phi, dphi, d2phi); });
    }

   private:
    const PluginKernel& kernel_;
  };
  Profile profile_{*this};
};

class PluginBaseMeasure final : public GuardedComponent<BaseMeasure> {
 public:
  using GuardedComponent::GuardedComponent;
  void check_dimension(Index dim) const override {
    call("check_dimension", [&] { inner_->check_dimension(dim); });
  }
  Vector log_density(const Matrix& X) const override {
    return call("log_density", [&] { return inner_->log_density(X); });
  }
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override {
    call("derivatives", [&] { inner_->derivatives(X, d1, d2); });
  }
  bool can_sample() const override { return inner_->can_sample(); }
  Matrix sample(Index n, Index dim, RandomStream& rng) const override {
    return call("sample", [&] { return inner_->sample(n, dim, rng); });
  }
  void backward(const Matrix& X, const Vector& adj_log, const Matrix& adj_d1, const Matrix& adj_d2,
                Vector& grad_params) const override {
    call("backward", [&] { inner_->backward(X, adj_log, adj_d1, adj_d2, grad_params); });
  }

 protected:
  BaseMeasure* clone_raw() const override { return guarded_clone<PluginBaseMeasure>(); }
};

class PluginFeatureMap final : public GuardedComponent<FeatureMap> {
 public:
  using GuardedComponent::GuardedComponent;
  Index input_dim() const override { return inner_->input_dim(); }
  Index output_dim() const override { return inner_->output_dim(); }
  void forward(const Matrix& X, int order, FeatureStacks& out) const override {
    call("forward", [&] { inner_->forward(X, order, out); });
  }
  void backward(const Matrix& X, const FeatureStacks& adjoint, Vector* grad_params,
                Matrix* grad_X) const override {
    call("backward", [&] { inner_->backward(X, adjoint, grad_params, grad_X); });
  }

 protected:
  FeatureMap* clone_raw() const override { return guarded_clone<PluginFeatureMap>(); }
};

// The guard wrappers of the host's interfaces: every call into an object a plugin made runs inside a
// guard naming that plugin. Objects of other interfaces (a plugin's own) are held (their library stays
// loaded) but their calls are not wrapped: they are called by the plugins that asked for them, inside
// those plugins' own guarded calls.
using Wrapper =
    std::function<std::shared_ptr<void>(std::shared_ptr<void>, const OriginPtr&, const std::string&)>;

template <class T, class Guard>
Wrapper wrapper_of() {
  return [](std::shared_ptr<void> object, const OriginPtr& origin, const std::string& name) {
    std::shared_ptr<T> guard =
        std::make_shared<Guard>(std::static_pointer_cast<T>(std::move(object)), origin, name);
    return std::shared_ptr<void>(std::move(guard));
  };
}

const std::map<std::string, Wrapper, std::less<>>& wrappers() {
  static const std::map<std::string, Wrapper, std::less<>> table = {
      {Estimator::kInterface, wrapper_of<Estimator, PluginEstimator>()},
      {Evaluator::kInterface, wrapper_of<Evaluator, PluginEvaluator>()},
      {DataSource::kInterface, wrapper_of<DataSource, PluginDataSource>()},
      {Kernel::kInterface, wrapper_of<Kernel, PluginKernel>()},
      {BaseMeasure::kInterface, wrapper_of<BaseMeasure, PluginBaseMeasure>()},
      {FeatureMap::kInterface, wrapper_of<FeatureMap, PluginFeatureMap>()},
      {Model::kInterface,
       [](std::shared_ptr<void> object, const OriginPtr& origin, const std::string&) {
         ModelPtr guarded_model = guard_model(std::static_pointer_cast<const Model>(object), origin);
         return std::const_pointer_cast<void>(std::static_pointer_cast<const void>(guarded_model));
       }},
  };
  return table;
}

// What a registration function writes into: nothing reaches the registry until the whole
// registration has succeeded, so a plugin is either fully registered or not at all.
class StagingRegistrar final : public PluginRegistrar {
 public:
  explicit StagingRegistrar(OriginPtr origin) : origin_(std::move(origin)) {}

  void add_component(std::string interface, ComponentInfo info, ErasedFactory factory) override {
    const std::string name = qualified(interface, info.type);
    if (!valid_interface_name(interface))
      problems_.push_back("registers `" + info.type + "` under the invalid interface name `" + interface +
                          "` (expected lower-case letters, digits and '_')");
    if (info.type.empty()) problems_.push_back("registers a " + noun(interface) + " with an empty type name");
    if (!factory) problems_.push_back("registers " + name + " with an empty factory");
    for (const Entry& e : entries_)
      if (e.interface == interface && e.info.type == info.type)
        problems_.push_back("registers " + name + " twice");
    check_aliases(interface, info, name);
    for (std::size_t i = 0; i < info.keys.size(); ++i) {
      if (info.keys[i].name == "type") problems_.push_back(name + " declares the reserved key `type`");
      for (std::size_t j = 0; j < i; ++j)
        if (info.keys[j].name == info.keys[i].name)
          problems_.push_back(name + " declares the key `" + info.keys[i].name + "` twice");
    }
    const std::vector<PartSpec> parts = info.all_parts();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].name.empty() || parts[i].name == "name" || parts[i].name == "estimator" ||
          !valid_interface_name(parts[i].name) || !valid_interface_name(parts[i].interface))
        problems_.push_back(name + " declares a part with an invalid name or interface (`" + parts[i].name +
                            "` of `" + parts[i].interface + "`)");
      for (std::size_t j = 0; j < i; ++j)
        if (parts[j].name == parts[i].name)
          problems_.push_back(name + " declares the part `" + parts[i].name + "` twice");
    }
    info.plugin = origin_->name;
    info.interface = interface;
    Entry& e = entries_.emplace_back();
    e.origin = origin_;
    e.interface = std::move(interface);
    e.info = std::move(info);
    e.factory = std::move(factory);
  }

  std::vector<Entry>& entries() { return entries_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  // A deprecated alias is a name like a type's: not empty, not the type itself, and neither a type nor
  // an alias of another component of the same interface in this plugin.
  void check_aliases(const std::string& interface, const ComponentInfo& info, const std::string& name) {
    const auto& mine = info.deprecated_aliases;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (mine[i].empty()) problems_.push_back(name + " declares an empty deprecated alias");
      if (mine[i] == info.type) problems_.push_back(name + " declares its own type as a deprecated alias");
      for (std::size_t j = 0; j < i; ++j)
        if (mine[j] == mine[i])
          problems_.push_back(name + " declares the deprecated alias `" + mine[i] + "` twice");
    }
    for (const Entry& e : entries_) {
      if (e.interface != interface) continue;
      const auto& theirs = e.info.deprecated_aliases;
      auto named_by_them = [&](const std::string& n) {
        return std::find(theirs.begin(), theirs.end(), n) != theirs.end();
      };
      for (const std::string& alias : mine)
        if (alias == e.info.type || named_by_them(alias))
          problems_.push_back("registers " + qualified(interface, alias) + " twice (as a type or alias)");
      if (named_by_them(info.type))
        problems_.push_back("registers " + name + " twice (as a type and as an alias)");
    }
  }

  static bool valid_interface_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
  }

  OriginPtr origin_;
  std::vector<Entry> entries_;
  std::vector<std::string> problems_;
};

// A function with internal linkage: its address is inside libkef even in a program that also
// references libkef's exported functions through canonical PLT entries.
void locate_libkef() {}

}  // namespace

struct Registry::Impl {
  // interface name -> type -> entry. Interfaces appear when their first component is registered.
  using Table = std::map<std::string, Entry, std::less<>>;
  std::map<std::string, Table, std::less<>> entries;
  // interface name -> deprecated alias -> the type it names now (ComponentInfo::deprecated_aliases).
  std::map<std::string, std::map<std::string, std::string, std::less<>>, std::less<>> aliases;
  // The aliases already warned about ("interface/alias"): each is reported once per registry.
  mutable std::set<std::string, std::less<>> warned;
  mutable std::mutex warned_mutex;
  std::vector<PluginRecord> records;
  // Declared last, destroyed first; the entries still hold their origins until they go.
  std::vector<OriginPtr> loaded;

  const Table* of(std::string_view interface) const {
    auto it = entries.find(interface);
    return it == entries.end() ? nullptr : &it->second;
  }

  // The entry of `type`, or of the type a deprecated alias `type` names.
  const Entry* find(std::string_view interface, std::string_view type) const {
    const Table* table = of(interface);
    if (!table) return nullptr;
    auto it = table->find(type);
    if (it != table->end()) return &it->second;
    const std::string* renamed = renamed_type(interface, type);
    if (!renamed) return nullptr;
    it = table->find(*renamed);
    return it == table->end() ? nullptr : &it->second;
  }

  // The type a deprecated alias names, or null when `name` is no alias.
  const std::string* renamed_type(std::string_view interface, std::string_view name) const {
    auto table = aliases.find(interface);
    if (table == aliases.end()) return nullptr;
    auto it = table->second.find(name);
    return it == table->second.end() ? nullptr : &it->second;
  }

  // One line on standard error the first time `name` is used as a deprecated alias (`where`: the
  // table or saved model that used it).
  void warn_if_alias(std::string_view interface, std::string_view name, const std::string& where) const {
    const std::string* renamed = renamed_type(interface, name);
    if (!renamed) return;
    {
      std::lock_guard<std::mutex> lock(warned_mutex);
      if (!warned.insert(qualified(interface, std::string(name))).second) return;
    }
    const Entry* e = find(interface, *renamed);
    std::cerr << "[kef] warning: " << where << ": " << noun(interface) << " type `" << name
              << "` is deprecated and will be removed in the next release; use `" << *renamed << "`"
              << (e ? " (plugin " + e->info.plugin + ")" : std::string()) << ", which it now builds\n";
  }

  std::string valid_types(std::string_view interface) const {
    std::vector<std::string> names;
    if (const Table* table = of(interface))
      for (const auto& [type, entry] : *table) names.push_back(type);
    std::string out = names.empty() ? "(none)" : detail::join(names, ", ");
    const auto refused = std::count_if(records.begin(), records.end(), [](const PluginRecord& r) {
      return r.status == PluginRecord::Status::Refused;
    });
    if (refused == 1) out += " (1 plugin was refused; run `kef plugins`)";
    if (refused > 1) out += " (" + std::to_string(refused) + " plugins were refused; run `kef plugins`)";
    return out;
  }

  const Entry& entry_for(std::string_view interface, const Config& cfg) const {
    const std::optional<std::string> type = cfg.type();
    if (!type) cfg.fail("type", "missing `type`; valid types: " + valid_types(interface));
    const Entry* entry = find(interface, *type);
    if (!entry) {
      cfg.fail("type", "unknown " + noun(interface) + " type `" + *type + "`" + suggestion(interface, *type) +
                           "; valid types: " + valid_types(interface));
    }
    warn_if_alias(interface, *type, cfg.where("type"));
    return *entry;
  }

  // " (did you mean `gaussian`?)" for a type one or two edits away from a registered one.
  std::string suggestion(std::string_view interface, std::string_view type) const {
    const Table* table = of(interface);
    if (!table) return {};
    std::vector<std::string> names;
    for (const auto& [name, entry] : *table) names.push_back(name);
    const std::string best = detail::closest(type, names);
    return best.empty() ? std::string() : " (did you mean `" + best + "`?)";
  }

  // Moves the staged entries into the registry, or explains why not (and changes nothing).
  std::string commit(StagingRegistrar& staging, std::vector<std::string>& components) {
    if (!staging.problems().empty()) return detail::join(staging.problems(), "; ");
    for (const Entry& e : staging.entries()) {
      // find() also resolves deprecated aliases: a new type may not take an old name either.
      if (const Entry* existing = find(e.interface, e.info.type)) {
        return "registers " + qualified(e.interface, e.info.type) + ", which " + existing->origin->label() +
               " already registered";
      }
      for (const std::string& alias : e.info.deprecated_aliases)
        if (const Entry* existing = find(e.interface, alias))
          return "registers " + qualified(e.interface, alias) + " (a deprecated alias of " +
                 qualified(e.interface, e.info.type) + "), which " + existing->origin->label() +
                 " already registered";
    }
    for (Entry& e : staging.entries()) {
      components.push_back(qualified(e.interface, e.info.type));
      for (const std::string& alias : e.info.deprecated_aliases) aliases[e.interface][alias] = e.info.type;
      std::string type = e.info.type;
      std::string interface = e.interface;
      entries[interface].emplace(std::move(type), std::move(e));
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

  // Loading runs the plugin's code for the first time: its static initialisers, then its registration.
  LoadCrashGuard crash_guard(record.name, file);
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

namespace {
// Set once by a static initialiser in libkef (run layer) before any Registry can exist.
const char* core_origin = nullptr;
RegisterFunction* core_components = nullptr;
}  // namespace

void detail::install_core_components(const char* origin, RegisterFunction* fn) {
  core_origin = origin;
  core_components = fn;
}

bool Registry::add_core_components() {
  if (!core_components) return false;
  for (const PluginRecord& r : impl_->records)
    if (r.path.empty() && r.name == core_origin) return true;
  register_builtin(core_origin, core_components);
  return true;
}

std::vector<std::string> Registry::interfaces() const {
  std::vector<std::string> out;
  for (const auto& [interface, table] : impl_->entries)
    if (!table.empty()) out.push_back(interface);
  return out;
}

std::vector<ComponentInfo> Registry::components(std::string_view interface) const {
  std::vector<ComponentInfo> out;
  if (const Impl::Table* table = impl_->of(interface))
    for (const auto& [type, entry] : *table) out.push_back(entry.info);
  return out;
}

const ComponentInfo* Registry::find(std::string_view interface, std::string_view type) const {
  const Entry* entry = impl_->find(interface, type);
  return entry ? &entry->info : nullptr;
}

const ComponentInfo& Registry::info_for(std::string_view interface, const Config& cfg) const {
  return impl_->entry_for(interface, cfg).info;
}

namespace {

// Calls the factory, checks it made something, holds the library and puts the interface's guard on.
std::shared_ptr<void> build(const Entry& entry, const std::string& context, const Config& cfg,
                            const BuildContext& ctx) {
  const std::string name = qualified(entry.interface, entry.info.type);
  std::shared_ptr<void> object =
      guarded(*entry.origin, name + " failed " + context, [&] { return entry.factory(cfg, ctx); });
  if (!object) throw PluginError(entry.origin->label() + ": " + name + ": the factory returned nothing");
  object = hold(std::move(object), entry.origin->library);
  if (!entry.origin->is_plugin()) return object;
  const auto& table = wrappers();
  auto wrap = table.find(entry.interface);
  return wrap == table.end() ? object : wrap->second(std::move(object), entry.origin, name);
}

}  // namespace

std::shared_ptr<void> Registry::make_any(std::string_view interface, Config cfg, const BuildContext& ctx,
                                         const std::vector<std::string>& host_keys) {
  const Entry& e = impl_->entry_for(interface, cfg);
  cfg.validate(e.info.keys, host_keys);
  BuildContext local = ctx;
  if (!local.registry) local.registry = this;
  return build(e, "while being built from " + cfg.where(), cfg, local);
}

Parts Registry::make_parts(const ComponentInfo& info, const Config& owner, const BuildContext& ctx) {
  Parts parts;
  for (const PartSpec& part : info.all_parts()) {
    if (!owner.has(part.name)) {
      if (part.required)
        owner.fail("", noun(info.interface) + " `" + info.type + "` needs a [" + owner.dotted(part.name) +
                           "] table (" + noun(part.interface) + ")");
      continue;
    }
    Config cfg = owner.table(part.name);
    parts.add(part.name, part.interface, make_any(part.interface, cfg, ctx));
    cfg.fill_defaults();
  }
  return parts;
}

EstimatorPtr Registry::make_estimator(Config cfg, const EstimatorParts& parts, const BuildContext& ctx) {
  const Parts all = parts.all();
  BuildContext local = ctx;
  local.parts = &all;
  if (!local.registry) local.registry = parts.registry ? parts.registry : this;
  return make<Estimator>(std::move(cfg), local);
}

ModelPtr Registry::load_model(const ModelReader& reader) {
  const std::string type = reader.model_type();
  const Entry* e = impl_->find(Model::kInterface, type);
  // Saved lite and dkef models load through the core components, which an embedding program may not
  // have registered: they are added on demand.
  if (!e && add_core_components()) e = impl_->find(Model::kInterface, type);
  if (!e) {
    reader.fail("unknown model type `" + type + "`" + impl_->suggestion(Model::kInterface, type) +
                "; valid types: " + impl_->valid_types(Model::kInterface));
  }
  impl_->warn_if_alias(Model::kInterface, type, (reader.dir() / "model.toml").string());
  BuildContext ctx;
  ctx.dim = reader.dim();
  ctx.registry = this;
  ctx.reader = &reader;
  std::shared_ptr<void> object = build(*e, "while loading " + reader.dir().string(), Config(), ctx);
  return std::static_pointer_cast<const Model>(object);
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
