#include "gaussian_kernel.hpp"

#include <cmath>
#include <vector>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/vector_exp.hpp"

namespace kef::gaussian {

namespace {
void check_dims(const Matrix& X, const Matrix& Y) {
  if (X.cols() != Y.cols())
    throw DataError("gaussian kernel: inputs of dimension " + std::to_string(X.cols()) + " and " +
                    std::to_string(Y.cols()));
}
}  // namespace

KernelCapabilities GaussianKernel::capabilities() const {
  KernelCapabilities c;
  c.differentiable_parameters = true;
  c.inducing_point_gradients = true;
  c.cross_derivatives = true;
  c.cross_second_derivatives = true;
  c.bounded_unit = true;
  return c;
}

void GaussianKernel::set_parameters(const Vector& theta) {
  Kernel::set_parameters(theta);
  if (!std::isfinite(theta[0])) throw NumericalError("gaussian kernel: non-finite log sigma");
  log_sigma_ = theta[0];
}

Matrix GaussianKernel::gram(const Matrix& X, const Matrix& Y) const {
  check_dims(X, Y);
  const double s2 = sigma() * sigma();
  return exp_of(squared_distances(X, Y) * (-0.5 / s2));
}

void GaussianKernel::evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const {
  const double inv_s2 = 1.0 / (sigma() * sigma());
  Matrix local;
  Matrix& value = phi ? *phi : local;
  value = exp_of(r * (-0.5 * inv_s2));
  if (dphi) *dphi = value * (-0.5 * inv_s2);
  if (d2phi) *d2phi = value * (0.25 * inv_s2 * inv_s2);
}

void GaussianKernel::derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const double s2 = sigma() * sigma(), inv_s2 = 1.0 / s2, inv_s4 = inv_s2 * inv_s2;
  out.value = exp_of(squared_distances(X, Y) * (-0.5 * inv_s2));
  if (order < 1) return;
  out.d1.resize(N * D, M);
  if (order >= 2) out.d2.resize(N * D, M);
  for (Index d = 0; d < D; ++d) {
    // u = x_d − y_d for every (n, m)
    const auto u = (X.col(d).replicate(1, M).rowwise() - Y.col(d).transpose()).array();
    out.d1.middleRows(d * N, N).array() = -inv_s2 * u * out.value.array();
    if (order >= 2) out.d2.middleRows(d * N, N).array() = (u.square() * inv_s4 - inv_s2) * out.value.array();
  }
}

void GaussianKernel::cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const double s2 = sigma() * sigma(), inv_s2 = 1.0 / s2, inv_s4 = inv_s2 * inv_s2;
  const Eigen::ArrayXXd k = exp_of(squared_distances(X, Y) * (-0.5 * inv_s2)).array();
  // Per coordinate, u_d = x_d − y_d, a_d = u_d k/σ⁴ and b_d = u_d²/σ² − 1, so that each of the D² blocks
  // below is one product (plus a term on the diagonal blocks): the blocks are the Nyström system's
  // features, written (N·D) x (M·D) per chunk of rows.
  std::vector<Eigen::ArrayXXd> u(static_cast<std::size_t>(D)), a(u.size()), b(u.size());
  for (Index d = 0; d < D; ++d) {
    const auto s = static_cast<std::size_t>(d);
    u[s] = (X.col(d).replicate(1, M).rowwise() - Y.col(d).transpose()).array();
    a[s] = u[s] * k * inv_s4;
    b[s] = u[s].square() * inv_s2 - 1.0;
  }
  out.dxdy.resize(N * D, M * D);
  out.d2xdy.resize(N * D, M * D);
  for (Index i = 0; i < D; ++i) {
    const auto si = static_cast<std::size_t>(i);
    for (Index j = 0; j < D; ++j) {
      const auto sj = static_cast<std::size_t>(j);
      // ∂_{x_i}∂_{y_j} k = (δ_ij/σ² − u_i u_j/σ⁴) k = δ_ij k/σ² − u_i a_j
      // ∂²_{x_i}∂_{y_j} k = (u_i² u_j/σ⁶ − u_j/σ⁴ − 2 δ_ij u_i/σ⁴) k = b_i a_j − 2 δ_ij a_i
      if (i == j) {
        out.dxdy.block(i * N, j * M, N, M) = k * inv_s2 - u[si] * a[sj];
        out.d2xdy.block(i * N, j * M, N, M) = b[si] * a[sj] - 2.0 * a[si];
      } else {
        out.dxdy.block(i * N, j * M, N, M) = -u[si] * a[sj];
        out.d2xdy.block(i * N, j * M, N, M) = b[si] * a[sj];
      }
    }
  }
}

