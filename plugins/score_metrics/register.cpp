#include "kef/sdk/plugin.hpp"
#include "score_evaluators.hpp"

namespace {

void add(kef::PluginRegistrar& r, const char* type, const char* summary, const char* reference,
         kef::score_metrics::Metric metric, bool needs_truth, kef::FacetSet needs) {
  kef::ComponentInfo info;
  info.type = type;
  info.summary = summary;
  info.reference = reference;
  info.keys = kef::score_metrics::split_keys();
  info.needs_truth = needs_truth;
  info.facets = needs;
  info.ignores_training_split = true;  // reads only the split it is given (`split`)
  r.add_evaluator(info, [metric](const kef::Config& cfg, const kef::BuildContext&) {
    return std::make_unique<kef::score_metrics::ScoreEvaluator>(metric, cfg);
  });
}

void register_score_metrics(kef::PluginRegistrar& r) {
  using kef::score_metrics::Metric;
  add(r, "score_matching_loss",
      "Held-out score-matching loss J = mean Σ_d [∂²_d log p~ + ½(∂_d log p~)²] (and J of the truth when known)",
      "DKEF eq. 4; docs/math.md §1", Metric::ScoreMatching, false, kef::Facet::Laplacian);
  add(r, "conditional_score_matching_loss",
      "Held-out conditional score-matching loss in y, J = mean Σ_d [∂²_(y_d) log p~(y | x) + ½(∂_(y_d) log p~(y | x))²] "
      "over a split's pairs (x, y)",
      "Arbel & Gretton 2018; docs/math.md §17.4", Metric::ConditionalScoreMatching, false,
      kef::Facet::ConditionalScore);
  add(r, "fisher_divergence", "½ mean ‖∇log p~ − ∇log p0‖² against the exact score of a synthetic source",
      "docs/math.md §1", Metric::FisherDivergence, true, kef::Facet::Score);
  add(r, "true_log_likelihood", "Mean log density of the true distribution on the split (a reference value)",
      "docs/math.md §1", Metric::TrueLogLikelihood, true, {});
}

}  // namespace

KEF_PLUGIN("score_metrics", "0.1.0",
           "Score matching loss (of a density and of a conditional density), Fisher divergence, true log-likelihood",
           register_score_metrics)
