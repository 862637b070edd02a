#include "reference_mlp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "feature_stack_layout.hpp"
#include "kef/error.hpp"

namespace kef::test {

namespace {

// Softplus and its derivatives, elementwise; above 30 the identity (no overflow, derivatives 1, 0, 0).
constexpr double kLinearAbove = 30.0;

struct Activation {
  Matrix s, d1, d2, d3;  // s(P), s'(P), s''(P), s'''(P)
};

// s(t) = max(t, 0) + log1p(e) and the sigmoid from e = exp(−|t|) ∈ (0, 1], which neither overflows
// nor cancels. The twin takes log1p and exp from the C library, independently of the series and the
// vectorised exponential the network library uses (framework/numerics/network/src/activation.cpp).
// Above kLinearAbove, s is the identity with derivatives 1, 0, 0 (DKEF's threshold).
void softplus_from(const double* t, const double* e, double* s, Index n) {
  for (Index i = 0; i < n; ++i)
    s[i] = t[i] > kLinearAbove ? t[i] : std::max(t[i], 0.0) + std::log1p(e[i]);
}

void exp_minus_abs(const double* t, double* e, Index n) {
  for (Index i = 0; i < n; ++i) e[i] = std::exp(-std::abs(t[i]));
}

// The value alone, in place, in cache-sized chunks (the order-0 forward pass: no derivatives, no tape).
void softplus_in_place(double* t, Index n) {
  constexpr Index kChunk = 256;
  alignas(64) double e[kChunk];
  for (Index i0 = 0; i0 < n; i0 += kChunk) {
    const Index len = std::min(kChunk, n - i0);
    exp_minus_abs(t + i0, e, len);
    softplus_from(t + i0, e, t + i0, len);
  }
}

template <class Derived>
Activation activate(const Eigen::MatrixBase<Derived>& P, int derivs) {
  using Arr = Eigen::ArrayXXd;
  const Arr t = P.array();
  const Index n = t.size();
  const double* tp = t.data();
  Arr e(t.rows(), t.cols());
  exp_minus_abs(tp, e.data(), n);
  const Arr u = 1.0 + e;
  auto linear_to = [&](Arr& x, double value) {
    double* xp = x.data();
    for (Index i = 0; i < n; ++i) xp[i] = tp[i] > kLinearAbove ? value : xp[i];
  };
  Activation a;
  a.s.resize(t.rows(), t.cols());
  softplus_from(tp, e.data(), a.s.data(), n);
  if (derivs >= 1) {
    Arr num(t.rows(), t.cols());  // σ(t) = 1/u for t ≥ 0, e/u below
    const double* ep = e.data();
    double* np = num.data();
    for (Index i = 0; i < n; ++i) np[i] = tp[i] >= 0.0 ? 1.0 : ep[i];
    Arr sg = num / u;
    linear_to(sg, 1.0);
    a.d1 = sg.matrix();
    if (derivs >= 2) {
      Arr d2 = sg * (1.0 - sg);
      linear_to(d2, 0.0);
      a.d2 = d2.matrix();
    }
    if (derivs >= 3) {
      Arr d3 = sg * (1.0 - sg) * (1.0 - 2.0 * sg);
      linear_to(d3, 0.0);
      a.d3 = d3.matrix();
    }
  }
  return a;
}

}  // namespace

ReferenceMlp::ReferenceMlp(Index input_dim, Index width, Index layers)
    : input_dim_(input_dim), width_(width), layers_(layers) {
  if (input_dim < 1 || width < 1 || layers < 1)
    throw Error("mlp: input dimension, width and layers must be positive (got " + std::to_string(input_dim) +
                ", " + std::to_string(width) + ", " + std::to_string(layers) + ")");
  Index offset = 0;
  for (Index l = 0; l < layers; ++l) {
    const Index fan_in = l == 0 ? input_dim : width;
    layer_.push_back({offset, offset + width * fan_in, fan_in});
    offset += width * fan_in + width;
  }
  if (layers > 1) {
    v_offset_ = offset;
    offset += width * input_dim;
  }
  theta_ = Vector::Zero(offset);
}

void ReferenceMlp::initialize(RandomStream& rng) {
  const double sd = 1.0 / std::sqrt(static_cast<double>(width_));
  for (Index l = 0; l < layers_; ++l) {
    const auto& L = layer_[static_cast<std::size_t>(l)];
    for (Index i = 0; i < width_ * L.fan_in; ++i) theta_[L.w_offset + i] = sd * rng.normal();
    theta_.segment(L.b_offset, width_).setZero();
  }
  if (v_offset_ >= 0)
    for (Index i = 0; i < width_ * input_dim_; ++i) theta_[v_offset_ + i] = sd * rng.normal();
}

void ReferenceMlp::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error("mlp: expected " + std::to_string(parameter_count()) + " parameters, got " +
                std::to_string(theta.size()));
  theta_ = theta;
}

