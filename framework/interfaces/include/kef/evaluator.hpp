#pragma once
// An evaluator measures a model on the held-out data (and against the truth, when known).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kef/clonable.hpp"
#include "kef/context.hpp"
#include "kef/data_shape.hpp"
#include "kef/dataset.hpp"
#include "kef/model.hpp"

namespace kef {

// context: the evaluation's own child of the run's context (stream RandomStream(seed,
// "evaluate[i].NAME"), progress labelled with the evaluator and the model); its rng(), progress() and
// threads() are what kef 0.2 passed as `rng`, `progress` and `threads`.
struct EvalInput {
  const Model& model;
  const std::string& model_name;
  const Dataset& data;
  Context& context;
  const Model* other = nullptr;  // second model of comparative evaluators
  std::string other_name{};      // initialised, so EvalInput{model, name, data, context} is complete
};

struct EvaluationResult {
  std::vector<std::pair<std::string, double>> metrics;
  std::vector<std::string> notes;
  std::string summary;
};

class Evaluator {
 public:
  static constexpr const char* kInterface = "evaluator";

  virtual ~Evaluator() = default;
  // A copy sharing no mutable state with this one (see kef/clonable.hpp).
  std::unique_ptr<Evaluator> clone() const { return std::unique_ptr<Evaluator>(clone_raw()); }

  virtual EvaluationResult evaluate(const EvalInput& input) = 0;

  // Checks that depend only on the configuration and the data's shape (split sizes, dimension), run
  // by `kef validate` and before the first fit; a failure throws ConfigError/DataError naming the key.
  // evaluate() may assume they passed. The default checks nothing.
  virtual void check(const DataShape& /*data*/) const {}
  // Checks against one model the evaluator will run on (e.g. that it can be sampled), before it is
  // fitted; `model.facets` is empty when its estimator does not declare them. The default checks nothing.
  virtual void check_model(const DataShape& /*data*/, const PlannedModel& /*model*/) const {}

 protected:
  Evaluator() = default;
  Evaluator(const Evaluator&) = default;
  Evaluator& operator=(const Evaluator&) = default;
  virtual Evaluator* clone_raw() const = 0;
};

using EvaluatorPtr = std::shared_ptr<Evaluator>;

}  // namespace kef
