#pragma once
// Held-out log-likelihood log p~(x) − log Ẑ with Ẑ by importance sampling from the model's
// normalised base measure, and the DKEF Proposition 1 bound on the bias of log Ẑ (MATH.md §8).
#include <optional>
#include <string>

#include "bias_bound.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"

namespace kef::likelihood {

KeyList likelihood_keys();

class LikelihoodEvaluator final : public Evaluator {
 public:
  explicit LikelihoodEvaluator(const Config& cfg);
  EvaluationResult evaluate(const EvalInput& input) override;

 private:
  // The bound's three independent samples and Proposition 1; nullopt (with a note) when it cannot be
  // given for this model.
  std::optional<BoundResult> estimate_bound(const EvalInput& in, const ProposalSource& source, Index used,
                                            double min_log_ratio, EvaluationResult& out) const;

  Config cfg_;
  std::string split_;
  Index samples_;
  double max_seconds_;
  Index chunk_size_;
  double min_effective_samples_;
  bool bias_bound_;
  double bound_percentile_;
  Index bound_percentile_samples_;
  Index bound_rho_samples_;
  double bound_confidence_;
  Index bound_variance_samples_;
};

}  // namespace kef::likelihood
