#include "eps_kde_estimator.hpp"
#include "eps_kde_model.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_eps_kde(kef::PluginRegistrar& r) {
  kef::ComponentInfo info;
  info.type = "eps_kde";
  info.summary =
      "ε-neighbourhood KDE of p(y | x): a Gaussian KDE of the y of the training pairs whose x lies within ε "
      "of "
      "the query (none: the marginal KDE of y); ε and σ by K-fold cross-validated log-likelihood";
  info.reference = "Sugiyama, Takeuchi, Suzuki, Kanamori, Hachiya & Okanohara (2010); docs/math.md §17.2";
  info.keys = kef::eps_kde::eps_kde_options().keys();
  info.facets = kef::FacetSet{kef::Facet::ConditionalDensity, kef::Facet::ConditionalScore,
                              kef::Facet::ConditionalSampler};
  r.add_estimator(info, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::eps_kde::EpsKdeEstimator>(cfg);
  });
  kef::ComponentInfo saved;
  saved.type = "eps_kde";
  saved.summary = "Saved ε-neighbourhood KDE: inputs.npy, targets.npy, epsilon_bandwidth.npy (ε, σ)";
  saved.reference = "docs/math.md §17.2";
  r.add_model_loader(saved, &kef::eps_kde::EpsKdeModel::load);
}

}  // namespace

KEF_PLUGIN("eps_kde", "0.1.0", "ε-neighbourhood kernel density estimate of p(y | x) (Sugiyama et al. 2010)",
           register_eps_kde)
