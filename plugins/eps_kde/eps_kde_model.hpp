#pragma once
// The conditional density of `eps_kde` (ε-neighbourhood KDE, Sugiyama et al. 2010; docs/math.md
// §17.2): with the training pairs (x_i, y_i), a radius ε and a bandwidth σ,
//
//   I(x) = { i : ‖x − x_i‖ ≤ ε },   p̂(y | x) = (1/|I(x)|) Σ_{i ∈ I(x)} N(y; y_i, σ² I).
//
// When no training input lies within ε of x (I(x) empty) the estimate falls back to the marginal
// KDE of y over every training pair, (1/n) Σ_i N(y; y_i, σ² I): the density that ignores x, rather
// than no density at all (a query outside the data's reach still gets a finite log-likelihood).
// The density is normalised exactly (log_normalizer() = 0); its score in y, Laplacian and draws follow
// from the mixture. Each row depends on that row alone: bitwise the same for any batch or thread count.
#include <string>
#include <vector>

#include "kef/conditional_model.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::eps_kde {

// The neighbourhood of each query: the training rows within ε (empty: none).
std::vector<std::vector<Index>> neighbourhoods(const Matrix& train_inputs, const Matrix& X, double epsilon);

// log p̂(y_n | x_n) for the pairs (X, Y), given the training pairs and the neighbourhoods of X.
Vector eps_kde_log_density(const Matrix& train_targets, const std::vector<std::vector<Index>>& hoods,
                           const Matrix& Y, double sigma);

class EpsKdeModel final : public Model, public ConditionalModel {
 public:
  EpsKdeModel(Matrix inputs, Matrix targets, double epsilon, double sigma);

  Index dim() const override { return input_dim() + target_dim(); }
  std::string type_name() const override { return "eps_kde"; }
  FacetSet facets() const override;
  Vector log_unnormalized(const Matrix& X) const override;  // ConfigError: a conditional model
  const ConditionalModel* conditional() const override { return this; }

  Index input_dim() const override { return X_.cols(); }
  Index target_dim() const override { return Y_.cols(); }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override;  // normalised
  // The conditional overrides below share their names with Model's unconditional functions, which
  // stay visible beside them.
  using Model::score;
  using Model::score_and_laplacian;
  using Model::sample;
  using Model::log_normalizer;
  Matrix score(const Matrix& X, const Matrix& Y) const override;
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override;
  // Row by row: one uniform_int picks a neighbour (a training pair when there is none), then d_y normals.
  Matrix sample(const Matrix& X, RandomStream& rng) const override;
  std::optional<Vector> log_normalizer(const Matrix& X) const override { return Vector::Zero(X.rows()); }
  // |I(x_n)| per row (0: the marginal fallback applies).
  std::vector<Index> neighbour_counts(const Matrix& X) const;

  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;
  static ModelPtr load(const ModelReader& reader, Registry& registry);

  double epsilon() const { return epsilon_; }
  double sigma() const { return sigma_; }

 private:
  void check_inputs(const Matrix& X, const Matrix* Y) const;
  std::vector<std::vector<Index>> hoods_or_all(const Matrix& X) const;

  Matrix X_, Y_;
  double epsilon_, sigma_;
};

}  // namespace kef::eps_kde
