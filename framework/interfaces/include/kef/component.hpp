#pragma once
// What every configurable, saveable piece (kernel, feature map, base measure) shares: the resolved
// config it was built from (so it can be saved and rebuilt) and a flat vector of parameters in
// unconstrained space (log scales, softmax logits, raw weights), which is what optimisers see.
//
// Components are values: clone() is a deep copy that shares no mutable state with the original (set
// its parameters and the original does not change). Each interface re-declares clone() with its own
// return type; implementations provide clone_raw(), usually through kef::Clonable (kef/clonable.hpp).
#include <memory>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

class Component {
 public:
  virtual ~Component() = default;

  std::unique_ptr<Component> clone() const { return std::unique_ptr<Component>(clone_raw()); }

  // Draws again, from `rng`, the random initial values its factory drew from BuildContext::rng
  // (network weights); values the config fixes are kept. A clone of an untrained component followed
  // by initialize(rng) equals the component built with rng: cluster_mixture gives each cluster a
  // fresh copy of the model's kernel this way. The default, for components that draw nothing, does
  // nothing.
  virtual void initialize(RandomStream& /*rng*/) {}

  const std::string& type_name() const { return type_; }
  const Config& config() const { return config_; }
  // Called by the registry after the factory returns.
  void attach_config(std::string type, Config config) {
    type_ = std::move(type);
    config_ = std::move(config);
  }

  virtual Index parameter_count() const { return 0; }
  virtual Vector parameters() const { return Vector(); }
  virtual void set_parameters(const Vector& theta);
  virtual std::vector<std::string> parameter_names() const { return {}; }

 protected:
  Component() = default;
  Component(const Component&) = default;
  Component& operator=(const Component&) = default;
  // A new copy owned by the caller; see kef/clonable.hpp.
  virtual Component* clone_raw() const = 0;

 private:
  std::string type_;
  Config config_;
};

}  // namespace kef
