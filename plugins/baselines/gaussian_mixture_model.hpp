#pragma once
// A normalised mixture of K Gaussians with full covariances, the model of `gaussian_fit` (K = 1) and
// `gmm` (docs/math.md §14.1):
//
//   log p(x) = logsumexp_k [ log π_k + log N(x; μ_k, Σ_k) ],   Σ_k = L_k L_kᵀ
//   ∇ log p  = Σ_k γ_k s_k,        s_k = −Σ_k⁻¹ (x − μ_k),   γ_k = responsibilities
//   ∇² log p = Σ_k γ_k [ −Σ_k⁻¹ + (s_k − s)(s_k − s)ᵀ ]
//
// Every value is exact (log Z = 0), every row is evaluated on its own (plain triangular solves, no
// batch-dependent kernels), and sampling is exact (a component by its weight, then μ_k + L_k z).
// A diagonal-covariance mixture is the same model with zero off-diagonals; `covariance` only
// records which kind was fitted.
#include <memory>
#include <string>
#include <vector>

#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::baselines {

struct MixtureParameters {
  Vector weights;                   // K, positive, summing to 1
  Matrix means;                     // K x D
  std::vector<Matrix> covariances;  // K of D x D, symmetric positive definite
  bool diagonal = false;            // fitted with diagonal covariances (provenance, BIC)
  Index components() const { return weights.size(); }
  Index dim() const { return means.cols(); }
};

class GaussianMixtureModel final : public Model {
 public:
  // type: "gaussian_fit" or "gmm" (the saved type and its loader). NumericalError naming the
  // component when a covariance is not positive definite or a weight is not positive and finite.
  GaussianMixtureModel(std::string type, MixtureParameters parameters);

  Index dim() const override { return params_.dim(); }
  std::string type_name() const override { return type_; }
  Vector log_unnormalized(const Matrix& X) const override;
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  bool has_hessian() const override { return true; }
  Matrix hessian(const Vector& x) const override;
  std::optional<double> log_normalizer() const override { return 0.0; }
  bool can_sample() const override { return true; }
  // Row by row: one uniform picks the component, then D normals (rng.normal()).
  Matrix sample(Index n, RandomStream& rng) const override;
  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;

  const MixtureParameters& parameters() const { return params_; }
  // log π_k + log N(x_i; μ_k, Σ_k) for every row and component (N x K): what EM's E-step needs.
  Matrix log_terms(const Matrix& X) const;

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  struct Row;  // per-row workspace
  // Terms, their log-sum-exp (unless terms_only), responsibilities and per-component scores of one row.
  void evaluate_row(const double* x, Row& row, bool scores, bool terms_only = false) const;
  void check_input(const Matrix& X) const;

  std::string type_;
  MixtureParameters params_;
  std::vector<Matrix> chol_;       // L_k
  std::vector<Matrix> precision_;  // Σ_k⁻¹ = L_k⁻ᵀ L_k⁻¹
  Vector log_constant_;            // log π_k − (D/2) log 2π − Σ_d log (L_k)_dd
};

}  // namespace kef::baselines
