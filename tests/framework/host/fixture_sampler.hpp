#pragma once
// An interface the host does not know: what a plugin family adding a new kind of component (DDE's
// samplers, a flow's layers, ...) writes. Only its name and its factory signature matter to the registry.
#include <memory>

#include "kef/component.hpp"
#include "kef/types.hpp"

namespace fixture {

class Sampler : public kef::Component {
 public:
  static constexpr const char* kInterface = "fixture_sampler";
  // Components are values: a new interface re-declares clone() with its own type (kef/clonable.hpp).
  std::unique_ptr<Sampler> clone() const { return std::unique_ptr<Sampler>(clone_raw()); }
  virtual double centre() const = 0;

 protected:
  Sampler* clone_raw() const override = 0;
};

}  // namespace fixture
