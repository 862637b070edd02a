#include "kef/student_t_proposal.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "kef/error.hpp"

namespace kef {

StudentTProposal::StudentTProposal(Vector location, const Matrix& scale, double dof)
    : location_(std::move(location)), dof_(dof) {
  const Index D = location_.size();
  if (D < 1 || scale.rows() != D || scale.cols() != D)
    throw ConfigError("Student-t proposal: the scale matrix must be " + std::to_string(D) + " x " +
                      std::to_string(D));
  if (!(dof > 0.0) || !std::isfinite(dof))
    throw ConfigError("Student-t proposal: degrees of freedom must be a finite number > 0 (got " +
                      std::to_string(dof) + ")");
  Eigen::LLT<Matrix> llt(scale);
  if (llt.info() != Eigen::Success || !location_.allFinite())
    throw DataError(
        "Student-t proposal: the scale matrix is not positive definite or the location is not finite");
  chol_ = llt.matrixL();
  const double d = static_cast<double>(D);
  log_norm_ = std::lgamma(0.5 * (dof_ + d)) - std::lgamma(0.5 * dof_) -
              0.5 * d * std::log(dof_ * std::numbers::pi) - chol_.diagonal().array().log().sum();
}

StudentTProposal StudentTProposal::fit(const Matrix& X, double dof) { return fit(summarize_columns(X), dof); }

StudentTProposal StudentTProposal::fit(const ColumnSummary& data, double dof) {
  if (data.rows < 2)
    throw DataError("Student-t proposal: needs at least 2 data rows to fit (got " + std::to_string(data.rows) +
                    ")");
  if (!data.finite) throw DataError("Student-t proposal: the data are not finite");
  Matrix cov = data.covariance();
  const double ridge = 1e-6 * std::max(cov.diagonal().mean(), 1e-300);
  cov.diagonal().array() += ridge;
  return StudentTProposal(data.mean, cov, dof);
}

Matrix StudentTProposal::whiten(const Matrix& X) const {
  const Matrix C = (X.rowwise() - location_.transpose()).transpose();  // D x n
  return chol_.triangularView<Eigen::Lower>().solve(C).transpose();
}

Matrix StudentTProposal::sample(Index n, RandomStream& rng) const {
  const Index D = dim();
  // x = μ + L z / sqrt(g/ν), z ~ N(0, I), g ~ χ²_ν = 2 Gamma(ν/2). Per row: D normals, then one gamma.
  Matrix Z(n, D);
  Vector g(n);
  for (Index i = 0; i < n; ++i) {
    for (Index d = 0; d < D; ++d) Z(i, d) = rng.normal();
    g[i] = 2.0 * rng.gamma(0.5 * dof_);
  }
  Matrix X = Z * chol_.transpose();
  for (Index i = 0; i < n; ++i) X.row(i) *= 1.0 / std::sqrt(g[i] / dof_);
  X.rowwise() += location_.transpose();
  return X;
}

Vector StudentTProposal::log_density(const Matrix& X) const {
  const double d = static_cast<double>(dim());
  const Vector q = whiten(X).rowwise().squaredNorm();
  return (log_norm_ - 0.5 * (dof_ + d) * (q.array() / dof_).log1p()).matrix();
}

Matrix StudentTProposal::gradient(const Matrix& X) const {
  // ∇ log q = −(ν + D)/(ν + δ²) Σ⁻¹(x − μ), δ² = ‖L⁻¹(x − μ)‖².
  const double d = static_cast<double>(dim());
  const Matrix W = whiten(X);  // n x D
  const Vector q = W.rowwise().squaredNorm();
  // Σ⁻¹(x − μ) = L⁻ᵀ w.
  Matrix G = chol_.transpose().triangularView<Eigen::Upper>().solve(W.transpose()).transpose();
  for (Index i = 0; i < X.rows(); ++i) G.row(i) *= -(dof_ + d) / (dof_ + q[i]);
  return G;
}

std::string StudentTProposal::describe() const {
  std::ostringstream os;
  os << "Student-t (" << dof_ << " degrees of freedom) fitted to the data";
  return os.str();
}

}  // namespace kef
