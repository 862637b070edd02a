#pragma once
// Held-out score matching (of a density, or of a conditional density in y), Fisher divergence against the
// truth, and the truth's own log-likelihood.
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"

namespace kef::score_metrics {

enum class Metric { ScoreMatching, FisherDivergence, TrueLogLikelihood, ConditionalScoreMatching };

class ScoreEvaluator final : public Clonable<ScoreEvaluator, Evaluator> {
 public:
  ScoreEvaluator(Metric metric, const Config& cfg);
  EvaluationResult evaluate(const EvalInput& input) override;
  // An empty split (and, for the conditional loss, data without targets) fails before any model is fitted.
  void check(const DataShape& data) const override;

 private:
  Metric metric_;
  KeySites sites_;
  std::string split_;
};

KeyList split_keys();

}  // namespace kef::score_metrics
