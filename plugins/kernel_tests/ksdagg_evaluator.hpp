#pragma once
// Evaluator `ksdagg`: the aggregated kernel Stein discrepancy test (KSDAgg) of a model against a split,
// from the model's exact score at the split's rows, on the framework's kef/aggregated_test.hpp. It needs
// no normaliser and no samples from the model, only its score.
#include <cstdint>
#include <string>

#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"

namespace kef::kernel_tests {

struct KsdAggOptions {
  std::string split, weights;
  double alpha = 0.05;
  std::int64_t bootstrap_draws = 2000, level_draws = 2000, bisection_steps = 50, number_bandwidths = 10;
};
const OptionsSpec<KsdAggOptions>& ksdagg_options();

class KsdAggEvaluator : public Clonable<KsdAggEvaluator, Evaluator> {
 public:
  explicit KsdAggEvaluator(const Config& cfg);
  EvaluationResult evaluate(const EvalInput& input) override;
  void check(const DataShape& data) const override;

 private:
  KsdAggOptions opt_;
  KeySites sites_;
};

}  // namespace kef::kernel_tests
