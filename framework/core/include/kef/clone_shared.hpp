#pragma once
// A clone that may outlive the registry. An object a plugin made runs that plugin's code, and the
// registry hands it out in a shared_ptr whose deleter keeps the plugin's library loaded; a clone made
// from it by clone() is a new object with no such deleter. clone_shared(original) holds the clone
// together with a reference to the original's allocation (never read: the two share no state), so the
// library stays loaded until the clone is gone, after it is destroyed. Estimators use it for the
// kernel and base measure they hand to a model, which may outlive the registry and the estimator.
#include <memory>

namespace kef {

template <class T>
auto clone_shared(const std::shared_ptr<T>& original) {
  auto copy = original->clone();
  using U = typename decltype(copy)::element_type;
  return std::shared_ptr<U>(copy.release(), [keep = std::shared_ptr<const void>(original)](U* p) {
    delete p;  // first the clone, then (when `keep` goes) the original and its library
    (void)keep;
  });
}

}  // namespace kef
