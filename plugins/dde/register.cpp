#include "dde_estimator.hpp"
#include "dde_model.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_dde(kef::PluginRegistrar& r) {
  kef::ComponentInfo est;
  est.type = "dde";
  est.summary =
      "Doubly dual embedding: penalised MLE of a Gaussian-kernel exponential family through a saddle point, "
      "with a learned sampler";
  est.reference = "Dai, Dai, Gretton, Song, Schuurmans, He 2019 (AISTATS); docs/math.md §16";
  est.keys = kef::dde::dde_options().keys();
  est.facets = {kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian, kef::Facet::ApproximateSampler};
  r.add_estimator(est, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::dde::DdeEstimator>(cfg);
  });

  kef::ComponentInfo model;
  model.type = "dde";
  model.summary = "Saved DDE model: kernel centres, α, the data box, sampler and dual network parameters";
  model.reference = "docs/math.md §16";
  r.add_model_loader(model, &kef::dde::DdeModel::load);
}

}  // namespace

KEF_PLUGIN("dde", "0.1.0", "Doubly dual embedding (DDE) kernel exponential family estimator", register_dde)
