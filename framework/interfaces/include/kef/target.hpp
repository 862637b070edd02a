#pragma once
// A target of a gradient-free sampler: a density known only through its log density on a batch of
// rows, up to a constant. Nothing else is asked (no score, no sampler), which is the point: kernel
// adaptive HMC (kef/kahmc.hpp) samples targets whose log density can be evaluated but not
// differentiated. Plugins register targets with `r.add<kef::Target>(info, factory)` like any other
// kind (docs/design.md, "Interfaces are named"); the synthetic plugin provides its truths as targets.
//
// Targets are called in the sampler's inner loop and are not wrapped by the registry's guard (like
// kernels): an implementation throws only kef::Error types.
#include <memory>

#include "kef/component.hpp"
#include "kef/types.hpp"

namespace kef {

class Target : public Component {
 public:
  static constexpr const char* kInterface = "target";

  // A deep copy (docs/design.md, "Components are values").
  std::unique_ptr<Target> clone() const { return std::unique_ptr<Target>(clone_raw()); }

  virtual Index dim() const = 0;
  // log π(x) + c for each row of X (N x dim), c the same for every call; −∞ outside the support.
  // Never NaN: a target that cannot evaluate a row throws a kef::Error naming it.
  virtual Vector log_density(const Matrix& X) const = 0;
  // One line for logs and reports.
  virtual std::string describe() const { return type_name(); }

 protected:
  Target* clone_raw() const override = 0;
};

using TargetPtr = std::shared_ptr<Target>;

}  // namespace kef
