#include "conditional_likelihood.hpp"
#include "kef/sdk/plugin.hpp"
#include "likelihood_evaluator.hpp"

namespace {

void register_likelihood(kef::PluginRegistrar& r) {
  kef::ComponentInfo info;
  info.type = "log_likelihood";
  info.summary =
      "Held-out log p~(x) − log Ẑ, Ẑ by importance sampling from a defensive mixture, from the base measure "
      "(with DKEF's bias bound), by annealed importance sampling, or by the midpoint rule (D <= 2); checked "
      "by a "
      "second estimate and reported reliable or not";
  info.reference =
      "DKEF (Wenliang et al. 2019) section 3.2, Proposition 1 and appendix D.1; Neal 2001 (AIS); Grosse et "
      "al. 2015 "
      "(BDMC); docs/math.md §8";
  info.keys = kef::likelihood::likelihood_keys();
  info.reads_training_rows = true;  // the training split only through Dataset::training()
  info.facets = kef::Facet::LogDensity;
  r.add_evaluator(info, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<kef::likelihood::LikelihoodEvaluator>(cfg, ctx.dim);
  });

  kef::ComponentInfo cond;
  cond.type = "conditional_log_likelihood";
  cond.summary =
      "Held-out mean log p(y | x) of a conditional model: the model's exact normaliser, or Simpson "
      "quadrature "
      "in y (one target column) with an error estimate";
  cond.reference = "docs/math.md §17.3";
  cond.keys = kef::likelihood::conditional_likelihood_options().keys();
  cond.reads_training_rows = true;  // the training split only through Dataset::training()
  cond.facets = kef::Facet::ConditionalDensity;
  r.add_evaluator(cond, [](const kef::Config& cfg, const kef::BuildContext&) {
    return std::make_unique<kef::likelihood::ConditionalLikelihoodEvaluator>(cfg);
  });
}

}  // namespace

KEF_PLUGIN("likelihood", "0.1.0", "Importance-sampled log-likelihood with DKEF's bias bound",
           register_likelihood)
