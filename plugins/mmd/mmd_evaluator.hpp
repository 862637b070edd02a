#pragma once
// Evaluator `mmd`: MMD² between samples of the model (its exact sampler, or HMC) and a held-out split.
#include <string>

#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/hmc.hpp"
#include "kef/registry.hpp"

namespace kef::mmd {

KeyList mmd_keys();

class MmdEvaluator : public Evaluator {
 public:
  MmdEvaluator(const Config& cfg, const BuildContext& ctx);
  EvaluationResult evaluate(const EvalInput& input) override;
  // The split's size, and the sampler's starting points, before any model is fitted.
  void check(const DataShape& data) const override;
  void check_model(const DataShape& data, const PlannedModel& model) const override;

 private:
  Config cfg_;
  Registry* registry_;  // for kernel/gaussian, whose bandwidth is known only once samples exist
  std::string split_;
  HmcOptions hmc_;
  bool init_from_train_ = true;
  Index permutations_ = 0;
};

}  // namespace kef::mmd
