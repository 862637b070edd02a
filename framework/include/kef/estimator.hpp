#pragma once
// An estimator turns training data into a Model. It is built from its config table plus the
// model's kernel and base measure (either may be null when the method does not use one).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/data_shape.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"
#include "kef/progress.hpp"
#include "kef/random.hpp"

namespace kef {

class Registry;

struct EstimatorParts {
  KernelPtr kernel;
  BaseMeasurePtr base_measure;
  Registry* registry = nullptr;  // for estimators that build nested components
};

// What a fit reports besides the model (goes to results.json "fit").
struct FitReport {
  long iterations = 0;
  std::map<std::string, double> values;                 // e.g. jitter, lambda
  std::vector<std::pair<long, double>> curve;           // (step, validation loss)
  std::vector<std::string> notes;
};

struct FitInput {
  const Matrix& train;
  const Matrix& validation;  // may have 0 rows
  RandomStream& rng;
  Progress& progress;
  int threads = 1;
  FitReport& report;
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  virtual ModelPtr fit(const FitInput& input) = 0;

  // Checks that depend only on the configuration and the data's shape (e.g. inducing points against
  // training rows), run by `kef validate` and before the first fit. The default checks nothing.
  virtual void check(const DataShape& /*data*/) const {}
  // What the fitted model will be able to do, when the configuration determines it (evaluators check
  // their needs against it before any fit); empty when unknown.
  virtual std::optional<ModelFacets> facets() const { return std::nullopt; }
};

using EstimatorPtr = std::shared_ptr<Estimator>;

}  // namespace kef
