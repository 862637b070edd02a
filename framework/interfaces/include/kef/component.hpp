#pragma once
// What every configurable, saveable piece (kernel, feature map, base measure) shares: the resolved
// config it was built from (so it can be saved and rebuilt) and a flat vector of parameters in
// unconstrained space (log scales, softmax logits, raw weights), which is what optimisers see.
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/types.hpp"

namespace kef {

class Component {
 public:
  virtual ~Component() = default;

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

 private:
  std::string type_;
  Config config_;
};

}  // namespace kef
