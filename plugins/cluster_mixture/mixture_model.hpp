#pragma once
// The model of cluster_mixture (DKEF §3.1): K fitted components, each normalised by its own
// importance-sampling estimate Ẑ_k, weighted by their clusters' training counts w_k = n_k / N:
//
//   log p~(x) = logsumexp_k [ log w_k − log Ẑ_k + log p~_k(x) ]
//   ∇ log p~  = Σ_k γ_k(x) ∇ log p~_k,   γ_k(x) = w_k p~_k(x)/Ẑ_k / Σ_j w_j p~_j(x)/Ẑ_j
//   ∂²_d log p~ = Σ_k γ_k ∂²_d log p~_k + Σ_k γ_k (∂_d log p~_k − ∂_d log p~)²
//
// (the last sum is Σ γ_k (∂_d log p~_k)² − (∂_d log p~)² written without its cancellation).
//
// Normalisation. Each Ẑ_k is an estimate, so p~ integrates to Σ_k w_k Z_k/Ẑ_k ≈ 1, not exactly 1:
// log_normalizer() stays empty (claiming log Z = 0 would hide the estimation error). Instead the
// model exposes the mixture of its components' base measures, q(x) = Σ_k w_k q0_k(x), as its base
// measure, so the log_likelihood evaluator estimates the residual normaliser of the whole mixture
// from fresh proposals (its log Ẑ is then ≈ 0 with a standard error) and never double-normalises:
// it normalises p~ once, as for any other model. With r = p~/q, r(y) is a q-weighted average of
// r_k(y)/Ẑ_k, so r >= min_k a_k/Ẑ_k when every component has a lower bound a_k of its ratio; that is
// the model's log_ratio_lower_bound (DKEF Proposition 1's a).
//
// Exactly normalised components (the likelihood baselines: Gaussian, mixtures, KDE, the flows) have
// log Z_k known, so Ẑ_k = Z_k and Σ_k w_k Z_k/Ẑ_k = Σ_k w_k = 1: when every component is, the mixture
// claims log Z = 0 (facet NormalizedDensity) and, when every component samples exactly, samples
// exactly too (a categorical draw of the component per row, then that component's sampler).
#include <memory>
#include <string>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::cluster_mixture {

// q(x) = Σ_k w_k q0_k(x) over the components' (normalised) base measures. Not configurable and
// not saved on its own: the mixture model rebuilds it from its components.
class MixtureBaseMeasure final : public Clonable<MixtureBaseMeasure, BaseMeasure> {
 public:
  // Each part is held with its owner (the component model), so a clone of this measure, which
  // shares the parts (immutable), keeps them alive.
  MixtureBaseMeasure(std::vector<std::shared_ptr<const BaseMeasure>> parts, Vector weights);
  void check_dimension(Index dim) const override;
  Vector log_density(const Matrix& X) const override;
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override;
  bool can_sample() const override;
  // Component counts are drawn first (one categorical draw per row, in row order), then component
  // k's rows come from rng.derive(k); rows are returned grouped by component.
  Matrix sample(Index n, Index dim, RandomStream& rng) const override;

 private:
  Matrix log_terms(const Matrix& X) const;  // N x K: log w_k + log q0_k(x)
  std::vector<std::shared_ptr<const BaseMeasure>> parts_;
  Vector log_weights_;
  Vector weights_;
};

struct MixtureInfo {
  std::vector<Index> counts;     // training rows per cluster
  Vector log_normalizer_stderr;  // delta-method standard errors of log Ẑ_k
  Index normalizer_samples = 0;
  // "defensive" or "base" (files before kef 0.3.1: base); "exact" when every component knows its log Z.
  std::string normalizer_proposal = "base";
  double bandwidth = 0.0;  // of the clustering's affinity (provenance)
};

class MixtureModel final : public Model {
 public:
  MixtureModel(std::vector<ModelPtr> components, Vector weights, Vector log_normalizers, MixtureInfo info);

  Index dim() const override { return components_.front()->dim(); }
  std::string type_name() const override { return "cluster_mixture"; }
  // Log density; score and Laplacian when every component has them; log Z = 0 and exact sampling
  // when every component is exactly normalised (and samples exactly); the base-measure ratio when
  // every component has a base measure.
  FacetSet facets() const override;
  Vector log_unnormalized(const Matrix& X) const override;
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  const BaseMeasure* base_measure() const override { return base_ ? base_.get() : nullptr; }
  std::optional<double> log_ratio_lower_bound() const override;
  // 0 when every component's log Ẑ_k is its exact log Z_k; empty otherwise (estimates).
  std::optional<double> log_normalizer() const override;
  bool can_sample() const override;
  // Row i's component is a categorical draw (rows in order), then component k's rows come from its
  // own sampler with rng.derive(k), in row order: the rows are i.i.d., not grouped by component.
  Matrix sample(Index n, RandomStream& rng) const override;
  std::string describe() const override;
  bool can_save() const override;
  void save(ModelWriter& writer) const override;

  Index components() const { return static_cast<Index>(components_.size()); }
  const Model& component(Index k) const { return *components_[static_cast<std::size_t>(k)]; }
  const Vector& weights() const { return weights_; }
  const Vector& log_normalizers() const { return log_z_; }
  bool exactly_normalized() const { return exact_; }
  // Responsibilities γ (N x K) of the rows of X.
  Matrix responsibilities(const Matrix& X) const;

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  // N x K: log w_k − log Ẑ_k + log p~_k(x); NumericalError on NaN or +inf from a component.
  Matrix log_terms(const Matrix& X) const;
  void check_input(const Matrix& X) const;

  std::vector<ModelPtr> components_;
  Vector weights_, log_z_;
  Vector offsets_;  // log w_k − log Ẑ_k
  MixtureInfo info_;
  std::unique_ptr<MixtureBaseMeasure> base_;
  bool exact_ = false;  // every log Ẑ_k is the component's exact log Z_k
};

}  // namespace kef::cluster_mixture
