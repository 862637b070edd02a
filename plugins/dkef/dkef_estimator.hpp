#pragma once
// DKEF training (Algorithm 1 of the ICML paper, docs/math.md §5): learn the kernel, the inducing points,
// log λ_α, log λ_C and q0's parameters by minimising the validation-batch score-matching loss of the
// closed-form fit on a training batch; early-stop on the validation split; tune λ with the kernel
// frozen; fit the final α on the whole fit split.
#include <cstddef>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"

namespace kef::dkef {

KeyList dkef_keys();

class DkefEstimator final : public Estimator {
 public:
  DkefEstimator(const Config& cfg, const EstimatorParts& parts, Index train_rows);
  ModelPtr fit(const FitInput& input) override;
  // The fitted model is f + log q0 with the (learned) configured q0, no exact sampler or normaliser.
  std::optional<FacetSet> facets() const override;

 private:
  struct State;  // the parameter vector and how it splits into groups
  bool learns(const std::string& group) const;
  double validation_loss(const State& s, const Matrix& fit_rows, const Matrix& validation,
                         const Context& context) const;

  Config cfg_;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
  Index inducing_, batch_fit_, batch_loss_, max_steps_, patience_, eval_every_, stage2_steps_, validation_fit_rows_;
  double learning_rate_, init_log_lambda_, noise_std_;
  std::size_t stage2_budget_bytes_ = 0;  // `stage2_memory_mb` in bytes
  std::vector<std::string> train_groups_;
};

}  // namespace kef::dkef
