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
#include "kef/clonable.hpp"
#include "kef/column_roles.hpp"
#include "kef/component_info.hpp"
#include "kef/context.hpp"
#include "kef/data_shape.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"
#include "kef/training_rows.hpp"

namespace kef {

class Registry;

struct EstimatorParts {
  KernelPtr kernel;
  BaseMeasurePtr base_measure;
  Registry* registry = nullptr;  // for estimators that build nested components
  // Every named part ([model.NAME] tables), kernel and base_measure included. Its initialiser lets
  // EstimatorParts{kernel, base, &registry} leave it out without -Wmissing-field-initializers.
  Parts parts{};

  // The parts the registry built for this estimator (BuildContext::parts), with the two shorthands.
  static EstimatorParts from(const BuildContext& ctx) {
    EstimatorParts out;
    out.registry = ctx.registry;
    if (ctx.parts) {
      out.parts = *ctx.parts;
      out.kernel = out.parts.get<Kernel>("kernel");
      out.base_measure = out.parts.get<BaseMeasure>("base_measure");
    }
    return out;
  }
  // `parts` plus the shorthand fields, for building: what a caller set by hand is not lost.
  Parts all() const {
    Parts out = parts;
    if (kernel && !out.has("kernel")) out.add("kernel", Kernel::kInterface, kernel);
    if (base_measure && !out.has("base_measure")) out.add("base_measure", BaseMeasure::kInterface, base_measure);
    return out;
  }
};

// What a fit reports besides the model (goes to results.json "fit").
struct FitReport {
  long iterations = 0;
  std::map<std::string, double> values;                 // e.g. jitter, lambda
  std::vector<std::pair<long, double>> curve;           // (step, validation loss)
  // Named training curves, (step, value) each (results.json "fit"."curves"."NAME"), e.g. the losses of
  // a saddle-point fit's players.
  std::map<std::string, std::vector<std::pair<long, double>>> curves;
  std::vector<std::string> notes;
};

// context: the fit's own child of the run's context (stream RandomStream(seed, "model.NAME.fit"),
// progress labelled with the model); its rng(), progress() and threads() are what kef 0.2 passed as
// `rng`, `progress` and `threads`. Pass it on to the building blocks the fit calls.
struct FitInput {
  const Matrix& train;
  const Matrix& validation;  // may have 0 rows
  Context& context;
  FitReport& report;
  // Which columns of train/validation are targets y ([data] targets); empty: unconditional data.
  // A conditional estimator fits p(y | x) on roles.inputs_of(train) and roles.targets_of(train).
  ColumnRoles roles = {};
  // Set in a distributed run that reads its data by rows, and only for estimators whose ComponentInfo
  // says `reads_training_rows`: then `train` has no rows (only the split's columns) and the rows are
  // read through this, by position.
  const TrainingRows* train_rows = nullptr;
};

class Estimator {
 public:
  static constexpr const char* kInterface = "estimator";

  virtual ~Estimator() = default;
  // A copy with its own kernel, base measure and other parts (cloned), sharing no mutable state with
  // this one: fitting either leaves the other, and every model either returned, unchanged.
  std::unique_ptr<Estimator> clone() const { return std::unique_ptr<Estimator>(clone_raw()); }

  // Fits on the input; the model it returns shares no mutable state with the estimator, so a later
  // fit (or a change to the estimator's parts) leaves it unchanged.
  virtual ModelPtr fit(const FitInput& input) = 0;

  // Checks that depend only on the configuration and the data's shape (e.g. inducing points against
  // training rows), run by `kef validate` and before the first fit. The default checks nothing.
  virtual void check(const DataShape& /*data*/) const {}
  // The facets the fitted model will have, when this configuration determines them (evaluators'
  // needs are checked against them before any fit); empty when unknown, and then the type's
  // ComponentInfo::facets, if declared, stand in.
  virtual std::optional<FacetSet> facets() const { return std::nullopt; }

 protected:
  Estimator() = default;
  Estimator(const Estimator&) = default;
  Estimator& operator=(const Estimator&) = default;
  // A new copy owned by the caller; see kef/clonable.hpp.
  virtual Estimator* clone_raw() const = 0;
};

using EstimatorPtr = std::shared_ptr<Estimator>;

}  // namespace kef