Eigen::Map<const Matrix> ReferenceMlp::weight(Index l) const {
  const auto& L = layer_[static_cast<std::size_t>(l)];
  return Eigen::Map<const Matrix>(theta_.data() + L.w_offset, width_, L.fan_in);
}
Eigen::Map<const Vector> ReferenceMlp::bias(Index l) const {
  return Eigen::Map<const Vector>(theta_.data() + layer_[static_cast<std::size_t>(l)].b_offset, width_);
}
Eigen::Map<const Matrix> ReferenceMlp::skip() const {
  return Eigen::Map<const Matrix>(theta_.data() + v_offset_, width_, input_dim_);
}

// One GEMM per layer over all channels. Layer 1 is special-cased: its input derivatives J_d = e_d and
// S_d = 0 are constants, so ∂_d P is the d-th column of W_1 on every row and W_1 S_d = 0.
void ReferenceMlp::forward_stacked(const Matrix& X, int order, Matrix& out, Tape* tape) const {
  const Index N = X.rows(), D = input_dim_, L = layers_, Wd = width_;
  if (X.cols() != D)
    throw DataError("mlp: input has " + std::to_string(X.cols()) + " columns, expected " + std::to_string(D));
  if (order < 0 || order > 2) throw Error("mlp: derivative order must be 0, 1 or 2");
  const Index C = 1 + D * order;  // channels
  if (tape) {
    tape->order = order;
    tape->layers.assign(static_cast<std::size_t>(L), TapeLayer{});
  }
  Matrix h;    // stacked input of the current layer (unused for l = 0)
  Matrix pre;  // stacked pre-activations
  for (Index l = 0; l < L; ++l) {
    const auto W = weight(l);
    const bool skip_layer = L > 1 && l == L - 1;
    pre.resize(N * C, Wd);
    if (l == 0) {
      pre.topRows(N).noalias() = X * W.transpose();
      for (Index d = 0; d < D * std::min(order, 1); ++d)
        pre.middleRows((1 + d) * N, N).rowwise() = W.col(d).transpose();
      if (order >= 2) pre.bottomRows(N * D).setZero();
    } else {
      pre.noalias() = h * W.transpose();
    }
    pre.topRows(N).rowwise() += bias(l).transpose();
    if (skip_layer) {
      pre.topRows(N).noalias() += X * skip().transpose();
      for (Index d = 0; d < D * std::min(order, 1); ++d)
        pre.middleRows((1 + d) * N, N).rowwise() += skip().col(d).transpose();
    }
    if (order == 0 && !tape) {  // values only: activate in place and reuse the buffers
      softplus_in_place(pre.data(), pre.size());
      std::swap(h, pre);
      continue;
    }
    Activation act = activate(pre.topRows(N), tape ? order + 1 : order);
    Matrix next(N * C, Wd);
    next.topRows(N) = act.s;
    for (Index d = 0; d < D * std::min(order, 1); ++d) {
      const auto A = pre.middleRows((1 + d) * N, N);
      next.middleRows((1 + d) * N, N) = act.d1.cwiseProduct(A);
      if (order >= 2)
        next.middleRows((1 + D + d) * N, N) =
            act.d2.cwiseProduct(A.cwiseProduct(A)) + act.d1.cwiseProduct(pre.middleRows((1 + D + d) * N, N));
    }
    if (tape) {
      TapeLayer& t = tape->layers[static_cast<std::size_t>(l)];
      if (l > 0) t.input = std::move(h);
      t.pre = pre;
      t.s1 = std::move(act.d1);
      t.s2 = std::move(act.d2);
      t.s3 = std::move(act.d3);
    }
    h = std::move(next);
  }
  out = std::move(h);
}

