#pragma once
// Evaluators `mmd_two_sample` (model samples against a held-out split) and `hsic_independence` (inputs
// x against targets y of a split, or of the model's samples): kernel tests with permutation and Gamma
// p-values, on the framework's building blocks kef/mmd_test.hpp and kef/hsic_test.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::kernel_tests {

struct MmdTwoSampleOptions {
  std::string split;
  std::optional<std::int64_t> samples;        // default: the split's size
  std::optional<double> bandwidth;            // given σ; absent: bandwidth_rule
  std::optional<std::string> bandwidth_rule;  // absent: "median" unless a bandwidth is given
  std::optional<std::vector<double>> bandwidth_scales;  // bkl_multiscale: the starting length scales
  std::int64_t permutations = 0;
  std::int64_t hmc_warmup = 0, hmc_thinning = 0;
};
const OptionsSpec<MmdTwoSampleOptions>& mmd_two_sample_options();

struct HsicOptions {
  std::string split;
  std::string of;  // "data" or "model"
  std::optional<std::int64_t> samples;
  std::optional<double> bandwidth_x, bandwidth_y;
  std::optional<std::string> bandwidth_rule;  // absent: "median" unless a bandwidth is given
  std::int64_t permutations = 0;
  std::int64_t hmc_warmup = 0, hmc_thinning = 0;
};
const OptionsSpec<HsicOptions>& hsic_options();

class MmdTwoSampleEvaluator : public Clonable<MmdTwoSampleEvaluator, Evaluator> {
 public:
  MmdTwoSampleEvaluator(const Config& cfg, const BuildContext& ctx);
  EvaluationResult evaluate(const EvalInput& input) override;
  void check(const DataShape& data) const override;

 private:
  MmdTwoSampleOptions opt_;
  KeySites sites_;
  Registry* registry_;
  BandwidthRule rule_;
};

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
  BandwidthRule rule_x_, rule_y_;
};

}  // namespace kef::kernel_tests
