#pragma once
// How the kernel tests draw a model's samples: its exact sampler when it has one, else the framework's
// HMC (kef/hmc.hpp) started from random training rows or from the model's base measure. The `hmc_*`
// keys are declared here once, for every evaluator of the plugin that samples models.
#include <cstdint>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/data_shape.hpp"
#include "kef/evaluator.hpp"
#include "kef/hmc.hpp"
#include "kef/options.hpp"

namespace kef::kernel_tests {

// An evaluator's options derive from this to take the sampling keys.
struct ModelSamplingOptions {
  std::int64_t hmc_chains = 0, hmc_warmup = 0, hmc_leapfrog_steps = 0, hmc_thinning = 0,
               hmc_chains_per_batch = 0;
  double hmc_step_size = 0, hmc_target_acceptance = 0, hmc_step_size_jitter = 0;
  bool hmc_adapt_mass = true;
  std::string hmc_init;
};

// Declares the `hmc_*` keys of O (which derives from ModelSamplingOptions) in `spec`, with HmcOptions'
// defaults.
template <class O, class M>
M O::*sampling_member(M ModelSamplingOptions::*m) {
  return static_cast<M O::*>(m);
}

template <class O>
void declare_model_sampling_keys(OptionsSpec<O>& s) {
  using B = ModelSamplingOptions;
  const HmcOptions d;
  const auto member = [](auto m) { return sampling_member<O>(m); };
  s.integer("hmc_chains", member(&B::hmc_chains), "HMC chains (models without an exact sampler)", d.chains)
      .at_least(1);
  s.integer("hmc_warmup", member(&B::hmc_warmup), "HMC warm-up iterations per chain (discarded)", d.warmup)
      .non_negative();
  s.integer("hmc_leapfrog_steps", member(&B::hmc_leapfrog_steps), "leapfrog steps per HMC iteration",
            d.leapfrog_steps)
      .at_least(1);
  s.number("hmc_step_size", member(&B::hmc_step_size), "initial leapfrog step size (adapted in warm-up)",
           d.step_size)
      .positive();
  s.number("hmc_target_acceptance", member(&B::hmc_target_acceptance),
           "acceptance rate the step-size adaptation aims at", d.target_acceptance)
      .positive()
      .at_most(0.99);
  s.number("hmc_step_size_jitter", member(&B::hmc_step_size_jitter),
           "each iteration uses step·U(1 − j, 1 + j)", d.step_size_jitter)
      .non_negative()
      .at_most(0.9);
  s.integer("hmc_thinning", member(&B::hmc_thinning), "keep every k-th HMC draw", d.thinning).at_least(1);
  s.boolean("hmc_adapt_mass", member(&B::hmc_adapt_mass), "estimate a diagonal mass matrix in warm-up",
            d.adapt_mass);
  s.integer("hmc_chains_per_batch", member(&B::hmc_chains_per_batch),
            "chains advanced together in one model evaluation", d.chains_per_batch)
      .at_least(1);
  s.string("hmc_init", member(&B::hmc_init),
           "HMC starting points: random training rows, or draws from the model's base measure",
           std::string("train"))
      .one_of({"train", "base_measure"});
}

// The samples of one model and how they were drawn.
struct ModelSamples {
  Matrix rows;
  HmcDiagnostics diagnostics;
};

class ModelSampling {
 public:
  ModelSampling(const ModelSamplingOptions& options, const KeySites& sites);
  // Before any fit: HMC's starting points exist for `model` (training rows, or a base measure).
  void check_model(const DataShape& data, const PlannedModel& model) const;
  // n draws of in.model from the evaluator's stream derive("samples"); `who` names the evaluator in
  // progress and errors.
  ModelSamples draw(const EvalInput& in, Index n, const std::string& who) const;
  // The notes on how the samples were drawn (sampler, HMC's diagnostics and warnings), and, when
  // `metrics` is given, HMC's diagnostics as metrics (hmc_acceptance, hmc_min_ess, hmc_max_rhat,
  // hmc_divergences; sampler_approximate for a model's approximate sampler).
  static void report(const ModelSamples& samples, Index n, const std::string& model_name,
                     std::vector<std::string>& notes, std::vector<std::pair<std::string, double>>* metrics);
  static std::string approximate_sampler_warning(const std::string& model_name);

 private:
  HmcOptions hmc_;
  bool init_from_train_ = true;
  KeySites sites_;
};

}  // namespace kef::kernel_tests
