#pragma once
// Any kef model used as a sampler target through its log p~ only (never its score): a saved model,
// or a synthetic truth, sampled as if its log density could not be differentiated.
#include <string>

#include "kef/model.hpp"
#include "kef/target.hpp"

namespace kef {

class ModelTarget final : public Target {
 public:
  // `name` says which model this is in messages (a model directory, a truth's type).
  ModelTarget(ModelPtr model, std::string name);

  Index dim() const override { return model_->dim(); }
  Vector log_density(const Matrix& X) const override;
  std::string describe() const override;
  const Model& model() const { return *model_; }

 protected:
  Target* clone_raw() const override { return new ModelTarget(*this); }  // models are immutable: shared

 private:
  ModelPtr model_;
  std::string name_;
};

}  // namespace kef
