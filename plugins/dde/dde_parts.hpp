#pragma once
// The parts of the dde estimators (docs/design.md, "Parts"): [model.sampler], the sampler network g,
// and [model.dual], the dual network ν, each a ReLU network whose shape the table sets. Keys a table
// leaves out take the estimator's values (its flat keys noise_dim, width, generator_depth, dual_depth
// or their defaults), so a pipeline may describe the networks either way, but not both for one value.
#include <memory>
#include <optional>
#include <string>

#include "kef/clonable.hpp"
#include "kef/component.hpp"
#include "kef/config.hpp"
#include "kef/options.hpp"
#include "kef/types.hpp"

namespace kef::dde {

class SamplerNetwork : public Component {
 public:
  static constexpr const char* kInterface = "dde_sampler";
  std::unique_ptr<SamplerNetwork> clone() const { return std::unique_ptr<SamplerNetwork>(clone_raw()); }
  std::optional<Index> noise_dim, width, depth;
  KeySites sites;  // where the table and its keys are, for messages

 protected:
  SamplerNetwork* clone_raw() const override = 0;
};

class DualNetwork : public Component {
 public:
  static constexpr const char* kInterface = "dde_dual";
  std::unique_ptr<DualNetwork> clone() const { return std::unique_ptr<DualNetwork>(clone_raw()); }
  std::optional<Index> width, depth;
  KeySites sites;

 protected:
  DualNetwork* clone_raw() const override = 0;
};

// The one type of each: `relu` (ReLU between Glorot-initialised linear layers, none after the last).
class ReluSampler final : public Clonable<ReluSampler, SamplerNetwork> {
 public:
  explicit ReluSampler(const Config& cfg);
};
class ReluDual final : public Clonable<ReluDual, DualNetwork> {
 public:
  explicit ReluDual(const Config& cfg);
};
KeyList relu_sampler_keys();
KeyList relu_dual_keys();

}  // namespace kef::dde
