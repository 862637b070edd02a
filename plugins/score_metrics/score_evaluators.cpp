#include "score_evaluators.hpp"

#include <algorithm>

#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/score_matching.hpp"

namespace kef::score_metrics {

namespace {
const char* metric_name(Metric m) {
  switch (m) {
    case Metric::ScoreMatching:
      return "score_matching_loss";
    case Metric::FisherDivergence:
      return "fisher_divergence";
    case Metric::TrueLogLikelihood:
      return "true_log_likelihood";
    case Metric::ConditionalScoreMatching:
      return "conditional_score_matching_loss";
  }
  return "score_metrics";
}
}  // namespace

KeyList split_keys() { return {split_key("which held-out split to evaluate on")}; }

void ScoreEvaluator::check(const DataShape& data) const {
  if (data.rows(split_) == 0) sites_.fail("split", "the " + split_ + " split is empty");
  if (metric_ == Metric::ConditionalScoreMatching && data.target_dim == 0)
    sites_.fail("type", "scores a conditional density p(y | x) in y, and the data have no target columns "
                        "([data] targets)");
}

ScoreEvaluator::ScoreEvaluator(Metric metric, const Config& cfg)
    : metric_(metric), sites_(cfg), split_(cfg.string("split")) {}

EvaluationResult ScoreEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = evaluation_rows(in, split_, sites_, metric_name(metric_));
  EvaluationResult r;
  if (metric_ == Metric::ConditionalScoreMatching) {
    const ConditionalModel* c = in.model.conditional();
    if (!c)
      sites_.fail("type", "model " + in.model_name + " (" + in.model.type_name() +
                              ") is not a conditional density p(y | x)");
    if (!in.data.roles.conditional())
      sites_.fail("type", "scores a conditional density in y, and the data have no target columns ([data] targets)");
    // The model's own units: a conditional score-matching loss has no change-of-units rule as simple as a
    // log-likelihood's (each target column's scale enters squared), so it is reported as fitted.
    r.metrics.emplace_back("conditional_score_matching_loss",
                           conditional_score_matching_loss(*c, in.data.inputs(X), in.data.targets(X), in.context));
    return r;
  }
  const Model* truth = in.data.truth.get();
  if (metric_ != Metric::ScoreMatching && !truth)
    sites_.fail("type", "needs the exact density of the data source, and this source has none");

  // Score-based quantities exist only where the true density is positive and smooth.
  std::vector<bool> mask;
  const std::vector<bool>* rows = nullptr;
  if (truth && truth->bounded_support() && metric_ != Metric::TrueLogLikelihood) {
    mask = truth->in_support(X);
    rows = &mask;
    const auto used = std::count(mask.begin(), mask.end(), true);
    r.notes.push_back("the true density has bounded support: computed on the " + std::to_string(used) + " of " +
                      std::to_string(X.rows()) + " " + split_ + " rows where it is positive");
  }
  switch (metric_) {
    case Metric::ScoreMatching: {
      double j = score_matching_loss(in.model, X, in.context, rows);
      r.metrics.emplace_back("score_matching_loss", j);
      if (truth) {
        // J(p~) − J(p0) estimates the Fisher divergence without the true score (docs/math.md §1).
        r.metrics.emplace_back("score_matching_loss_truth", score_matching_loss(*truth, X, in.context, rows));
      }
      break;
    }
    case Metric::FisherDivergence:
      r.metrics.emplace_back("fisher_divergence", fisher_divergence(in.model, *truth, X, in.context, rows));
      break;
    case Metric::TrueLogLikelihood: {
      Vector lp = truth->log_unnormalized(X);
      const double log_z = truth->log_normalizer().value_or(0.0);
      for (Index i = 0; i < lp.size(); ++i)
        if (!std::isfinite(lp[i]))
          throw NumericalError("true_log_likelihood: log density of the truth is not finite at " + split_ +
                               " row " + std::to_string(i));
      r.metrics.emplace_back("true_log_likelihood", lp.mean() - log_z);
      break;
    }
    case Metric::ConditionalScoreMatching:  // returned above
      break;
  }
  return r;
}

}  // namespace kef::score_metrics
