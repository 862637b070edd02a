#include "kef/sdk/plugin.hpp"
#include "lscde_estimator.hpp"
#include "lscde_model.hpp"

namespace {

void register_lscde(kef::PluginRegistrar& r) {
  kef::ComponentInfo info;
  info.type = "lscde";
  info.summary =
      "Least-squares conditional density estimation p(y | x): Gaussian basis functions at b training pairs, "
      "α = max(0, (Ĥ + λI)⁻¹ĥ), σ and λ by K-fold cross-validation; exact normaliser, score in y, sampler";
  info.reference = "Sugiyama, Takeuchi, Suzuki, Kanamori, Hachiya & Okanohara (2010); docs/math.md §17.1";
  info.keys = kef::lscde::lscde_options().keys();
  info.facets = kef::FacetSet{kef::Facet::ConditionalDensity, kef::Facet::ConditionalScore,
                              kef::Facet::ConditionalSampler};
  r.add_estimator(info, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::lscde::LscdeEstimator>(cfg);
  });
  kef::ComponentInfo saved;
  saved.type = "lscde";
  saved.summary = "Saved LSCDE model: input_centres.npy, target_centres.npy, alpha.npy, bandwidth.npy";
  saved.reference = "docs/math.md §17.1";
  r.add_model_loader(saved, &kef::lscde::LscdeModel::load);
}

}  // namespace

KEF_PLUGIN("lscde", "0.1.0", "Least-squares conditional density estimation (Sugiyama et al. 2010)",
           register_lscde)
