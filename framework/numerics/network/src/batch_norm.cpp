#include "kef/network/batch_norm.hpp"

#include <cmath>

#include "kef/error.hpp"

namespace kef::network {

BatchNorm::BatchNorm(Index width, double epsilon)
    : width_(width), epsilon_(epsilon), mean_(Vector::Zero(width)), variance_(Vector::Ones(width)) {
  if (width < 1)
    throw Error("network: batch norm needs a positive width (got " + std::to_string(width) + ")");
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    throw Error("network: batch norm's epsilon must be a finite number > 0 (got " + std::to_string(epsilon) +
                ")");
}

std::string BatchNorm::name() const { return "batch norm " + std::to_string(width_); }

void BatchNorm::initialize(double* theta, RandomStream& /*rng*/) const {
  Eigen::Map<Vector>(theta, 2 * width_).setZero();  // scale e^0 = 1, shift 0
}

void BatchNorm::set_running_statistics(const Vector& mean, const Vector& variance) {
  if (mean.size() != width_ || variance.size() != width_)
    throw Error("network: " + name() + " takes running statistics of size " + std::to_string(width_) +
                " (got " + std::to_string(mean.size()) + " and " + std::to_string(variance.size()) + ")");
  for (Index j = 0; j < width_; ++j)
    if (!std::isfinite(mean[j]) || !std::isfinite(variance[j]) || variance[j] < 0.0)
      throw NumericalError("network: " + name() + ": running statistics of unit " + std::to_string(j) +
                           " are not a finite mean and a variance >= 0");
  mean_ = mean;
  variance_ = variance;
}

void BatchNorm::update_statistics(const LayerTape& tape, double momentum) {
  if (tape.mean.size() != width_)
    throw Error("network: " + name() + ": update_running_statistics needs the tape of a training-mode pass");
  if (!(momentum > 0.0 && momentum <= 1.0))
    throw Error("network: the running-statistics momentum must be in (0, 1] (got " +
                std::to_string(momentum) + ")");
  mean_ = (1.0 - momentum) * mean_ + momentum * tape.mean;
  variance_ = (1.0 - momentum) * variance_ + momentum * tape.variance;
}

void BatchNorm::forward(const double* theta, const Pass& pass, bool /*seeded*/, Matrix& h,
                        LayerTape* tape) const {
  const Index N = pass.n;
  const Eigen::Map<const Vector> log_scale(theta, width_), shift(theta + width_, width_);
  if (pass.training) {
    if (pass.order > 0)
      throw Error("network: " + name() + " propagates input derivatives in evaluation mode only");
    if (N < 1) throw DataError("network: " + name() + " in training mode needs at least one row");
    const Vector mean = h.colwise().mean().transpose();
    h.rowwise() -= mean.transpose();
    const Vector variance = h.array().square().colwise().mean().transpose();
    const Vector inv_std = (variance.array() + epsilon_).rsqrt().matrix();
    h.array().rowwise() *= inv_std.transpose().array();  // x̂
    if (tape) {
      tape->input = h;
      tape->mean = mean;
      tape->variance = variance;
      tape->inv_std = inv_std;
    }
    h.array().rowwise() *= log_scale.array().exp().transpose();
    h.rowwise() += shift.transpose();
    return;
  }
  const Vector a = (log_scale.array().exp() * (variance_.array() + epsilon_).rsqrt()).matrix();
  h.topRows(N).rowwise() -= mean_.transpose();
  if (tape) {  // the centred input and the per-unit factor: backward needs no running statistics
    tape->input = h;
    tape->inv_std = a;
  }
  h.array().rowwise() *= a.transpose().array();  // every channel: values and derivatives
  h.topRows(N).rowwise() += shift.transpose();
}

void BatchNorm::backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint,
                         double* grad, Matrix* /*grad_X*/) const {
  const Index N = pass.n;
  const Eigen::Map<const Vector> log_scale(theta, width_);
  Eigen::Map<Vector> g_log_scale(grad, width_), g_shift(grad + width_, width_);
  const Vector scale = log_scale.array().exp().matrix();
  g_shift += adjoint.topRows(N).colwise().sum().transpose();
  if (pass.training) {
    // y = e^γ x̂ + β, x̂ = (x − m)·r, r = (v + ε)^{-1/2}: with u = ȳ e^γ,
    //   x̄ = r (u − mean(u) − x̂ mean(u x̂)).
    const Matrix& xhat = tape.input;
    g_log_scale += (adjoint.cwiseProduct(xhat).colwise().sum().transpose()).cwiseProduct(scale);
    adjoint.array().rowwise() *= scale.transpose().array();
    const Vector mu = adjoint.colwise().mean().transpose();
    const Vector mux = adjoint.cwiseProduct(xhat).colwise().mean().transpose();
    adjoint.rowwise() -= mu.transpose();
    adjoint -= xhat * mux.asDiagonal();
    adjoint.array().rowwise() *= tape.inv_std.transpose().array();
    return;
  }
  const Vector& a = tape.inv_std;
  g_log_scale += adjoint.cwiseProduct(tape.input).colwise().sum().transpose().cwiseProduct(a);
  adjoint.array().rowwise() *= a.transpose().array();
}

}  // namespace kef::network
