#pragma once
// The DKEF (ICML version) base measure: independent generalised normal coordinates
//   log q0(x) = Σ_d [ −½ |x_d − μ_d|^{β_d} / σ_d² + log(β_d / (2 α_d Γ(1/β_d))) ],  α_d = (2σ_d²)^{1/β_d},
// with learnable μ_d, σ_d and β_d = 1 + e^{b_d} > 1 (docs/math.md §3).
//
// Parameters (unconstrained, flat): [μ_0..μ_{D-1}, log σ_0..log σ_{D-1}, b_0..b_{D-1}], so they exist
// only once D is known. D is fixed by the first of: a `mean`/`std`/`beta` list of length > 1, the
// BuildContext's dim, check_dimension(D), or set_parameters(θ) with θ of length 3D (a saved model
// rebuilt without a known dimension). Before that, parameter_count() is 0 and the evaluation
// functions broadcast the scalar keys to X.cols() without fixing anything.
//
// The cusp: for β < 2, ∂² log q0 is infinite at x_d = μ_d. Within |x_d − μ_d| < r0 = kCuspRadius·α_d
// the log density is replaced by the quadratic that matches its value and slope at r0, so log q0 is
// C¹, ∂ log q0 is Lipschitz and ∂² log q0 = −β ε^{β−2}/α² (ε = kCuspRadius) is bounded: score matching
// sees a genuine (slightly smoothed) density, and d2 is the derivative of d1 everywhere, which also
// keeps backward() the exact gradient of what the forward functions return. The change moves a
// probability mass of order ε^{β+1}, far below double-precision noise in any objective.
#include <string>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/config.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::generalized_normal {

// Radius of the smoothed cusp, in units of the scale α_d.
inline constexpr double kCuspRadius = 1e-6;

// ψ(x) = d/dx log Γ(x) for x > 0: upward recurrence to x ≥ 10, then the asymptotic series.
double digamma(double x);

// The configured values, one typed member per key.
struct GeneralizedNormalOptions {
  std::vector<double> mean, std, beta;  // length 1 or D
  bool learn = true;
};
const OptionsSpec<GeneralizedNormalOptions>& options();

// The keys of `base_measure/generalized_normal` (shared by the registration and the tests).
KeyList keys();

class GeneralizedNormalBaseMeasure final : public Clonable<GeneralizedNormalBaseMeasure, BaseMeasure> {
 public:
  // cfg must have been validated against keys(); ctx.dim > 0 fixes the dimension.
  GeneralizedNormalBaseMeasure(const Config& cfg, const BuildContext& ctx);

  // Fixes D when still unknown; ConfigError naming the key that fixed a different D otherwise.
  void check_dimension(Index dim) const override;
  Vector log_density(const Matrix& X) const override;
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override;
  bool can_sample() const override { return true; }
  Matrix sample(Index n, Index dim, RandomStream& rng) const override;
  void backward(const Matrix& X, const Vector& adj_log, const Matrix& adj_d1, const Matrix& adj_d2,
                Vector& grad_params) const override;

  Index parameter_count() const override { return dim_ > 0 ? 3 * dim_ : 0; }
  Vector parameters() const override { return theta_; }
  // Accepts 3D values; when D is still unknown, it is fixed to θ.size() / 3.
  void set_parameters(const Vector& theta) override;
  std::vector<std::string> parameter_names() const override;

  // The `learn` key: whether estimators that learn q0 may change its parameters.
  bool learnable() const { return learn_; }
  Index dim() const { return dim_; }  // −1 while unknown

  // Per-coordinate parameters in natural form, length D.
  struct Coordinates {
    Vector mu, log_sigma, beta;
  };
  Coordinates coordinates(Index dim) const;

 private:
  void fix_dimension(Index dim) const;
  std::vector<double> mean_, std_, beta_;  // the configured values (length 1 or D)
  bool learn_;
  KeySites sites_;
  // check_dimension is const in the interface but fixes D; the host calls it once, before any
  // parallel evaluation, so these need no synchronisation.
  mutable Index dim_ = -1;
  mutable std::string dim_key_;  // the key whose list length fixed D ("" when something else did)
  mutable Vector theta_;
};

}  // namespace kef::generalized_normal
