#include "kef/mlp.hpp"

#include <cmath>
#include <string>

#include "kef/error.hpp"

namespace kef {

namespace {

// Softplus and its derivatives, elementwise; above 30 the identity (no overflow, derivatives 1, 0, 0).
constexpr double kLinearAbove = 30.0;

struct Activation {
  Matrix s, d1, d2, d3;  // s(P), s'(P), s''(P), s'''(P)
};

Activation activate(const Matrix& P, int derivs) {
  Activation a;
  a.s.resize(P.rows(), P.cols());
  if (derivs >= 1) a.d1.resize(P.rows(), P.cols());
  if (derivs >= 2) a.d2.resize(P.rows(), P.cols());
  if (derivs >= 3) a.d3.resize(P.rows(), P.cols());
  for (Index j = 0; j < P.cols(); ++j) {
    for (Index i = 0; i < P.rows(); ++i) {
      const double t = P(i, j);
      if (t > kLinearAbove) {
        a.s(i, j) = t;
        if (derivs >= 1) a.d1(i, j) = 1.0;
        if (derivs >= 2) a.d2(i, j) = 0.0;
        if (derivs >= 3) a.d3(i, j) = 0.0;
        continue;
      }
      // log(1 + e^t) computed without cancellation for very negative t.
      a.s(i, j) = t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t));
      const double sg = 1.0 / (1.0 + std::exp(-t));
      if (derivs >= 1) a.d1(i, j) = sg;
      if (derivs >= 2) a.d2(i, j) = sg * (1.0 - sg);
      if (derivs >= 3) a.d3(i, j) = sg * (1.0 - sg) * (1.0 - 2.0 * sg);
    }
  }
  return a;
}

}  // namespace

// Everything the backward pass needs from one layer of the forward pass.
struct Mlp::LayerTape {
  Matrix h_in;                 // h_{l−1}
  std::vector<Matrix> J_in;    // J_d of h_{l−1}
  std::vector<Matrix> S_in;    // S_d of h_{l−1}
  Activation act;
  std::vector<Matrix> A;       // ∂_d p
  std::vector<Matrix> Q;       // W_l S_d(h_{l−1}) (row form: S_in[d] W_lᵀ)
};

Mlp::Mlp(Index input_dim, Index width, Index layers) : input_dim_(input_dim), width_(width), layers_(layers) {
  if (input_dim < 1 || width < 1 || layers < 1)
    throw Error("mlp: input dimension, width and layers must be positive (got " + std::to_string(input_dim) + ", " +
                std::to_string(width) + ", " + std::to_string(layers) + ")");
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

void Mlp::initialize(RandomStream& rng) {
  const double sd = 1.0 / std::sqrt(static_cast<double>(width_));
  for (Index l = 0; l < layers_; ++l) {
    const auto& L = layer_[static_cast<std::size_t>(l)];
    for (Index i = 0; i < width_ * L.fan_in; ++i) theta_[L.w_offset + i] = sd * rng.normal();
    theta_.segment(L.b_offset, width_).setZero();
  }
  if (v_offset_ >= 0)
    for (Index i = 0; i < width_ * input_dim_; ++i) theta_[v_offset_ + i] = sd * rng.normal();
}

void Mlp::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error("mlp: expected " + std::to_string(parameter_count()) + " parameters, got " +
                std::to_string(theta.size()));
  theta_ = theta;
}

Eigen::Map<const Matrix> Mlp::weight(Index l) const {
  const auto& L = layer_[static_cast<std::size_t>(l)];
  return Eigen::Map<const Matrix>(theta_.data() + L.w_offset, width_, L.fan_in);
}
Eigen::Map<const Vector> Mlp::bias(Index l) const {
  return Eigen::Map<const Vector>(theta_.data() + layer_[static_cast<std::size_t>(l)].b_offset, width_);
}
Eigen::Map<const Matrix> Mlp::skip() const {
  return Eigen::Map<const Matrix>(theta_.data() + v_offset_, width_, input_dim_);
}

// The forward pass, optionally recording the tape for backward().
void Mlp::run_forward(const Matrix& X, int order, FeatureStacks& out, std::vector<LayerTape>* tape) const {
  const Index N = X.rows(), D = input_dim_, L = layers_;
  if (X.cols() != D)
    throw DataError("mlp: input has " + std::to_string(X.cols()) + " columns, expected " + std::to_string(D));
  Matrix h = X;
  std::vector<Matrix> J, S;
  if (order >= 1) {
    J.assign(static_cast<std::size_t>(D), Matrix::Zero(N, D));
    for (Index d = 0; d < D; ++d) J[static_cast<std::size_t>(d)].col(d).setOnes();
  }
  if (order >= 2) S.assign(static_cast<std::size_t>(D), Matrix::Zero(N, D));
  const int need_derivs = tape ? order + 1 : order;
  for (Index l = 0; l < L; ++l) {
    const auto W = weight(l);
    const bool skip_layer = L > 1 && l == L - 1;
    Matrix P = h * W.transpose();
    P.rowwise() += bias(l).transpose();
    if (skip_layer) P.noalias() += X * skip().transpose();
    Activation act = activate(P, need_derivs);
    std::vector<Matrix> A, Q, Jn, Sn;
    for (Index d = 0; d < (order >= 1 ? D : 0); ++d) {
      Matrix a = J[static_cast<std::size_t>(d)] * W.transpose();
      if (skip_layer) a.rowwise() += skip().col(d).transpose();
      Jn.push_back(act.d1.cwiseProduct(a));
      if (order >= 2) {
        Matrix q = S[static_cast<std::size_t>(d)] * W.transpose();
        Sn.push_back(act.d2.cwiseProduct(a.cwiseProduct(a)) + act.d1.cwiseProduct(q));
        if (tape) Q.push_back(std::move(q));
      }
      if (tape) A.push_back(std::move(a));
    }
    if (tape) tape->push_back(LayerTape{h, J, S, act, std::move(A), std::move(Q)});
    h = act.s;
    J = std::move(Jn);
    S = std::move(Sn);
  }
  out.features = std::move(h);
  out.J = std::move(J);
  out.S = std::move(S);
}

