#pragma once
// Evaluator `hsic_independence`: the kernel independence test (HSIC) of the inputs x and targets y of
// a split, or of a model's samples, with permutation and Gamma p-values, on the framework's
// kef/hsic_test.hpp.
#include <cstdint>
#include <optional>
#include <string>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"
#include "model_sampling.hpp"

namespace kef::kernel_tests {

struct HsicOptions : ModelSamplingOptions {
  std::string split;
  std::string of;  // "data" or "model"
  std::optional<std::int64_t> samples;
  std::optional<double> bandwidth_x, bandwidth_y;
  std::optional<std::string> bandwidth_rule;  // absent: "median" unless a bandwidth is given
  std::int64_t permutations = 0;
};
const OptionsSpec<HsicOptions>& hsic_options();

class HsicIndependenceEvaluator : public Clonable<HsicIndependenceEvaluator, Evaluator> {
 public:
  HsicIndependenceEvaluator(const Config& cfg, const BuildContext& ctx);
  EvaluationResult evaluate(const EvalInput& input) override;
  void check(const DataShape& data) const override;
  void check_model(const DataShape& data, const PlannedModel& model) const override;

 private:
  HsicOptions opt_;
  KeySites sites_;
  Registry* registry_;
  ModelSampling sampling_;
  BandwidthRule rule_x_, rule_y_;
};

}  // namespace kef::kernel_tests
