#include "cluster_mixture_estimator.hpp"
#include "kef/sdk/plugin.hpp"
#include "mixture_model.hpp"

namespace {

void register_cluster_mixture(kef::PluginRegistrar& r) {
  kef::ComponentInfo est;
  est.type = "cluster_mixture";
  est.summary =
      "Spectral clustering, one inner estimator per cluster, components normalised (exactly, or by "
      "importance sampling) and weighted by their counts";
  est.reference = "DKEF (Wenliang et al. 2019) section 3.1; Ng, Jordan & Weiss (2002) spectral clustering";
  est.keys = kef::cluster_mixture::cluster_mixture_keys();
  // Templates for every cluster's own kernel and base measure, given when the inner estimator uses them
  // (the kernel models) and absent when it does not (the likelihood baselines).
  est.parts = {
      {"kernel", "kernel", false, "the kernel each cluster's inner fit starts from (when it uses one)"},
      {"base_measure", "base_measure", false,
       "the base measure q0 each cluster's inner fit starts from (when it uses one)"}};
  est.facets = {kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian};
  r.add_estimator(est,
                  [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext& ctx) {
                    return std::make_unique<kef::cluster_mixture::ClusterMixtureEstimator>(cfg, parts, ctx);
                  });

  kef::ComponentInfo model;
  model.type = "cluster_mixture";
  model.summary = "Saved cluster_mixture model: weights, log normalisers and one saved model per component";
  model.reference = est.reference;
  r.add_model_loader(model, &kef::cluster_mixture::MixtureModel::load);
}

}  // namespace

KEF_PLUGIN("cluster_mixture", "0.1.0",
           "DKEF section 3.1 mixtures: clustering, per-cluster fits, normalised components",
           register_cluster_mixture)
