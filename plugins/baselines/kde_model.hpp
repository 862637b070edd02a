#pragma once
// The Gaussian kernel density estimate of `kde` (docs/math.md §14.4): with the n training rows x_m,
// their covariance Σ̂ = L Lᵀ and a bandwidth factor h,
//
//   p(x) = (1/n) Σ_m N(x; x_m, h² Σ̂),
//   ∇ log p  = L⁻ᵀ (ȳ − y) / h²,         y = L⁻¹ x,  ȳ = Σ_m w_m y_m,  w_m = softmax_m(−‖y − y_m‖²/(2h²))
//   ∇² log p = −Σ̂⁻¹/h² + Σ_m w_m (g_m − ḡ)(g_m − ḡ)ᵀ / h⁴,   g_m = L⁻ᵀ y_m = Σ̂⁻¹ x_m.
//
// Evaluation is blocked: each query row streams over the centres in blocks of kCentreBlock rows with
// a running log-sum-exp (max and rescaled sums), so memory is O(n·D) for the model plus O(block) per
// query, never O(n²) or O(queries · n). A row's value depends on that row alone (fixed blocks, plain
// loops), hence not on the batch it comes in nor on the thread count. Sampling is exact: a centre
// uniformly, then x_m + h L z.
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::baselines {

constexpr Index kCentreBlock = 512;

// The centres in whitened coordinates and the factor of Σ̂: what every evaluation needs, shared by
// the model and the bandwidth search.
class KdeGeometry {
 public:
  // NumericalError when the covariance is not positive definite.
  KdeGeometry(Matrix centres, Matrix covariance);
  Index rows() const { return centres_.rows(); }
  Index dim() const { return centres_.cols(); }
  const Matrix& centres() const { return centres_; }
  const Matrix& covariance() const { return covariance_; }
  const Matrix& chol() const { return chol_; }

  // log p_h(x) for every row of X and every h in `bandwidths` (rows x G), blocked as above.
  Matrix log_density_grid(const Matrix& X, const std::vector<double>& bandwidths) const;

  // Per query row (y = L⁻¹ x in `y`): log Σ_m exp(−‖y − y_m‖²/(2h²)) and, when ybar is not null,
  // the weighted mean ȳ of the whitened centres.
  double log_kernel_sum(const double* y, double h, double* ybar, std::vector<double>& buffer) const;
  // Σ_m w_m (g_m − ḡ)(g_m − ḡ)ᵀ (D x D, only the diagonal when diagonal_only) given the row's lse.
  Matrix spread(const double* y, double h, double lse, const Vector& gbar, bool diagonal_only,
                std::vector<double>& buffer) const;
  // log of the density's constant for bandwidth h: −log n − (D/2) log 2π − D log h − log |L|.
  double log_constant(double h) const;
  void whiten(const double* x, double* y) const;  // y = L⁻¹ x
  const Matrix& precision() const { return precision_; }

 private:
  Matrix centres_, covariance_, chol_, precision_;
  RowMatrix whitened_;  // y_m = L⁻¹ x_m, one per row (contiguous for the streaming loops)
  RowMatrix mapped_;    // g_m = L⁻ᵀ y_m
  double log_det_chol_ = 0;
};

class KdeModel final : public Model {
 public:
  // rule: how the bandwidth was chosen (provenance: "scott", "silverman", "validation", "given").
  KdeModel(Matrix centres, Matrix covariance, double bandwidth, std::string rule);

  Index dim() const override { return geometry_.dim(); }
  std::string type_name() const override { return "kde"; }
  Vector log_unnormalized(const Matrix& X) const override;
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  bool has_hessian() const override { return true; }
  Matrix hessian(const Vector& x) const override;
  std::optional<double> log_normalizer() const override { return 0.0; }
  bool can_sample() const override { return true; }
  // Row by row: one uniform_int picks the centre, then D normals (rng.normal()).
  Matrix sample(Index n, RandomStream& rng) const override;
  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;

  const KdeGeometry& geometry() const { return geometry_; }
  double bandwidth() const { return bandwidth_; }

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  void check_input(const Matrix& X) const;
  // The score of one row (x-space) and, optionally, ḡ for the second-derivative pass; returns lse.
  double row_score(const double* x, double* y, double* s, Vector* gbar, std::vector<double>& buffer) const;

  KdeGeometry geometry_;
  double bandwidth_;
  std::string rule_;
};

}  // namespace kef::baselines
