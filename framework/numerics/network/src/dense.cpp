#include "kef/network/dense.hpp"

#include <algorithm>
#include <cmath>

#include "kef/error.hpp"

namespace kef::network {

WeightInit WeightInit::glorot_uniform(Index fan_in, Index fan_out) {
  return {Kind::uniform, std::sqrt(6.0 / static_cast<double>(fan_in + fan_out))};
}

WeightInit WeightInit::lecun_normal(Index fan_in) {
  return normal(1.0 / std::sqrt(static_cast<double>(fan_in)));
}

void WeightInit::draw(double* w, Index count, RandomStream& rng) const {
  if (kind == Kind::normal)
    for (Index i = 0; i < count; ++i) w[i] = scale * rng.normal();
  else
    for (Index i = 0; i < count; ++i) w[i] = scale * (2.0 * rng.uniform() - 1.0);
}

Dense::Dense(Index in, Index out, std::optional<WeightInit> init, bool bias)
    : Dense(in, out, init, bias, Matrix()) {}

Dense::Dense(Index in, Index out, std::optional<WeightInit> init, bool bias, Matrix mask)
    : in_(in),
      out_(out),
      init_(init.value_or(WeightInit::lecun_normal(std::max<Index>(in, 1)))),
      bias_(bias),
      mask_(std::move(mask)) {
  if (in < 1 || out < 1)
    throw Error("network: a dense layer needs positive widths (got " + std::to_string(in) + " -> " +
                std::to_string(out) + ")");
}

std::string Dense::name() const { return "dense " + std::to_string(in_) + "->" + std::to_string(out_); }

void Dense::initialize(double* theta, RandomStream& rng) const {
  init_.draw(theta, out_ * in_, rng);
  Eigen::Map<Matrix> W(theta, out_, in_);
  if (mask_.size()) W = W.cwiseProduct(mask_);
  if (bias_) Eigen::Map<Vector>(theta + out_ * in_, out_).setZero();
}

void Dense::mask_parameters(double* theta) const {
  if (mask_.size()) Eigen::Map<Matrix>(theta, out_, in_).array() *= mask_.array();
}

// The weights the layer applies: W itself, or W ∘ mask for a masked layer (written into `masked`, which
// the returned map then views; masked entries stay in θ but never act), unless a Network masked them.
Eigen::Map<const Matrix> Dense::weights(const double* theta, const Pass& pass, Matrix& masked) const {
  const Eigen::Map<const Matrix> raw(theta, out_, in_);
  if (!mask_.size() || pass.masked_parameters) return raw;
  masked = raw.cwiseProduct(mask_);
  return Eigen::Map<const Matrix>(masked.data(), out_, in_);
}

// On a seeded input the derivative channels of P are constants: ∂_d P = W_{:,d} on every row, and the
// second derivatives are 0 (no GEMM over them).
void Dense::forward(const double* theta, const Pass& pass, bool seeded, Matrix& h, LayerTape* tape) const {
  const Index N = pass.n, D = pass.dim;
  const int order = pass.order;
  Matrix masked;
  const Eigen::Map<const Matrix> W = weights(theta, pass, masked);
  Matrix pre(pass.rows(), out_);
  if (seeded) {
    pre.topRows(N).noalias() = pass.X * W.transpose();
    for (Index d = 0; d < D * std::min(order, 1); ++d)
      pre.middleRows((1 + d) * N, N).rowwise() = W.col(d).transpose();
    if (order >= 2) pre.bottomRows(N * D).setZero();
  } else {
    pre.noalias() = h * W.transpose();
  }
  if (bias_) pre.topRows(N).rowwise() += Eigen::Map<const Vector>(theta + out_ * in_, out_).transpose();
  if (tape && !seeded) tape->input = std::move(h);
  h = std::move(pre);
}

void Dense::backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint,
                     double* grad, Matrix* grad_X) const {
  const Index N = pass.n, D = pass.dim;
  const int order = pass.order;
  Matrix masked;
  const Eigen::Map<const Matrix> W = weights(theta, pass, masked);
  Eigen::Map<Matrix> gW(grad, out_, in_);
  const auto P0 = adjoint.topRows(N);
  if (bias_) Eigen::Map<Vector>(grad + out_ * in_, out_) += P0.colwise().sum().transpose();
  if (tape.seeded) {
    if (mask_.size()) {
      Matrix g = P0.transpose() * pass.X;
      for (Index d = 0; d < D * std::min(order, 1); ++d)
        g.col(d) += adjoint.middleRows((1 + d) * N, N).colwise().sum().transpose();
      gW += g.cwiseProduct(mask_);
    } else {
      gW.noalias() += P0.transpose() * pass.X;
      for (Index d = 0; d < D * std::min(order, 1); ++d)
        gW.col(d) += adjoint.middleRows((1 + d) * N, N).colwise().sum().transpose();
    }
    if (grad_X) grad_X->noalias() += P0 * W;
    return;
  }
  if (mask_.size())
    gW += (adjoint.transpose() * tape.input).cwiseProduct(mask_);
  else
    gW.noalias() += adjoint.transpose() * tape.input;
  Matrix below = adjoint * W;
  adjoint = std::move(below);
}

