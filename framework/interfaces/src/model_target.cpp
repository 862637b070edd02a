// A model's log p~ as a sampler target.
#include "kef/model_target.hpp"

#include <cmath>
#include <utility>

#include "kef/error.hpp"

namespace kef {

ModelTarget::ModelTarget(ModelPtr model, std::string name)
    : model_(std::move(model)), name_(std::move(name)) {
  if (!model_) throw Error("ModelTarget: no model");
}

Vector ModelTarget::log_density(const Matrix& X) const {
  Vector lp = model_->log_unnormalized(X);
  if (lp.size() != X.rows())
    throw Error("target " + name_ + ": the model returned " + std::to_string(lp.size()) + " values for " +
                std::to_string(X.rows()) + " rows");
  for (Index r = 0; r < lp.size(); ++r)
    if (std::isnan(lp[r]))  // −∞ is a legitimate answer outside a bounded support; NaN never is
      throw NumericalError("target " + name_ + ": log p~ is NaN at row " + std::to_string(r));
  return lp;
}

std::string ModelTarget::describe() const { return name_ + " (" + model_->type_name() + ", log p~ only)"; }

}  // namespace kef
