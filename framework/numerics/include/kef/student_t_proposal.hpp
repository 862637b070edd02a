#pragma once
// A multivariate Student-t proposal fitted to data: location the data's mean, scale matrix its
// covariance (for ν > 2 the proposal's own covariance is then ν/(ν − 2) times the data's, wider than
// the data on purpose), few degrees of freedom so that its polynomial tails dominate the Gaussian-like
// tails of a fitted model and importance ratios stay bounded there (docs/math.md §8).
#include "kef/column_summary.hpp"
#include "kef/proposal.hpp"

namespace kef {

class StudentTProposal final : public Proposal {
 public:
  // scale: symmetric positive definite D x D; dof > 0. ConfigError when these are invalid.
  StudentTProposal(Vector location, const Matrix& scale, double dof);
  // Mean and covariance of the rows of X (a ridge of 1e-6 times the mean variance keeps a data set
  // with a constant or collinear column usable). DataError for fewer than 2 rows or non-finite data.
  static StudentTProposal fit(const Matrix& X, double dof);
  // The same from the rows' summary (kef/column_summary.hpp: a training split read by rows).
  static StudentTProposal fit(const ColumnSummary& data, double dof);

  Index dim() const override { return location_.size(); }
  Matrix sample(Index n, RandomStream& rng) const override;
  Vector log_density(const Matrix& X) const override;
  Matrix gradient(const Matrix& X) const override;
  std::string describe() const override;

  const Vector& location() const { return location_; }
  double dof() const { return dof_; }

 private:
  // Rows of L⁻¹(x − μ)ᵀ, Σ = L Lᵀ.
  Matrix whiten(const Matrix& X) const;
  Vector location_;
  Matrix chol_;  // lower-triangular L
  double dof_;
  double log_norm_;  // log of the density's normalising constant (including −log|L|)
};

}  // namespace kef
