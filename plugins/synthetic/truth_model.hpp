#pragma once
// The exact density of a synthetic source as a kef::Model: batches over the rows of X, and the
// optional rotation x = Q z (log p_rot(x) = log p(Qᵀx), score Q ∇log p(Qᵀx), Hessian Q H Qᵀ), so
// every per-point density gets both for free.
#include <optional>
#include <string>
#include <vector>

#include "densities.hpp"
#include "kef/model.hpp"

namespace kef::synthetic {

class TruthModel final : public Model {
 public:
  // rotation: an orthogonal Q (dim x dim), or empty for the identity.
  TruthModel(DensityPtr density, std::optional<Matrix> rotation, std::string type_name);

  Index dim() const override { return density_->dim(); }
  std::string type_name() const override { return type_name_; }

  Vector log_unnormalized(const Matrix& X) const override;
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;

  bool has_hessian() const override { return true; }
  Matrix hessian(const Vector& x) const override;

  // log_unnormalized already is the normalised log density.
  std::optional<double> log_normalizer() const override { return 0.0; }

  bool bounded_support() const override { return density_->bounded_support(); }
  std::vector<bool> in_support(const Matrix& X) const override;

  bool can_sample() const override { return true; }
  Matrix sample(Index n, RandomStream& rng) const override;

  std::string describe() const override;

  const std::optional<Matrix>& rotation() const { return rotation_; }

 private:
  // Rows of X in the density's own coordinates: z = Qᵀx, i.e. Z = X Q.
  Matrix to_local(const Matrix& X, const char* what) const;
  // Runs f(i, z_i) over the rows in fixed chunks (parallel when worthwhile; rows are independent,
  // so the result does not depend on the thread count).
  template <class F>
  void for_each_row(const Matrix& Z, F&& f) const;

  DensityPtr density_;
  std::optional<Matrix> rotation_;
  std::string type_name_;
};

// A Haar-distributed orthogonal matrix: QR of a Gaussian matrix, with the signs of R's diagonal
// moved into Q (without that fix the distribution is not uniform).
Matrix random_orthogonal(Index dim, RandomStream& rng);

}  // namespace kef::synthetic
