#include "truth_model.hpp"

#include <algorithm>
#include <utility>

#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef::synthetic {

namespace {
constexpr Index kChunkRows = 512;
}

TruthModel::TruthModel(DensityPtr density, std::optional<Matrix> rotation, std::string type_name)
    : density_(std::move(density)), rotation_(std::move(rotation)), type_name_(std::move(type_name)) {}

Matrix TruthModel::to_local(const Matrix& X, const char* what) const {
  if (X.cols() != dim()) {
    throw DataError(type_name_ + " truth: " + what + " of points with " + std::to_string(X.cols()) +
                    " columns (expected " + std::to_string(dim()) + ")");
  }
  return rotation_ ? Matrix(X * *rotation_) : X;
}

template <class F>
void TruthModel::for_each_row(const Matrix& Z, F&& f) const {
  const Index n = Z.rows();
  const int threads = n > kChunkRows ? default_threads() : 1;
  parallel_for_chunks(n, kChunkRows, threads, [&](Index begin, Index len) {
    Vector z(Z.cols());
    for (Index i = begin; i < begin + len; ++i) {
      z = Z.row(i).transpose();
      f(i, z);
    }
  });
}

Vector TruthModel::log_unnormalized(const Matrix& X) const {
  const Matrix Z = to_local(X, "log density");
  Vector out(Z.rows());
  for_each_row(Z, [&](Index i, const Vector& z) { out[i] = density_->log_density(z); });
  return out;
}

Matrix TruthModel::score(const Matrix& X) const {
  const Matrix Z = to_local(X, "score");
  Matrix out(Z.rows(), Z.cols());
  for_each_row(Z, [&](Index i, const Vector& z) {
    Vector grad;
    density_->derivatives(z, grad, nullptr);
    out.row(i) = grad.transpose();
  });
  // Rows are gradients in local coordinates; ∇_x = Q ∇_z, i.e. row-wise S_x = S_z Qᵀ.
  if (rotation_) out = out * rotation_->transpose();
  return out;
}

void TruthModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  const Matrix Z = to_local(X, "score and Laplacian");
  score.resize(Z.rows(), Z.cols());
  laplacian.resize(Z.rows(), Z.cols());
  for_each_row(Z, [&](Index i, const Vector& z) {
    Vector grad;
    Matrix h;
    density_->derivatives(z, grad, &h);
    score.row(i) = grad.transpose();
    if (rotation_) {
      // diag(Q H Qᵀ)_j = q_jᵀ H q_j with q_j the j-th row of Q.
      const Matrix& q = *rotation_;
      laplacian.row(i) = (q * h).cwiseProduct(q).rowwise().sum().transpose();
    } else {
      laplacian.row(i) = h.diagonal().transpose();
    }
  });
  if (rotation_) score = score * rotation_->transpose();
}

Matrix TruthModel::hessian(const Vector& x) const {
  const Matrix z = to_local(x.transpose(), "Hessian");
  Vector grad;
  Matrix h;
  density_->derivatives(z.row(0).transpose(), grad, &h);
  if (!rotation_) return h;
  return *rotation_ * h * rotation_->transpose();
}

std::vector<bool> TruthModel::in_support(const Matrix& X) const {
  const Matrix Z = to_local(X, "support test");
  std::vector<bool> out(Z.rows());
  // std::vector<bool> packs bits, so rows are written from one thread.
  Vector z(Z.cols());
  for (Index i = 0; i < Z.rows(); ++i) {
    z = Z.row(i).transpose();
    out[i] = density_->in_support(z);
  }
  return out;
}

Matrix TruthModel::sample(Index n, RandomStream& rng) const {
  Matrix Z = density_->sample(n, rng);
  if (!rotation_) return Z;
  return Z * rotation_->transpose();  // x = Q z, row-wise
}

std::string TruthModel::describe() const {
  std::string text = "exact density of " + type_name_ + ": " + density_->describe();
  if (rotation_) text += "; rotated by a random orthogonal Q (log p(Q^T x))";
  return text;
}

Matrix random_orthogonal(Index dim, RandomStream& rng) {
  const Matrix a = rng.normal_matrix(dim, dim);
  Eigen::HouseholderQR<Matrix> qr(a);
  Matrix q = qr.householderQ();
  const Matrix r = qr.matrixQR().triangularView<Eigen::Upper>();
  for (Index j = 0; j < dim; ++j)
    if (r(j, j) < 0) q.col(j) = -q.col(j);
  return q;
}

}  // namespace kef::synthetic
