#pragma once
// The estimators `gaussian_fit` (one maximum-likelihood Gaussian) and `gmm` (a Gaussian mixture by EM
// with k-means++ starts, K given or chosen by held-out log-likelihood or BIC). docs/math.md §14.1–§14.3.
#include <optional>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::baselines {

// The facets of every baseline model: exact normalised density, score, Laplacian, Hessian, sampler.
FacetSet baseline_facets();

struct GaussianFitKeys {
  double covariance_floor = 0.0;
};
const OptionsSpec<GaussianFitKeys>& gaussian_fit_options();

class GaussianFitEstimator final : public Clonable<GaussianFitEstimator, Estimator> {
 public:
  explicit GaussianFitEstimator(const Config& cfg);
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override { return baseline_facets(); }

 private:
  GaussianFitKeys opt_;
  KeySites sites_;
};

struct GmmKeys {
  std::vector<double> components;
  std::string select, covariance;
  double covariance_floor = 0.0, tolerance = 0.0;
  std::int64_t restarts = 0, max_iterations = 0, kmeans_max_iterations = 0;
};
const OptionsSpec<GmmKeys>& gmm_options();

class GmmEstimator final : public Clonable<GmmEstimator, Estimator> {
 public:
  explicit GmmEstimator(const Config& cfg);
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override { return baseline_facets(); }

  // The candidate K, validated (integers >= 1, no repeats), in the order given.
  const std::vector<Index>& candidates() const { return candidates_; }

 private:
  GmmKeys opt_;
  KeySites sites_;
  std::vector<Index> candidates_;
};

}  // namespace kef::baselines
