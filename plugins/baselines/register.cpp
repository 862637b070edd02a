#include "gaussian_estimators.hpp"
#include "gaussian_mixture_model.hpp"
#include "kde_estimator.hpp"
#include "kde_model.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

using kef::baselines::baseline_facets;

void register_baselines(kef::PluginRegistrar& r) {
  kef::ComponentInfo g;
  g.type = "gaussian_fit";
  g.summary =
      "Full-covariance maximum-likelihood Gaussian (exact normalised density, score, Hessian, sampler)";
  g.reference = "docs/math.md §14.1";
  g.keys = kef::baselines::gaussian_fit_options().keys();
  g.facets = baseline_facets();
  r.add_estimator(g, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::baselines::GaussianFitEstimator>(cfg);
  });

  kef::ComponentInfo m;
  m.type = "gmm";
  m.summary =
      "Gaussian mixture by EM from k-means++ starts (full or diagonal covariances, a covariance floor, K "
      "given or "
      "chosen by held-out log-likelihood or BIC)";
  m.reference = "Dempster, Laird & Rubin (1977); Arthur & Vassilvitskii (2007); docs/math.md §14.2–§14.3";
  m.keys = kef::baselines::gmm_options().keys();
  m.facets = baseline_facets();
  r.add_estimator(m, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::baselines::GmmEstimator>(cfg);
  });

  kef::ComponentInfo k;
  k.type = "kde";
  k.summary =
      "Gaussian kernel density estimate with kernel covariance h² Σ̂; h given, by Scott's or Silverman's "
      "rule, or by "
      "held-out log-likelihood over a grid; blocked evaluation (memory O(n D))";
  k.reference = "Scott (1992); Silverman (1986); docs/math.md §14.4";
  k.keys = kef::baselines::kde_options().keys();
  k.facets = baseline_facets();
  r.add_estimator(k, [](const kef::Config& cfg, const kef::EstimatorParts&, const kef::BuildContext&) {
    return std::make_unique<kef::baselines::KdeEstimator>(cfg);
  });

  for (const char* type : {"gaussian_fit", "gmm"}) {
    kef::ComponentInfo saved;
    saved.type = type;
    saved.summary = "Saved Gaussian mixture: weights.npy, means.npy, covariances.npy (K·D x D)";
    saved.reference = "docs/math.md §14.1";
    r.add_model_loader(saved, &kef::baselines::GaussianMixtureModel::load);
  }
  kef::ComponentInfo saved_kde;
  saved_kde.type = "kde";
  saved_kde.summary = "Saved kernel density estimate: centres.npy, covariance.npy, bandwidth.npy";
  saved_kde.reference = "docs/math.md §14.4";
  r.add_model_loader(saved_kde, &kef::baselines::KdeModel::load);
}

}  // namespace

KEF_PLUGIN("baselines", "0.1.0",
           "Classical likelihood baselines: Gaussian, Gaussian mixture (EM), kernel density estimate",
           register_baselines)