void ReferenceMlp::backward_stacked(const Matrix& X, const Tape& tape, const Matrix& adjoint,
                                    Vector* grad_params, Matrix* grad_X) const {
  const Index N = X.rows(), D = input_dim_, L = layers_, Wd = width_;
  const int order = tape.order;
  const Index C = 1 + D * order;
  if (static_cast<Index>(tape.layers.size()) != L || adjoint.rows() != N * C || adjoint.cols() != Wd)
    throw Error("mlp: backward_stacked needs the tape of forward_stacked on the same input and a " +
                std::to_string(N * C) + " x " + std::to_string(Wd) + " adjoint");
  if (grad_params && grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
  if (grad_X && (grad_X->rows() != N || grad_X->cols() != D)) grad_X->setZero(N, D);
  Vector g = Vector::Zero(parameter_count());
  Matrix Xbar = Matrix::Zero(N, D);
  Matrix Hbar = adjoint;
  Matrix Pbar(N * C, Wd);
  for (Index l = L - 1; l >= 0; --l) {
    const TapeLayer& t = tape.layers[static_cast<std::size_t>(l)];
    const auto& Lr = layer_[static_cast<std::size_t>(l)];
    const auto W = weight(l);
    const bool skip_layer = L > 1 && l == L - 1;
    // Adjoints of P (through s, s', s''), of ∂_d P (A_d) and of W S_d (Q_d):
    //   J_d = s'·A_d,  S_d = s''·A_d² + s'·Q_d.
    auto P0 = Pbar.topRows(N);
    P0 = Hbar.topRows(N).cwiseProduct(t.s1);
    for (Index d = 0; d < D * std::min(order, 1); ++d) {
      const auto A = t.pre.middleRows((1 + d) * N, N);
      const auto Jb = Hbar.middleRows((1 + d) * N, N);
      auto Ab = Pbar.middleRows((1 + d) * N, N);
      if (order >= 2) {
        const auto Q = t.pre.middleRows((1 + D + d) * N, N);
        const auto Sb = Hbar.middleRows((1 + D + d) * N, N);
        P0.array() += Jb.array() * A.array() * t.s2.array() +
                      Sb.array() * (A.array().square() * t.s3.array() + Q.array() * t.s2.array());
        Ab.array() = Jb.array() * t.s1.array() + 2.0 * Sb.array() * t.s2.array() * A.array();
        Pbar.middleRows((1 + D + d) * N, N) = Sb.cwiseProduct(t.s1);
      } else {
        P0.array() += Jb.array() * A.array() * t.s2.array();
        Ab = Jb.cwiseProduct(t.s1);
      }
    }
    Eigen::Map<Matrix> gW(g.data() + Lr.w_offset, Wd, Lr.fan_in);
    Eigen::Map<Vector> gb(g.data() + Lr.b_offset, Wd);
    gb += P0.colwise().sum().transpose();
    if (l == 0) {
      // A_d = (W_1)_{:,d} on every row, Q_d = 0.
      gW.noalias() += P0.transpose() * X;
      for (Index d = 0; d < D * std::min(order, 1); ++d)
        gW.col(d) += Pbar.middleRows((1 + d) * N, N).colwise().sum().transpose();
      Xbar.noalias() += P0 * W;
    } else {
      gW.noalias() += Pbar.transpose() * t.input;
      Hbar.noalias() = Pbar * W;
    }
    if (skip_layer) {
      Eigen::Map<Matrix> gV(g.data() + v_offset_, Wd, D);
      gV.noalias() += P0.transpose() * X;
      for (Index d = 0; d < D * std::min(order, 1); ++d)
        gV.col(d) += Pbar.middleRows((1 + d) * N, N).colwise().sum().transpose();
      Xbar.noalias() += P0 * skip();
    }
  }
  if (grad_params) *grad_params += g;
  if (grad_X) *grad_X += Xbar;
}

void ReferenceMlp::forward(const Matrix& X, int order, FeatureStacks& out) const {
  Matrix st;
  forward_stacked(X, order, st, nullptr);
  unstack_features(st, X.rows(), input_dim_, order, out);
}

void ReferenceMlp::backward(const Matrix& X, int order, const FeatureStacks& adj, Vector* grad_params,
                            Matrix* grad_X) const {
  Tape tape;
  Matrix st;
  forward_stacked(X, order, st, &tape);
  const Matrix a = stack_adjoint(adj, X.rows(), input_dim_, order, st.rows(), st.cols());
  backward_stacked(X, tape, a, grad_params, grad_X);
}

}  // namespace kef::test
