#pragma once
// What a plugin's registration function receives. The registrar has one entry point,
// add_component(interface, info, factory), so a new interface adds no virtual function and does not
// change the plugin ABI; the typed helpers below are inline and compile into the plugin.
//
// A factory for interface T has the signature std::unique_ptr<T>(const Config&, const BuildContext&);
// T names its interface as `T::kInterface`. Example, a plugin that adds a component of a new kind:
//
//   struct Sampler { static constexpr const char* kInterface = "sampler"; virtual ~Sampler() = default; ...
//   }; r.add<Sampler>(info, [](const kef::Config& cfg, const kef::BuildContext& ctx) { ... });
#include <functional>
#include <memory>
#include <type_traits>

#include "kef/base_measure.hpp"
#include "kef/component_info.hpp"
#include "kef/config.hpp"
#include "kef/data_source.hpp"
#include "kef/estimator.hpp"
#include "kef/evaluator.hpp"
#include "kef/feature_map.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"

namespace kef {

// A factory with its interface's type erased: the object as a pointer to the interface type,
// converted to void*. The registry converts it back for the interface it was registered under.
using ErasedFactory = std::function<std::shared_ptr<void>(const Config&, const BuildContext&)>;

template <class T>
using Factory = std::function<std::unique_ptr<T>(const Config&, const BuildContext&)>;

using KernelFactory = Factory<Kernel>;
using FeatureMapFactory = Factory<FeatureMap>;
using BaseMeasureFactory = Factory<BaseMeasure>;
using EvaluatorFactory = Factory<Evaluator>;
using DataSourceFactory = Factory<DataSource>;
using EstimatorFactory =
    std::function<std::unique_ptr<Estimator>(const Config&, const EstimatorParts&, const BuildContext&)>;
using ModelLoader = std::function<ModelPtr(const ModelReader&, Registry&)>;

class PluginRegistrar {
 public:
  virtual ~PluginRegistrar() = default;

  // The one virtual: registers `info.type` under `interface`. An empty factory is refused.
  virtual void add_component(std::string interface, ComponentInfo info, ErasedFactory factory) = 0;

  // Typed registration for any interface T. Components derived from kef::Component get the
  // resolved config they were built from attached, so they can be saved and rebuilt.
  template <class T>
  void add(ComponentInfo info, Factory<T> factory) {
    ErasedFactory erased;
    if (factory) {
      erased = [type = info.type, f = std::move(factory)](const Config& cfg,
                                                          const BuildContext& ctx) -> std::shared_ptr<void> {
        std::unique_ptr<T> object = f(cfg, ctx);
        if (!object) return nullptr;
        if constexpr (std::is_base_of_v<Component, T>) object->attach_config(type, cfg);
        return std::shared_ptr<T>(std::move(object));
      };
    }
    add_component(T::kInterface, std::move(info), std::move(erased));
  }

  void add_kernel(ComponentInfo info, KernelFactory f) { add<Kernel>(std::move(info), std::move(f)); }
  void add_feature_map(ComponentInfo info, FeatureMapFactory f) {
    add<FeatureMap>(std::move(info), std::move(f));
  }
  void add_base_measure(ComponentInfo info, BaseMeasureFactory f) {
    add<BaseMeasure>(std::move(info), std::move(f));
  }
  void add_evaluator(ComponentInfo info, EvaluatorFactory f) {
    add<Evaluator>(std::move(info), std::move(f));
  }
  void add_data_source(ComponentInfo info, DataSourceFactory f) {
    add<DataSource>(std::move(info), std::move(f));
  }
  // Estimators keep their three-argument factory: the parts arrive as an EstimatorParts.
  void add_estimator(ComponentInfo info, EstimatorFactory f);
  // Loader for saved models whose model.toml has `type = info.type`.
  void add_model_loader(ComponentInfo info, ModelLoader f);
};

inline void PluginRegistrar::add_estimator(ComponentInfo info, EstimatorFactory f) {
  Factory<Estimator> adapted;
  if (f) {
    adapted = [f = std::move(f)](const Config& cfg, const BuildContext& ctx) {
      return f(cfg, EstimatorParts::from(ctx), ctx);
    };
  }
  add<Estimator>(std::move(info), std::move(adapted));
}

inline void PluginRegistrar::add_model_loader(ComponentInfo info, ModelLoader f) {
  ErasedFactory erased;
  if (f) {
    erased = [f = std::move(f)](const Config&, const BuildContext& ctx) -> std::shared_ptr<void> {
      return std::const_pointer_cast<Model>(f(*ctx.reader, *ctx.registry));
    };
  }
  add_component(Model::kInterface, std::move(info), std::move(erased));
}

using RegisterFunction = void(PluginRegistrar&);

}  // namespace kef
