#pragma once
// The conditional density of `kcef`, the kernel conditional exponential family (Arbel & Gretton 2018;
// docs/math.md §17.4): log p~(y | x) = f(x, y) + log q0(y) with q0 = N(0, σ0² I) and f in the RKHS of
// the product kernel
//
//   k((x, y), (x', y')) = k_x(x, x') k_y(y, y'),
//   k_x(x, x') = exp(−Σ_d (x_d − x'_d)²/(2σ_x,d²)),   k_y(y, y') = exp(−‖y − y'‖²/(2σ_y²)).
//
// The fit (score matching in y) puts f in the span of the y-derivatives of k at the n training pairs
// (x_a, y_a): with u = y_a − y and s = 1/σ_y²,
//
//   f(x, y) = Σ_a k_x(x_a, x) g_a(y),   g_a(y) = Σ_i c_ai ∂_(y_a,i) k_y(y_a, y) + e Σ_i ∂²_(y_a,i) k_y(y_a,
//   y)
//          = Σ_a k_x(x_a, x) k_y(y_a, y) [−s c_a·u + e (s²‖u‖² − s d_y)].
//
// The normaliser is not known: conditional_log_likelihood normalises per x by quadrature (1-D y) or
// importance sampling. Each row's value depends on that row alone: bitwise the same for any batch
// and thread count.
#include <string>

#include "kef/conditional_model.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::kcef {

struct KcefParameters {
  Matrix basis_inputs;   // x_a, n x d_x
  Matrix basis_targets;  // y_a, n x d_y
  Matrix coefficients;   // c_ai, n x d_y
  double xi_weight = 0;  // e (the fit gives −1/(nλ))
  Vector sigma_x;        // d_x bandwidths
  double sigma_y = 1;
  double q0_sd = 2;  // σ0
};

class KcefModel final : public Model, public ConditionalModel {
 public:
  // ModelFileError when the shapes disagree or a bandwidth is not positive and finite.
  explicit KcefModel(KcefParameters p);

  Index dim() const override { return input_dim() + target_dim(); }
  std::string type_name() const override { return "kcef"; }
  FacetSet facets() const override;
  // Whole rows have no density here: a conditional model (ConfigError).
  Vector log_unnormalized(const Matrix& X) const override;
  const ConditionalModel* conditional() const override { return this; }

  Index input_dim() const override { return p_.basis_inputs.cols(); }
  Index target_dim() const override { return p_.basis_targets.cols(); }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override;
  // The conditional overrides below share their names with Model's unconditional functions, which
  // stay visible beside them.
  using Model::score;
  using Model::score_and_laplacian;
  Matrix score(const Matrix& X, const Matrix& Y) const override;
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override;

  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;
  static ModelPtr load(const ModelReader& reader, Registry& registry);

  const KcefParameters& parameters() const { return p_; }

 private:
  // Row n: log p~ into `value`, ∇_y into `score`, ∂²/∂y_j² into `laplacian`; null outputs are skipped.
  void evaluate(const Matrix& X, const Matrix& Y, Vector* value, Matrix* score, Matrix* laplacian) const;

  KcefParameters p_;
};

// k_x(A_n, B_m) for the anisotropic Gaussian of bandwidths sigma_x.
Matrix input_gram(const Matrix& A, const Matrix& B, const Vector& sigma_x);

}  // namespace kef::kcef