void GaussianKernel::cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const double s = 1.0 / (sigma() * sigma());
  const Eigen::ArrayXXd k = exp_of(squared_distances(X, Y) * (-0.5 * s)).array();
  // k factorises over coordinates: for i ≠ j the two second derivatives act on different factors,
  // (s²u_i² − s)(s²u_j² − s) k; for i = j the fourth derivative of exp(−s u²/2) is s²(s²u⁴ − 6su² + 3).
  std::vector<Eigen::ArrayXXd> q(static_cast<std::size_t>(D));
  std::vector<Eigen::ArrayXXd> usq(static_cast<std::size_t>(D));
  for (Index d = 0; d < D; ++d) {
    auto& u2 = usq[static_cast<std::size_t>(d)];
    u2 = (X.col(d).replicate(1, M).rowwise() - Y.col(d).transpose()).array().square();
    q[static_cast<std::size_t>(d)] = (s * s * u2 - s) * k;
  }
  d2xd2y.resize(N * D, M * D);
  for (Index i = 0; i < D; ++i) {
    const auto& u2 = usq[static_cast<std::size_t>(i)];
    for (Index j = 0; j < D; ++j) {
      if (i == j)
        d2xd2y.block(i * N, j * M, N, M) = s * s * (s * s * u2.square() - 6.0 * s * u2 + 3.0) * k;
      else
        d2xd2y.block(i * N, j * M, N, M) = (s * s * u2 - s) * q[static_cast<std::size_t>(j)];
    }
  }
}

void GaussianKernel::backward(const Matrix& X, const Matrix& Y, const KernelStacks& adj, Vector* grad_params,
                              Matrix* grad_Y) const {
  check_dims(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const double s2 = sigma() * sigma(), inv_s2 = 1.0 / s2, inv_s4 = inv_s2 * inv_s2;
  const Eigen::ArrayXXd r = squared_distances(X, Y).array();
  const Eigen::ArrayXXd k = exp_of(r.matrix() * (-0.5 * inv_s2)).array();
  const bool has_v = adj.value.size() > 0, has_1 = adj.d1.size() > 0, has_2 = adj.d2.size() > 0;
  // S1 = Σ_d Ā1_d u_d and S2 = Σ_d Ā2_d (u_d²/σ⁴ − 1/σ²) appear in both gradients.
  Eigen::ArrayXXd S1 = Eigen::ArrayXXd::Zero(N, M), S2 = Eigen::ArrayXXd::Zero(N, M);
  Eigen::ArrayXXd P2 = Eigen::ArrayXXd::Zero(N, M);  // Σ_d Ā2_d (−4u_d²/σ⁴ + 2/σ²)
  std::vector<Eigen::ArrayXXd> u(static_cast<std::size_t>(D));
  for (Index d = 0; d < D; ++d) {
    auto& ud = u[static_cast<std::size_t>(d)];
    ud = (X.col(d).replicate(1, M).rowwise() - Y.col(d).transpose()).array();
    if (has_1) S1 += adj.d1.middleRows(d * N, N).array() * ud;
    if (has_2) {
      const auto a2 = adj.d2.middleRows(d * N, N).array();
      S2 += a2 * (ud.square() * inv_s4 - inv_s2);
      P2 += a2 * (-4.0 * ud.square() * inv_s4 + 2.0 * inv_s2);
    }
  }
  const Eigen::ArrayXXd Av = has_v ? Eigen::ArrayXXd(adj.value.array()) : Eigen::ArrayXXd::Zero(N, M);
  if (grad_params) {
    if (grad_params->size() != 1) grad_params->setZero(1);
    // d/d log σ of k, ∂_d k and ∂²_d k, contracted with their adjoints.
    (*grad_params)[0] +=
        (k * (Av * r * inv_s2 + S1 * (2.0 - r * inv_s2) * inv_s2 + P2 + S2 * r * inv_s2)).sum();
  }
  if (grad_Y) {
    if (grad_Y->rows() != M || grad_Y->cols() != D) grad_Y->setZero(M, D);
    const Eigen::ArrayXXd common = Av - S1 * inv_s2 + S2;
    for (Index j = 0; j < D; ++j) {
      const auto& uj = u[static_cast<std::size_t>(j)];
      Eigen::ArrayXXd T = -uj * inv_s2 * common;
      if (has_1) T -= adj.d1.middleRows(j * N, N).array() * inv_s2;
      if (has_2) T += 2.0 * uj * adj.d2.middleRows(j * N, N).array() * inv_s4;
      // u = x − y, so ∂/∂y = −∂/∂u.
      grad_Y->col(j) -= (T * k).colwise().sum().transpose().matrix();
    }
  }
}

}  // namespace kef::gaussian
