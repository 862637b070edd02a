#pragma once
// Components are values: clone() makes a copy that shares no mutable state with the original. Each
// interface (Kernel, BaseMeasure, FeatureMap, Estimator, Evaluator, DataSource) has a non-virtual
// clone() returning std::unique_ptr<Interface> over a virtual clone_raw(); an implementation whose
// copy constructor already deep-copies (plain members, or owned parts held by value) gets clone_raw()
// from this helper instead of writing it:
//
//   class GaussianKernel final : public kef::Clonable<GaussianKernel, kef::Kernel> { ... };
//
// A class owning a sub-component through a pointer (a deep kernel's feature map, a mixture's parts)
// overrides clone_raw() itself and clones what it owns.
namespace kef {

template <class Derived, class Interface>
class Clonable : public Interface {
 public:
  using Interface::Interface;

 protected:
  Interface* clone_raw() const override { return new Derived(static_cast<const Derived&>(*this)); }
};

}  // namespace kef
