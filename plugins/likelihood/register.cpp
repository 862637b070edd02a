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
  info.facets = kef::Facet::LogDensity;
  r.add_evaluator(info, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<kef::likelihood::LikelihoodEvaluator>(cfg, ctx.dim);
  });
}

}  // namespace

KEF_PLUGIN("likelihood", "0.1.0", "Importance-sampled log-likelihood with DKEF's bias bound",
           register_likelihood)
