#include "dkef_estimator.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_dkef(kef::PluginRegistrar& r) {
  kef::ComponentInfo est;
  est.type = "dkef";
  est.summary = "Deep kernel exponential family: kernel, points and λ learned through the closed-form fit";
  est.reference = "DKEF (Wenliang et al. 2019) Algorithm 1; docs/math.md §5";
  est.keys = kef::dkef::dkef_keys();
  est.uses_kernel = true;
  est.uses_base_measure = true;
  // Its minibatches, early-stopping subsample and stage-2 and final block sums read rows by position.
  est.reads_training_rows = true;
  est.reads_scattered_rows = true;
  est.facets = {kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian};  // + base measure ratio when q0 samples
  r.add_estimator(est, [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext& ctx) {
    return std::make_unique<kef::dkef::DkefEstimator>(cfg, parts, ctx.train_rows);
  });
}

}  // namespace

KEF_PLUGIN("dkef", "0.1.0", "DKEF training (Algorithm 1): meta-learned deep kernels", register_dkef)
