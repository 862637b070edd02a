#pragma once
// Evaluator `mmd`: MMD² between samples of the model (its exact sampler, or HMC) and a held-out split.
#include <cstdint>
#include <optional>
#include <string>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/hmc.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::mmd {

struct MmdOptions {
  std::string split;
  std::optional<std::int64_t> samples;  // default: the split's size
  std::optional<double> bandwidth;      // given σ; absent: bandwidth_rule
  std::optional<std::string> bandwidth_rule;  // absent: "median" unless a bandwidth is given
  std::int64_t permutations = 0;
  std::int64_t hmc_chains = 0, hmc_warmup = 0, hmc_leapfrog_steps = 0, hmc_thinning = 0,
               hmc_chains_per_batch = 0;
  double hmc_step_size = 0, hmc_target_acceptance = 0, hmc_step_size_jitter = 0;
  bool hmc_adapt_mass = true;
  std::string hmc_init;
};
const OptionsSpec<MmdOptions>& mmd_options();
KeyList mmd_keys();

class MmdEvaluator : public Clonable<MmdEvaluator, Evaluator> {
 public:
  MmdEvaluator(const Config& cfg, const BuildContext& ctx);
  EvaluationResult evaluate(const EvalInput& input) override;
  // The split's size, and the sampler's starting points, before any model is fitted.
  void check(const DataShape& data) const override;
  void check_model(const DataShape& data, const PlannedModel& model) const override;

 private:
  MmdOptions opt_;
  KeySites sites_;
  Registry* registry_;  // for kernel/gaussian, whose bandwidth is known only once samples exist
  std::string split_;
  HmcOptions hmc_;
  bool init_from_train_ = true;
  Index permutations_ = 0;
  BandwidthRule rule_;
};

}  // namespace kef::mmd
