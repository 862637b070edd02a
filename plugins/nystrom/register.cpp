#include "kef/sdk/plugin.hpp"
#include "nystrom_estimator.hpp"
#include "kef/nystrom_model.hpp"

namespace {

void register_nystrom(kef::PluginRegistrar& r) {
  const kef::FacetSet facets{kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian};
  kef::ComponentInfo ny;
  ny.type = "nystrom";
  ny.summary =
      "Nyström kernel exponential family: score matching on the derivative basis at m sampled points";
  ny.reference = "Sutherland, Strathmann, Arbel, Gretton (Nyström KEF); docs/math.md §6";
  ny.keys = kef::nystrom::nystrom_options().keys();
  ny.uses_kernel = true;
  ny.uses_base_measure = true;
  ny.reads_training_rows = true;  // its sampled points and chunk sums read rows by position
  ny.facets = facets;
  r.add_estimator(ny, [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext&) {
    return std::make_unique<kef::nystrom::NystromEstimator>(cfg, parts);
  });

  kef::ComponentInfo full;
  full.type = "full";
  full.summary = "Full kernel exponential family: exact score matching over the RKHS, an n·D system";
  full.reference = "Sriperumbudur et al. 2017 (JMLR); docs/math.md §6";
  full.keys = kef::nystrom::full_options().keys();
  full.uses_kernel = true;
  full.uses_base_measure = true;
  full.facets = facets;
  r.add_estimator(full,
                  [](const kef::Config& cfg, const kef::EstimatorParts& parts, const kef::BuildContext&) {
                    return std::make_unique<kef::nystrom::FullEstimator>(cfg, parts);
                  });

  kef::ComponentInfo model;
  model.type = "nystrom";
  model.summary = "Saved full or Nyström model: kernel, base measure, points.npy, coefficients.npy";
  r.add_model_loader(model, &kef::NystromModel::load);
}

}  // namespace

KEF_PLUGIN("nystrom", "0.1.0", "Full and Nyström kernel exponential family estimators", register_nystrom)
