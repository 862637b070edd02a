#pragma once
// The `dde` estimator: DDE's alternating stochastic algorithm (docs/math.md §16) with the reference
// implementation's settings as the keys' defaults, the paper's where the two differ (README.md).
#include <cstdint>
#include <string>

#include "dde_core.hpp"
#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::dde {

struct DdeOptions {
  std::int64_t iterations = 50000, batch_size = 100, noise_dim = 128, width = 128, generator_depth = 4,
               dual_depth = 3, rounds = 5, dual_steps = 3, inducing_points = 0, report_every = 100,
               correction_candidates = 10, diagnostic_samples = 10000, random_features = 0;
  std::string sampler_correction = "none";
  std::string select = "last";  // which iterate becomes the model: the last, or the smallest sampler MMD²
  std::int64_t select_every = 1000, select_samples = 1000;
  std::string base_measure = "gaussian";  // dde_conditional: p0 of y
  double base_sd = 1.0;
  double learning_rate = 1e-4, lambda = 1.0, eta = 0.0, f_bd = 0.1, clip = 5.0, alpha_init_sd = 0.1,
         box_margin = 0.0;
  bool clip_generator = true;
  std::int64_t dual_width = 0;  // not a key: ν's hidden units from [model.dual] when they differ; 0: width
  double beta1 = 0.9, beta2 = 0.999, adam_epsilon = 1e-8, rmsprop_alpha = 0.99, rmsprop_epsilon = 1e-8;
};
const OptionsSpec<DdeOptions>& dde_options();
// dde_conditional's keys: the same, with the reference's conditional defaults (widths 64, ξ of dimension
// 64, three layers each), and the base measure of y instead of the box margin.
const OptionsSpec<DdeOptions>& dde_conditional_options();

class DdeEstimator final : public Estimator {
 public:
  // `parts`: [model.sampler] and [model.dual] when the pipeline has them (dde_parts.hpp).
  explicit DdeEstimator(const Config& cfg, const Parts& parts = Parts());
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;
  const DdeOptions& options() const { return opt_; }

 protected:
  Estimator* clone_raw() const override { return new DdeEstimator(*this); }

 private:
  DdeOptions opt_;
  KeySites sites_;
};

// The `dde_conditional` estimator: DDE for p(y | x) (docs/math.md §16.5), f(x, y) = Σ_i α_i k((x_i, y_i),
// (x, y)) with the isotropic Gaussian kernel on the joint rows (the paper's), the sampler g(ξ, x), the dual
// ν(x, y), p0 a density of y (Gaussian by default, as the paper's experiments after Arbel and Gretton).
class DdeConditionalEstimator final : public Estimator {
 public:
  explicit DdeConditionalEstimator(const Config& cfg, const Parts& parts = Parts());
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;
  const DdeOptions& options() const { return opt_; }

 protected:
  Estimator* clone_raw() const override { return new DdeConditionalEstimator(*this); }

 private:
  DdeOptions opt_;
  KeySites sites_;
};

// The Gaussian kernel's γ = 1 / (2 f_bd m²) for the median m of the pairwise distances of the rows of
// X (kef's median heuristic on at most 1000 rows; docs/math.md §16).
double bandwidth_gamma(const Matrix& X, double f_bd);

}  // namespace kef::dde