void Mlp::forward(const Matrix& X, int order, FeatureStacks& out) const {
  run_forward(X, order, out, nullptr);
}

void Mlp::backward(const Matrix& X, int order, const FeatureStacks& adj, Vector* grad_params, Matrix* grad_X) const {
  const Index N = X.rows(), D = input_dim_, L = layers_;
  std::vector<LayerTape> tape;
  FeatureStacks out;
  run_forward(X, order, out, &tape);
  if (grad_params && grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
  if (grad_X && (grad_X->rows() != N || grad_X->cols() != D)) grad_X->setZero(N, D);

  auto or_zero = [&](const Matrix& m, Index cols) { return m.size() ? m : Matrix(Matrix::Zero(N, cols)); };
  Matrix Hbar = or_zero(adj.features, width_);
  std::vector<Matrix> Jbar(static_cast<std::size_t>(order >= 1 ? D : 0)), Sbar(static_cast<std::size_t>(order >= 2 ? D : 0));
  for (Index d = 0; d < static_cast<Index>(Jbar.size()); ++d)
    Jbar[static_cast<std::size_t>(d)] =
        static_cast<std::size_t>(d) < adj.J.size() ? or_zero(adj.J[static_cast<std::size_t>(d)], width_) : Matrix::Zero(N, width_);
  for (Index d = 0; d < static_cast<Index>(Sbar.size()); ++d)
    Sbar[static_cast<std::size_t>(d)] =
        static_cast<std::size_t>(d) < adj.S.size() ? or_zero(adj.S[static_cast<std::size_t>(d)], width_) : Matrix::Zero(N, width_);

  Vector g = Vector::Zero(parameter_count());
  Matrix Xbar = Matrix::Zero(N, D);
  for (Index l = L - 1; l >= 0; --l) {
    const LayerTape& t = tape[static_cast<std::size_t>(l)];
    const auto& Lr = layer_[static_cast<std::size_t>(l)];
    const auto W = weight(l);
    const bool skip_layer = L > 1 && l == L - 1;
    // Adjoints of P (through s, s', s''), of A_d and of Q_d.
    Matrix Pbar = Hbar.cwiseProduct(t.act.d1);
    Matrix d1bar = Matrix::Zero(N, width_), d2bar = Matrix::Zero(N, width_);
    std::vector<Matrix> Abar(t.A.size()), Qbar(t.Q.size());
    for (std::size_t d = 0; d < t.A.size(); ++d) {
      const Matrix& a = t.A[d];
      d1bar += Jbar[d].cwiseProduct(a);
      Abar[d] = Jbar[d].cwiseProduct(t.act.d1);
      if (order >= 2) {
        d2bar += Sbar[d].cwiseProduct(a.cwiseProduct(a));
        Abar[d] += 2.0 * Sbar[d].cwiseProduct(t.act.d2).cwiseProduct(a);
        d1bar += Sbar[d].cwiseProduct(t.Q[d]);
        Qbar[d] = Sbar[d].cwiseProduct(t.act.d1);
      }
    }
    if (order >= 1) Pbar += d1bar.cwiseProduct(t.act.d2);
    if (order >= 2) Pbar += d2bar.cwiseProduct(t.act.d3);

    Eigen::Map<Matrix> gW(g.data() + Lr.w_offset, width_, Lr.fan_in);
    Eigen::Map<Vector> gb(g.data() + Lr.b_offset, width_);
    gW.noalias() += Pbar.transpose() * t.h_in;
    gb += Pbar.colwise().sum().transpose();
    Matrix Hbar_in = Pbar * W;
    std::vector<Matrix> Jbar_in(t.A.size()), Sbar_in(t.Q.size());
    for (std::size_t d = 0; d < t.A.size(); ++d) {
      gW.noalias() += Abar[d].transpose() * t.J_in[d];
      Jbar_in[d] = Abar[d] * W;
      if (order >= 2) {
        gW.noalias() += Qbar[d].transpose() * t.S_in[d];
        Sbar_in[d] = Qbar[d] * W;
      }
    }
    if (skip_layer) {
      Eigen::Map<Matrix> gV(g.data() + v_offset_, width_, D);
      gV.noalias() += Pbar.transpose() * X;
      Xbar.noalias() += Pbar * skip();
      for (std::size_t d = 0; d < t.A.size(); ++d) gV.col(static_cast<Index>(d)) += Abar[d].colwise().sum().transpose();
    }
    Hbar = std::move(Hbar_in);
    Jbar = std::move(Jbar_in);
    Sbar = std::move(Sbar_in);
  }
  Xbar += Hbar;  // h_0 = x; J and S of the input are constants
  if (grad_params) *grad_params += g;
  if (grad_X) *grad_X += Xbar;
}

}  // namespace kef
