#pragma once
// A fitted conditional DDE model (docs/math.md §16.5): log p~(y | x) = λ f(x, y) + log p0(y) with
// f = Σ_i α_i k((x_i, y_i), (x, y)) and p0 the base measure of y (Gaussian or uniform on the training
// targets' box); its score and Laplacian in y; and draws y = g(ξ, x), ξ ~ N(0, I), of the learned
// conditional sampler: fast, but draws of q(y | x), only as close to p(y | x) as training made it (the
// facet ApproximateSampler qualifies the conditional sampler here), optionally importance-resampled
// per x against p~(y | x) (sampler_correction.hpp). The normaliser Z(x) is unknown:
// conditional_log_likelihood integrates p~(y | x) over y by quadrature.
//
// Saved as type "dde_conditional": model.toml (input_dim, target_dim, gamma, lambda, the architecture,
// the base measure's kind, the sampler correction) and .npy arrays points (rows (x, y)), alpha, base_a, base_b (lo and hi, or
// mean and sd), generator_parameters, dual_parameters. All float64: a reloaded model is bitwise the same.
#include <string>
#include <utility>
#include <vector>

#include "dde_core.hpp"
#include "sampler_correction.hpp"
#include "kef/conditional_model.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::dde {

class DdeConditionalModel final : public Model, public ConditionalModel {
 public:
  // arch.cond_dim = columns of x, arch.dim = columns of y; f's points have cond_dim + dim columns.
  DdeConditionalModel(KernelExpansion f, double lambda, Architecture arch, network::Network generator,
                      network::Network dual, BaseMeasure p0);

  Index dim() const override { return input_dim() + target_dim(); }
  std::string type_name() const override { return "dde_conditional"; }
  FacetSet facets() const override;
  Vector log_unnormalized(const Matrix& X) const override;  // ConfigError: a conditional model
  const ConditionalModel* conditional() const override { return this; }

  Index input_dim() const override { return arch_.cond_dim; }
  Index target_dim() const override { return arch_.dim; }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override;
  // The conditional overrides below share their names with Model's unconditional functions, which
  // stay visible beside them.
  using Model::score;
  using Model::score_and_laplacian;
  using Model::sample;
  Matrix score(const Matrix& X, const Matrix& Y) const override;
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override;
  // Row n: a draw for x_n. Uncorrected: g(ξ_n, x_n), ξ_n ~ N(0, I) (sampler_draws). With the importance
  // correction: `candidates` draws g(ξ, x_n) per row (all rows' noise first, in row order), then one of
  // them per row resampled with weights w = exp(λ f − ν), in row order.
  Matrix sample(const Matrix& X, RandomStream& rng) const override;
  // Row n: g(ξ_n, x_n), one N(0, I) row of noise_dim per row of X, in row order.
  Matrix sampler_draws(const Matrix& X, RandomStream& rng) const;
  // log w = λ f(x, y) − ν(x, y) per pair, −∞ where p0(y) = 0 (outside a uniform p0's box): the log
  // importance weight of a sampler draw y given x against p~(y | x), up to a constant in x, exact when
  // ν is the optimal dual log(q(y | x) / p0(y)).
  Vector log_importance_weights(const Matrix& X, const Matrix& Y) const;
  // The diagnostic of sampler_correction.hpp for each row of `inputs` from `per_input` draws given it:
  // outside_box over all draws, ess_fraction and kl the means over the inputs, ess_fraction_min the
  // smallest.
  struct Diagnostic {
    SamplerDiagnostic mean;
    double ess_fraction_min = 0.0;
  };
  Diagnostic diagnose(const Matrix& inputs, Index per_input, RandomStream& rng) const;
  void set_correction(SamplerCorrection c) { correction_ = c; }
  const SamplerCorrection& correction() const { return correction_; }

  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;
  static ModelPtr load(const ModelReader& reader, Registry& registry);

  const KernelExpansion& expansion() const { return f_; }
  double lambda() const { return lambda_; }
  const Architecture& architecture() const { return arch_; }
  const network::Network& generator() const { return generator_; }
  const network::Network& dual() const { return dual_; }
  const BaseMeasure& base() const { return p0_; }
  void set_fit_info(std::vector<std::pair<std::string, double>> info) { fit_info_ = std::move(info); }

 private:
  Matrix joint(const Matrix& X, const Matrix& Y) const;
  KernelExpansion f_;
  double lambda_;
  Architecture arch_;
  network::Network generator_, dual_;
  BaseMeasure p0_;
  SamplerCorrection correction_;
  std::vector<std::pair<std::string, double>> fit_info_;
};

}  // namespace kef::dde
