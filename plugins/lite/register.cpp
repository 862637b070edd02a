#include "kef/sdk/plugin.hpp"
#include "lite_estimator.hpp"

namespace {

void register_lite(kef::PluginRegistrar& r) {
  kef::ComponentInfo est;
  est.type = "lite";
  est.summary = "Lite kernel exponential family: closed-form score matching on M inducing points";
  est.reference = "DKEF (Wenliang et al. 2019) Proposition 3; docs/math.md §4";
  est.keys = kef::lite::lite_keys();
  est.uses_kernel = true;
  est.uses_base_measure = true;
  est.reads_training_rows = true;  // its inducing points and block sums read rows by position
  est.facets = {kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian};  // + base measure ratio when q0 samples
  r.add_estimator(est, [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext& ctx) {
    // Caught at validation time when the training size is already known.
    if (ctx.train_rows >= 0 && cfg.has("inducing_points") && cfg.integer("inducing_points") > ctx.train_rows)
      cfg.fail("inducing_points", std::to_string(cfg.integer("inducing_points")) + " inducing points but only " +
                                      std::to_string(ctx.train_rows) + " training rows");
    return std::make_unique<kef::lite::LiteEstimator>(cfg, parts);
  });
}

}  // namespace

KEF_PLUGIN("lite", "0.1.0", "Lite kernel exponential family estimator", register_lite)
