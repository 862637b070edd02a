#include "kcef_estimator.hpp"
#include "kcef_model.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_kcef(kef::PluginRegistrar& r) {
  kef::ComponentInfo info;
  info.type = "kcef";
  info.summary =
      "Kernel conditional exponential family p(y | x) ∝ exp(f(x, y)) q0(y): f in the RKHS of a Gaussian "
      "product kernel on (x, y), fitted by score matching in y (one (n·d_y)² Cholesky solve), bandwidths and "
      "λ "
      "by K-fold cross-validation of the held-out score-matching loss; score in y";
  info.reference = "Arbel & Gretton (2018); docs/math.md §17.4";
  info.keys = kef::kcef::kcef_options().keys();
  info.facets = kef::FacetSet{kef::Facet::ConditionalDensity, kef::Facet::ConditionalScore};
  r.add_estimator(info, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::kcef::KcefEstimator>(cfg);
  });
  kef::ComponentInfo saved;
  saved.type = "kcef";
  saved.summary =
      "Saved KCEF model: basis_inputs.npy, basis_targets.npy, coefficients.npy, sigma_x.npy, scalars.npy (e, "
      "σ_y, σ0)";
  saved.reference = "docs/math.md §17.4";
  r.add_model_loader(saved, &kef::kcef::KcefModel::load);
}

}  // namespace

KEF_PLUGIN("kcef", "0.1.0", "Kernel conditional exponential family (Arbel & Gretton 2018)", register_kcef)
