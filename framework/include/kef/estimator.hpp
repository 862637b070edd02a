#pragma once
// An estimator turns training data into a Model. It is built from its config table plus the
// model's kernel and base measure (either may be null when the method does not use one).
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kef/base_measure.hpp"
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
};

using EstimatorPtr = std::shared_ptr<Estimator>;

}  // namespace kef
