#pragma once
// The conditional density of `lscde` (Sugiyama et al. 2010; docs/math.md §17.1): with centres
// (u_l, v_l), a common width σ and coefficients α_l > 0,
//
//   p̂(y | x) = Σ_l α_l φ_l(x, y) / Σ_l α_l ∫ φ_l(x, y') dy',
//   φ_l(x, y) = exp(−‖x − u_l‖²/(2σ²)) exp(−‖y − v_l‖²/(2σ²)),  ∫ φ_l(x, y') dy' = (2πσ²)^(d_y/2) e^(−‖x −
//   u_l‖²/(2σ²)),
//
// that is a mixture over l of N(y; v_l, σ² I) with weights ∝ α_l exp(−‖x − u_l‖²/(2σ²)): the normaliser
// is exact, and the score in y, its Laplacian and exact draws follow from the mixture. Everything is in
// log space (log-sum-exp over l), so a query far from every centre still has a finite log density. Each
// row's value depends on that row alone: bitwise the same for any batch and thread count.
#include <string>

#include "kef/conditional_model.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::lscde {

class LscdeModel final : public Model, public ConditionalModel {
 public:
  // Centres whose α is 0 are dropped (they contribute nothing); NumericalError if none is left.
  LscdeModel(Matrix input_centres, Matrix target_centres, Vector alpha, double sigma);

  Index dim() const override { return input_dim() + target_dim(); }
  std::string type_name() const override { return "lscde"; }
  FacetSet facets() const override;
  // Whole rows have no density here: a conditional model (ConfigError).
  Vector log_unnormalized(const Matrix& X) const override;
  const ConditionalModel* conditional() const override { return this; }

  Index input_dim() const override { return U_.cols(); }
  Index target_dim() const override { return V_.cols(); }
  // log Σ_l α_l φ_l(x_n, y_n).
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override;
  // The conditional overrides below share their names with Model's unconditional functions, which
  // stay visible beside them.
  using Model::score;
  using Model::score_and_laplacian;
  using Model::sample;
  using Model::log_normalizer;
  Matrix score(const Matrix& X, const Matrix& Y) const override;
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override;
  // Row by row: one uniform() picks the component, then d_y normals.
  Matrix sample(const Matrix& X, RandomStream& rng) const override;
  // log Σ_l α_l (2πσ²)^(d_y/2) exp(−‖x_n − u_l‖²/(2σ²)).
  std::optional<Vector> log_normalizer(const Matrix& X) const override;

  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;
  static ModelPtr load(const ModelReader& reader, Registry& registry);

  const Matrix& input_centres() const { return U_; }
  const Matrix& target_centres() const { return V_; }
  const Vector& alpha() const { return alpha_; }
  double sigma() const { return sigma_; }

 private:
  void check_inputs(const Matrix& X, const Matrix* Y) const;
  // Row n, column l: log α_l − ‖x_n − u_l‖²/(2σ²), the log mixture weights up to their row sum.
  Matrix log_input_weights(const Matrix& X) const;

  Matrix U_, V_;
  Vector alpha_;
  double sigma_;
};

}  // namespace kef::lscde
