#pragma once
// What the registry knows about a component type before building one (ComponentInfo), and what a
// factory receives besides its config table (BuildContext). Interfaces are named by strings
// ("kernel", "estimator", "sampler", ...): a base class declares its name as `kInterface`, and the
// registry keeps one table per name, so a new kind of component is a new header, not a registry change.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kef/config.hpp"
#include "kef/facets.hpp"
#include "kef/types.hpp"

namespace kef {

class ModelReader;
class RandomStream;
class Registry;

// A named sub-component a component is built with: the `[model.NAME]` table of a pipeline's
// [[model]] holds its config, and the registry builds it as a component of `interface`.
struct PartSpec {
  std::string name;       // "kernel", "sampler", "dual", ...
  std::string interface;  // the interface name of what it builds ("kernel", "feature_map", ...)
  bool required = true;
  std::string doc;  // one line, for `kef plugins --describe`
};

struct ComponentInfo {
  std::string type;       // "gaussian", "synthetic/banana", ...
  std::string summary;    // one line
  std::string reference;  // paper and section it implements
  KeyList keys;
  // Estimators: the named sub-components their [[model]] table provides. `uses_kernel` and
  // `uses_base_measure` are shorthands for the parts "kernel" and "base_measure".
  std::vector<PartSpec> parts;
  bool uses_kernel = false;
  bool uses_base_measure = false;
  // Estimators: facets every model they return has (empty: not declared, checked after the fit).
  // Evaluators: facets they need of the models they judge.
  FacetSet facets;
  // Evaluators: whether they need the exact density of the source / a second model.
  bool needs_truth = false;
  bool compares_two_models = false;
  // A distributed run reads its training split by rows (kef/training_rows.hpp) only when every model's
  // estimator reads it through FitInput::train_rows (`reads_training_rows`) and every evaluator either
  // never reads it (`ignores_training_split`) or reads it only through Dataset::training()
  // (`reads_training_rows`: by position or in blocks; one asked for `split = "train"` still holds it);
  // otherwise every process holds the whole split, as a single process does.
  bool reads_training_rows = false;
  bool ignores_training_split = false;
  // With reads_training_rows: it reads scattered rows over and over (DKEF's minibatches, at every
  // step), which only a file read at a row's offset (.npy) serves; on a CSV file, which would be
  // scanned again for each, every process holds the split instead.
  bool reads_scattered_rows = false;
  // Former names of this type, kept for one release after a rename or a merge of plugins: a pipeline,
  // a command or a saved model that names one gets this component, and the registry prints a one-line
  // deprecation warning naming `type` (once per registry and name).
  std::vector<std::string> deprecated_aliases;
  std::string interface;  // filled by the registry
  std::string plugin;     // filled by the registry

  // `parts` with the two shorthands expanded, in declaration order.
  std::vector<PartSpec> all_parts() const;
};

// Sub-components built for a component, by part name. Objects are held through host-made pointers,
// so they keep their plugins loaded.
class Parts {
 public:
  void add(std::string name, std::string interface, std::shared_ptr<void> object);
  bool has(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  // The part `name` as a T (whose kInterface must match the part's interface), or null when absent.
  template <class T>
  std::shared_ptr<T> get(std::string_view name) const {
    const Entry* e = find(name, T::kInterface);
    return e ? std::static_pointer_cast<T>(e->object) : nullptr;
  }
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string interface;
    std::shared_ptr<void> object;
  };
  // Throws kef::Error when the part exists with another interface: a programming error.
  const Entry* find(std::string_view name, std::string_view interface) const;
  std::map<std::string, Entry, std::less<>> entries_;
};

struct BuildContext {
  Index dim = -1;  // data dimension when known
  Registry* registry = nullptr;
  RandomStream* rng = nullptr;          // the component's own stream (initialisation)
  Index train_rows = -1;                // size of the training split when known (early validation)
  const Parts* parts = nullptr;         // sub-components declared in ComponentInfo::parts
  const ModelReader* reader = nullptr;  // model loaders: the saved model being read
};

}  // namespace kef
