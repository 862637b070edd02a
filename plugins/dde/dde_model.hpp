#pragma once
// A fitted DDE model (docs/math.md §16): log p~(x) = λ f(x) + log p0(x) with f = Σ_i α_i k(z_i, x) and
// p0 uniform on the training data's bounding box (so the support is that box), its score and the
// diagonal of its Hessian, and draws from the learned sampler g(ξ), ξ ~ N(0, I): fast, but only as
// close to p as training made q (the draws are q's, not exact draws from p).
//
// Saved as type "dde": model.toml (dim, gamma, lambda, the architecture, the sampler correction) and .npy
// arrays points, alpha, box_lo, box_hi, generator_parameters, dual_parameters (the dual ν is kept so that
// training could resume and for diagnostics). Everything is float64, so a reloaded model is bitwise the same.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dde_core.hpp"
#include "sampler_correction.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::dde {

class DdeModel final : public Model {
 public:
  DdeModel(KernelExpansion f, double lambda, Architecture arch, network::Network generator,
           network::Network dual, Vector lo, Vector hi);

  Index dim() const override { return f_.dim(); }
  std::string type_name() const override { return "dde"; }
  FacetSet facets() const override;
  Vector log_unnormalized(const Matrix& X) const override;
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  bool bounded_support() const override { return true; }
  std::vector<bool> in_support(const Matrix& X) const override;
  bool can_sample() const override { return true; }
  // n draws g(ξ) of the learned sampler, importance-resampled against log p~ when the correction is on.
  Matrix sample(Index n, RandomStream& rng) const override;
  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;

  const KernelExpansion& expansion() const { return f_; }
  double lambda() const { return lambda_; }
  const Architecture& architecture() const { return arch_; }
  const network::Network& generator() const { return generator_; }
  const network::Network& dual() const { return dual_; }
  const Vector& lo() const { return lo_; }
  const Vector& hi() const { return hi_; }
  void set_fit_info(std::vector<std::pair<std::string, double>> info) { fit_info_ = std::move(info); }
  void set_correction(SamplerCorrection c) { correction_ = c; }
  const SamplerCorrection& correction() const { return correction_; }
  // log w = λ f(x) − ν(x) inside the box, −∞ outside: the log importance weight of a sampler draw x
  // against p~ (up to a constant), exact when ν is the optimal dual log(q / p0).
  Vector log_importance_weights(const Matrix& X) const;
  // The sampler's draws, uncorrected.
  Matrix sampler_draws(Index n, RandomStream& rng) const;
  SamplerDiagnostic diagnose(Index m, RandomStream& rng) const;

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  KernelExpansion f_;
  double lambda_;
  Architecture arch_;
  network::Network generator_, dual_;
  Vector lo_, hi_;
  double log_p0_;  // −log of the box's volume
  SamplerCorrection correction_;
  std::vector<std::pair<std::string, double>> fit_info_;
};

}  // namespace kef::dde
