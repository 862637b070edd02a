#include "dde_conditional_model.hpp"
#include "dde_estimator.hpp"
#include "dde_model.hpp"
#include "dde_parts.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

// The parts [model.sampler] and [model.dual] both estimators take (dde_parts.hpp).
const std::vector<kef::PartSpec>& network_parts() {
  static const std::vector<kef::PartSpec> parts = {
      {"sampler", kef::dde::SamplerNetwork::kInterface, false,
       "the sampler network g: noise_dim, width, depth (instead of the estimator's noise_dim, width, "
       "generator_depth)"},
      {"dual", kef::dde::DualNetwork::kInterface, false,
       "the dual network ν: width, depth (instead of the estimator's width, dual_depth)"}};
  return parts;
}

void register_dde(kef::PluginRegistrar& r) {
  kef::ComponentInfo sampler;
  sampler.type = "relu";
  sampler.summary = "DDE's sampler network g(ξ) (or g(ξ, x)): ReLU between Glorot-initialised linear layers";
  sampler.reference = "Dai et al. 2019 §5; the reference implementation's generator; docs/math.md §16";
  sampler.keys = kef::dde::relu_sampler_keys();
  r.add<kef::dde::SamplerNetwork>(sampler, [](const kef::Config& cfg, const kef::BuildContext&) {
    return std::make_unique<kef::dde::ReluSampler>(cfg);
  });
  kef::ComponentInfo dual;
  dual.type = "relu";
  dual.summary = "DDE's dual network ν(x) (or ν(x, y)): ReLU between Glorot-initialised linear layers";
  dual.reference = "Dai et al. 2019 §5; the reference implementation's dual; docs/math.md §16";
  dual.keys = kef::dde::relu_dual_keys();
  r.add<kef::dde::DualNetwork>(dual, [](const kef::Config& cfg, const kef::BuildContext&) {
    return std::make_unique<kef::dde::ReluDual>(cfg);
  });

  kef::ComponentInfo est;
  est.type = "dde";
  est.summary =
      "Doubly dual embedding: penalised MLE of a Gaussian-kernel exponential family through a saddle point, "
      "with a learned sampler";
  est.reference = "Dai, Dai, Gretton, Song, Schuurmans, He 2019 (AISTATS); docs/math.md §16";
  est.keys = kef::dde::dde_options().keys();
  est.facets = {kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian,
                kef::Facet::ApproximateSampler};
  est.parts = network_parts();
  r.add_estimator(est,
                  [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext&) {
                    return std::make_unique<kef::dde::DdeEstimator>(cfg, parts.parts);
                  });

  kef::ComponentInfo model;
  model.type = "dde";
  model.summary = "Saved DDE model: kernel centres, α, the data box, sampler and dual network parameters";
  model.reference = "docs/math.md §16";
  r.add_model_loader(model, &kef::dde::DdeModel::load);

  kef::ComponentInfo cest;
  cest.type = "dde_conditional";
  cest.summary =
      "Doubly dual embedding for p(y | x): a Gaussian-kernel conditional exponential family over (x, y) with "
      "a "
      "learned conditional sampler g(xi, x)";
  cest.reference =
      "Dai, Dai, Gretton, Song, Schuurmans, He 2019 (AISTATS), the conditional extension; docs/math.md §16.5";
  cest.keys = kef::dde::dde_conditional_options().keys();
  cest.facets = {kef::Facet::ConditionalDensity, kef::Facet::ConditionalScore, kef::Facet::ConditionalSampler,
                 kef::Facet::ApproximateSampler};
  cest.parts = network_parts();
  r.add_estimator(cest,
                  [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext&) {
                    return std::make_unique<kef::dde::DdeConditionalEstimator>(cfg, parts.parts);
                  });

  kef::ComponentInfo cmodel;
  cmodel.type = "dde_conditional";
  cmodel.summary =
      "Saved conditional DDE model: kernel centres (x, y), α, p0 of y, sampler and dual network parameters";
  cmodel.reference = "docs/math.md §16.5";
  r.add_model_loader(cmodel, &kef::dde::DdeConditionalModel::load);
}

}  // namespace

KEF_PLUGIN("dde", "0.1.0", "Doubly dual embedding (DDE) kernel exponential family estimator", register_dde)
