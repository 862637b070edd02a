#include "scalar_head_kernel.hpp"

#include <cmath>

#include "kef/error.hpp"
#include "kef/linalg.hpp"

namespace kef::deep {

ScalarHeadKernel::ScalarHeadKernel(Index input_dim, Index layers, Index width, RandomStream& rng)
    : net_(input_dim, width, layers), head_w_(width) {
  initialize(rng);
}

void ScalarHeadKernel::initialize(RandomStream& rng) {
  RandomStream net_rng = rng.derive("network");
  net_.initialize(net_rng);
  // The head is one more fully connected layer of fan-in W: the same N(0, 1/W) as the network's.
  RandomStream head_rng = rng.derive("head");
  const Index width = head_w_.size();
  const double sd = 1.0 / std::sqrt(static_cast<double>(width));
  for (Index i = 0; i < width; ++i) head_w_[i] = sd * head_rng.normal();
  head_b_ = 0.0;
}

KernelCapabilities ScalarHeadKernel::capabilities() const {
  KernelCapabilities c;
  c.differentiable_parameters = true;
  c.inducing_point_gradients = true;
  c.bounded_unit = false;  // ψ(x)ψ(y) is unbounded
  return c;
}

Vector ScalarHeadKernel::parameters() const {
  Vector theta(parameter_count());
  const Index P = net_.parameter_count(), W = head_w_.size();
  theta.head(P) = net_.parameters();
  theta.segment(P, W) = head_w_;
  theta[P + W] = head_b_;
  return theta;
}

void ScalarHeadKernel::set_parameters(const Vector& theta) {
  Kernel::set_parameters(theta);
  check_finite(theta, "deep_scalar kernel parameters");
  const Index P = net_.parameter_count(), W = head_w_.size();
  net_.set_parameters(theta.head(P));
  head_w_ = theta.segment(P, W);
  head_b_ = theta[P + W];
}

std::vector<std::string> ScalarHeadKernel::parameter_names() const {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(parameter_count()));
  for (Index i = 0; i < net_.parameter_count(); ++i) names.push_back("net_" + std::to_string(i));
  for (Index i = 0; i < head_w_.size(); ++i) names.push_back("head_w_" + std::to_string(i));
  names.push_back("head_b");
  return names;
}

void ScalarHeadKernel::check_inputs(const Matrix& X, const Matrix& Y) const {
  if (X.cols() != net_.input_dim() || Y.cols() != net_.input_dim())
    throw DataError("deep_scalar kernel: inputs of dimension " + std::to_string(X.cols()) + " and " +
                    std::to_string(Y.cols()) + " for a kernel built for dimension " +
                    std::to_string(net_.input_dim()));
}

Vector ScalarHeadKernel::head(const Matrix& features) const { return (features * head_w_).array() + head_b_; }

Matrix ScalarHeadKernel::gram(const Matrix& X, const Matrix& Y) const {
  check_inputs(X, Y);
  FeatureStacks fx, fy;
  net_.forward(X, 0, fx);
  net_.forward(Y, 0, fy);
  return head(fx.features) * head(fy.features).transpose();
}

void ScalarHeadKernel::derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const {
  check_inputs(X, Y);
  const Index N = X.rows(), D = X.cols();
  FeatureStacks fx, fy;
  net_.forward(X, order, fx);
  net_.forward(Y, 0, fy);
  const Vector py = head(fy.features);
  out.value = head(fx.features) * py.transpose();
  // Each stack is rank one: (wᵀJ_d(x_n)) stacked over (d, n), times ψ(y)ᵀ.
  Vector j(order >= 1 ? N * D : 0);
  if (order >= 1) {
    for (Index d = 0; d < D; ++d) j.segment(d * N, N) = fx.J[static_cast<std::size_t>(d)] * head_w_;
    out.d1 = j * py.transpose();
  } else {
    out.d1 = Matrix();
  }
  if (order >= 2) {
    for (Index d = 0; d < D; ++d) j.segment(d * N, N) = fx.S[static_cast<std::size_t>(d)] * head_w_;
    out.d2 = j * py.transpose();
  } else {
    out.d2 = Matrix();
  }
}

