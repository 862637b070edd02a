#pragma once
// DKEF §3.1's workaround for nearly disjoint components: spectral clustering of the training rows,
// one inner estimator (any registered estimator, configured as [model.estimator.inner]) fitted per
// cluster, with its own fresh kernel and base measure built from [model.kernel] and
// [model.base_measure] when the inner estimator uses them; each component normalised exactly when its
// model knows its log Z (the likelihood baselines) and by importance sampling otherwise; the
// components weighted by their clusters' training counts (MixtureModel).
#include <optional>
#include <vector>
#include <string>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::cluster_mixture {

struct ClusterMixtureOptions {
  std::int64_t clusters = 0;
  Config inner;  // the inner estimator's table, built once per cluster
  std::optional<double> bandwidth;
  std::int64_t max_points = 0, kmeans_restarts = 0, kmeans_max_iterations = 0, min_cluster_size = 0,
               normalizer_samples = 0;
  std::string normalizer_proposal;  // "defensive" or "base"
  std::int64_t normalizer_centres = 0;
};
const OptionsSpec<ClusterMixtureOptions>& cluster_mixture_options();
KeyList cluster_mixture_keys();

class ClusterMixtureEstimator final : public Estimator {
 public:
  // Validates the inner table (its type and keys, through the registry) right away, so that
  // `kef validate` reports a bad inner key with its dotted path.
  ClusterMixtureEstimator(const Config& cfg, const EstimatorParts& parts, const BuildContext& ctx);
  ModelPtr fit(const FitInput& input) override;
  // From the inner estimator's: score and Laplacian when it has them, log Z = 0 and exact sampling
  // when its models are exactly normalised (and sample exactly), the base-measure ratio when they
  // have a base measure.
  std::optional<FacetSet> facets() const override;

 protected:
  // Its own copies of the model's kernel and base measure (the prototypes each cluster clones).
  Estimator* clone_raw() const override;

 private:
  // The training rows (and validation rows, by the same rule) of each cluster, and the spectral
  // clustering's affinity bandwidth (0 for one cluster).
  struct Clusters {
    std::vector<std::vector<Index>> train, validation;
    double bandwidth = 0.0;
  };
  // A component's log normaliser, exact or by importance sampling, with its standard error and a
  // line for the report.
  struct Normalizer {
    double log_z = 0.0, log_z_stderr = 0.0;
    bool exact = false;
    std::string text;
  };
  // The pieces of fit: the clustering, one cluster's inner fit, one component's normaliser.
  Clusters cluster_rows(const FitInput& in) const;
  ModelPtr fit_cluster(Index k, const Matrix& Xk, const Matrix& Vk, const Context& cluster, FitReport& sub) const;
  Normalizer normalize_cluster(const Model& model, Index k, const Matrix& Xk, const RandomStream& stream,
                               const FitInput& in) const;

  ClusterMixtureOptions opt_;
  KeySites sites_;
  Config inner_;
  EstimatorParts parts_;
  Index clusters_;
  Index min_cluster_size_;
  Index normalizer_samples_;
  std::optional<FacetSet> inner_facets_;  // what the inner estimator declares of its models
};

}  // namespace kef::cluster_mixture
