// With u = c² + ‖δ‖², δ = x − y and the powers p_r = u^(β−r):
//   ∂_{x_d} k            = 2β p1 δ_d
//   ∂²_{x_d} k           = 2β p1 + 4β(β−1) p2 δ_d²
//   ∂_{x_i}∂_{y_j} k     = −4β(β−1) p2 δ_i δ_j − 2β p1 δ_ij
//   ∂²_{x_i}∂_{y_j} k    = −8β(β−1)(β−2) p3 δ_i² δ_j − 4β(β−1) p2 δ_j − 8β(β−1) p2 δ_ij δ_i
//   ∂²_{x_i}∂²_{y_j} k   = 4φ₂ + 8φ₃ (δ_i² + δ_j²) + 16φ₄ δ_i² δ_j² + δ_ij (32φ₃ δ_i² + 8φ₂)
// with φ_r = β(β−1)···(β−r+1) p_r the r-th derivative of φ(r) = (c² + r)^β.
#include "imq_kernel.hpp"

#include <string>
#include <vector>

#include "kef/error.hpp"

namespace kef::imq {

namespace {
void check_dims(const Matrix& X, const Matrix& Y) {
  if (X.cols() != Y.cols())
    throw DataError("imq kernel: inputs of dimension " + std::to_string(X.cols()) + " and " +
                    std::to_string(Y.cols()));
}

Eigen::ArrayXXd difference(const Matrix& X, const Matrix& Y, Index d) {
  return (X.col(d).replicate(1, Y.rows()).rowwise() - Y.col(d).transpose()).array();
}
}  // namespace

KernelCapabilities ImqKernel::capabilities() const {
  KernelCapabilities c;
  c.cross_derivatives = true;
  c.cross_second_derivatives = true;
  c.bounded_unit = bounded_;  // 0 < k ≤ c^(2β), which is ≤ 1 exactly when c ≥ 1
  return c;
}

// Accumulated coordinate by coordinate rather than by ‖x‖² + ‖y‖² − 2xᵀy: close points (where the
// derivatives are largest relative to u) keep their digits.
Matrix ImqKernel::base(const Matrix& X, const Matrix& Y) const {
  Matrix u = Matrix::Constant(X.rows(), Y.rows(), c2_);
  for (Index d = 0; d < X.cols(); ++d) u.array() += difference(X, Y, d).square();
  return u;
}

Matrix ImqKernel::gram(const Matrix& X, const Matrix& Y) const {
  check_dims(X, Y);
  return base(X, Y).array().pow(beta_).matrix();
}

void ImqKernel::evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const {
  const Eigen::ArrayXXd u = r.array() + c2_;
  const Eigen::ArrayXXd value = u.pow(beta_);
  if (phi) *phi = value.matrix();
  if (!dphi && !d2phi) return;
  const Eigen::ArrayXXd p1 = value / u;  // u^(β−1) without a second pow
  if (dphi) *dphi = (beta_ * p1).matrix();
  if (d2phi) *d2phi = (beta_ * (beta_ - 1.0) * p1 / u).matrix();
}

void ImqKernel::derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const Eigen::ArrayXXd u = base(X, Y).array();
  out.value = u.pow(beta_).matrix();
  if (order < 1) return;
  // u^(β−1), u^(β−2) from the value: one pow per entry instead of three.
  const Eigen::ArrayXXd p1 = out.value.array() / u;
  Eigen::ArrayXXd p2;
  out.d1.resize(N * D, M);
  if (order >= 2) {
    p2 = p1 / u;
    out.d2.resize(N * D, M);
  }
  const double b2 = 2.0 * beta_, b4 = 4.0 * beta_ * (beta_ - 1.0);
  for (Index d = 0; d < D; ++d) {
    const Eigen::ArrayXXd delta = difference(X, Y, d);
    out.d1.middleRows(d * N, N).array() = b2 * p1 * delta;
    if (order >= 2) out.d2.middleRows(d * N, N).array() = b2 * p1 + b4 * p2 * delta.square();
  }
}

void ImqKernel::cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const Eigen::ArrayXXd u = base(X, Y).array();
  const Eigen::ArrayXXd p1 = u.pow(beta_) / u, p2 = p1 / u, p3 = p2 / u;
  std::vector<Eigen::ArrayXXd> delta(static_cast<std::size_t>(D));
  for (Index d = 0; d < D; ++d) delta[static_cast<std::size_t>(d)] = difference(X, Y, d);
  const double b2 = 2.0 * beta_, b4 = 4.0 * beta_ * (beta_ - 1.0), b8 = 8.0 * beta_ * (beta_ - 1.0) * (beta_ - 2.0);
  out.dxdy.resize(N * D, M * D);
  out.d2xdy.resize(N * D, M * D);
  for (Index i = 0; i < D; ++i) {
    const auto& di = delta[static_cast<std::size_t>(i)];
    for (Index j = 0; j < D; ++j) {
      const auto& dj = delta[static_cast<std::size_t>(j)];
      const double kron = i == j ? 1.0 : 0.0;
      out.dxdy.block(i * N, j * M, N, M) = -b4 * p2 * di * dj - kron * b2 * p1;
      out.d2xdy.block(i * N, j * M, N, M) = -b8 * p3 * di.square() * dj - b4 * p2 * dj - kron * 2.0 * b4 * p2 * di;
    }
  }
}

void ImqKernel::cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const Eigen::ArrayXXd u = base(X, Y).array();
  const double b = beta_;
  const Eigen::ArrayXXd p2 = u.pow(b) / u.square();
  const Eigen::ArrayXXd phi2 = b * (b - 1.0) * p2;
  const Eigen::ArrayXXd phi3 = (b - 2.0) * phi2 / u;
  const Eigen::ArrayXXd phi4 = (b - 3.0) * phi3 / u;
  std::vector<Eigen::ArrayXXd> dsq(static_cast<std::size_t>(D));
  for (Index d = 0; d < D; ++d) dsq[static_cast<std::size_t>(d)] = difference(X, Y, d).square();
  d2xd2y.resize(N * D, M * D);
  for (Index i = 0; i < D; ++i) {
    const auto& si = dsq[static_cast<std::size_t>(i)];
    for (Index j = 0; j < D; ++j) {
      const auto& sj = dsq[static_cast<std::size_t>(j)];
      auto block = d2xd2y.block(i * N, j * M, N, M).array();
      block = 4.0 * phi2 + 8.0 * phi3 * (si + sj) + 16.0 * phi4 * si * sj;
      if (i == j) block += 32.0 * phi3 * si + 8.0 * phi2;
    }
  }
}

}  // namespace kef::imq