MaskedDense::MaskedDense(Matrix mask, std::optional<WeightInit> init, bool bias)
    : Dense(mask.cols(), mask.rows(), init, bias, mask) {
  for (Index i = 0; i < mask.size(); ++i)
    if (mask.data()[i] != 0.0 && mask.data()[i] != 1.0)
      throw Error("network: a dense layer's mask holds 0 and 1 only (got " + std::to_string(mask.data()[i]) +
                  ")");
}

std::string MaskedDense::name() const {
  return "masked dense " + std::to_string(input_width()) + "->" + std::to_string(output_width());
}

InputSkip::InputSkip(Index width, Index input_dim, std::optional<WeightInit> init)
    : width_(width),
      dim_(input_dim),
      init_(init.value_or(WeightInit::lecun_normal(std::max<Index>(input_dim, 1)))) {
  if (width < 1 || input_dim < 1)
    throw Error("network: an input skip needs positive widths (got " + std::to_string(input_dim) + " -> " +
                std::to_string(width) + ")");
}

std::string InputSkip::name() const {
  return "input skip " + std::to_string(dim_) + "->" + std::to_string(width_);
}

void InputSkip::initialize(double* theta, RandomStream& rng) const { init_.draw(theta, width_ * dim_, rng); }

// h + V x: the network input's channels are x, e_d and 0, so V adds V x to the values and V_{:,d} to J_d.
void InputSkip::forward(const double* theta, const Pass& pass, bool /*seeded*/, Matrix& h,
                        LayerTape* /*tape*/) const {
  if (pass.dim != dim_)
    throw Error("network: " + name() + " on an input of dimension " + std::to_string(pass.dim));
  const Index N = pass.n;
  const Eigen::Map<const Matrix> V(theta, width_, dim_);
  h.topRows(N).noalias() += pass.X * V.transpose();
  for (Index d = 0; d < dim_ * std::min(pass.order, 1); ++d)
    h.middleRows((1 + d) * N, N).rowwise() += V.col(d).transpose();
}

void InputSkip::backward(const double* theta, const Pass& pass, const LayerTape& /*tape*/, Matrix& adjoint,
                         double* grad, Matrix* grad_X) const {
  const Index N = pass.n;
  const Eigen::Map<const Matrix> V(theta, width_, dim_);
  Eigen::Map<Matrix> gV(grad, width_, dim_);
  const auto P0 = adjoint.topRows(N);
  gV.noalias() += P0.transpose() * pass.X;
  for (Index d = 0; d < dim_ * std::min(pass.order, 1); ++d)
    gV.col(d) += adjoint.middleRows((1 + d) * N, N).colwise().sum().transpose();
  if (grad_X) grad_X->noalias() += P0 * V;
}

}  // namespace kef::network
