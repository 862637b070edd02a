#include "flow_estimator.hpp"
#include "flow_model.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void add(kef::PluginRegistrar& r, kef::flows::FlowKind kind, const char* summary) {
  kef::ComponentInfo est;
  est.type = kef::flows::kind_name(kind);
  est.summary = summary;
  est.reference =
      "Germain et al. 2015 (MADE); Dinh et al. 2017 (Real NVP); Papamakarios et al. 2017 (MAF); docs/math.md "
      "§15";
  est.keys = kef::flows::flow_options(kind).keys();
  est.facets = {kef::Facet::LogDensity, kef::Facet::NormalizedDensity, kef::Facet::Score,
                kef::Facet::Laplacian, kef::Facet::Sampler};
  r.add_estimator(est, [kind](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::flows::FlowEstimator>(cfg, kind);
  });
}

void register_flows(kef::PluginRegistrar& r) {
  using kef::flows::FlowKind;
  add(r, FlowKind::made,
      "MADE: one masked autoencoder with Gaussian conditionals, trained by maximum likelihood");
  add(r, FlowKind::made_mog, "MADE-MoG: a MADE whose conditionals are mixtures of Gaussians");
  add(r, FlowKind::maf, "MAF: a stack of Gaussian MADEs (order reversed between them) on N(0, I)");
  add(r, FlowKind::maf_mog, "MAF-MoG: a stack of Gaussian MADEs on a MADE-MoG");
  add(r, FlowKind::real_nvp,
      "Real NVP: affine coupling layers (alternating masks, tanh scale and ReLU shift nets) with batch norm");

  kef::ComponentInfo model;
  model.type = "flow";
  model.summary = "Saved MADE / MADE-MoG / MAF / MAF-MoG: architecture in model.toml, parameters as .npy";
  model.reference = "Papamakarios et al. 2017; docs/math.md §15";
  r.add_model_loader(model, &kef::flows::FlowModel::load);
}

}  // namespace

KEF_PLUGIN("flows", "0.1.0", "Likelihood baselines: MADE, MADE-MoG, MAF, MAF-MoG, Real NVP", register_flows)