void ScalarHeadKernel::backward(const Matrix& X, const Matrix& Y, const KernelStacks& adj,
                                Vector* grad_params, Matrix* grad_Y) const {
  check_inputs(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols(), W = head_w_.size(), P = net_.parameter_count();
  auto check = [&](const Matrix& a, Index rows, const char* what) {
    if (a.size() && (a.rows() != rows || a.cols() != M))
      throw Error(std::string("deep_scalar kernel backward: the adjoint of ") + what +
                  " has the wrong shape");
  };
  check(adj.value, N, "the value");
  check(adj.d1, N * D, "d1");
  check(adj.d2, N * D, "d2");
  const bool has_v = adj.value.size() > 0, has_1 = adj.d1.size() > 0, has_2 = adj.d2.size() > 0;
  const int order = has_2 ? 2 : has_1 ? 1 : 0;

  FeatureStacks fx, fy;
  net_.forward(X, order, fx);
  net_.forward(Y, 0, fy);
  const Vector px = head(fx.features), py = head(fy.features);

  // value = ψx ψyᵀ, d1 = j ψyᵀ, d2 = s ψyᵀ (j, s stacked over (d, n)):
  //   ψ̄x = V̄ ψy, j̄ = D̄1 ψy, s̄ = D̄2 ψy;  ψ̄y = V̄ᵀψx + D̄1ᵀj + D̄2ᵀs.
  Vector gw = Vector::Zero(W);
  double gb = 0.0;
  Vector py_bar = Vector::Zero(M);
  FeatureStacks ax;  // adjoints of φ(X), J_d, S_d (empty = zero)
  if (has_v) {
    const Vector px_bar = adj.value * py;
    py_bar.noalias() += adj.value.transpose() * px;
    // ψx = A w + b
    gw.noalias() += fx.features.transpose() * px_bar;
    gb += px_bar.sum();
    ax.features = px_bar * head_w_.transpose();
  }
  auto channel = [&](const Matrix& a, const std::vector<Matrix>& F, std::vector<Matrix>& F_bar) {
    const Vector c_bar = a * py;
    F_bar.resize(static_cast<std::size_t>(D));
    for (Index d = 0; d < D; ++d) {
      const auto& Fd = F[static_cast<std::size_t>(d)];
      const auto cd_bar = c_bar.segment(d * N, N);
      // c_d = F_d w: ψ̄y gets D̄ᵀ c, w̄ += F_dᵀ c̄_d, F̄_d = c̄_d wᵀ.
      py_bar.noalias() += a.middleRows(d * N, N).transpose() * (Fd * head_w_);
      gw.noalias() += Fd.transpose() * cd_bar;
      F_bar[static_cast<std::size_t>(d)] = cd_bar * head_w_.transpose();
    }
  };
  if (has_1) channel(adj.d1, fx.J, ax.J);
  if (has_2) channel(adj.d2, fx.S, ax.S);
  // ψy = C w + b
  gw.noalias() += fy.features.transpose() * py_bar;
  gb += py_bar.sum();
  FeatureStacks ay;
  ay.features = py_bar * head_w_.transpose();

  Vector g_net = Vector::Zero(P);
  Matrix gY = Matrix::Zero(M, D);
  net_.backward(X, order, ax, &g_net, nullptr);
  net_.backward(Y, 0, ay, &g_net, grad_Y ? &gY : nullptr);

  if (grad_params) {
    if (grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
    grad_params->head(P) += g_net;
    grad_params->segment(P, W) += gw;
    (*grad_params)[P + W] += gb;
  }
  if (grad_Y) {
    if (grad_Y->rows() != M || grad_Y->cols() != D) grad_Y->setZero(M, D);
    *grad_Y += gY;
  }
}

}  // namespace kef::deep
