#include "deep_kernel.hpp"

#include <cmath>
#include <string>

#include "kef/error.hpp"
#include "kef/linalg.hpp"

namespace kef::deep {

namespace {

// Per-component quantities shared by the forward stacks and the backward pass (u = φ(x) − φ(y)):
// g_d = uᵀJ_d and e_d = J_dᵀJ_d + uᵀS_d for every (n, m).
Matrix u_dot(const Matrix& A, const Matrix& C, const Matrix& Jd) {
  Matrix g = -Jd * C.transpose();
  g.colwise() += A.cwiseProduct(Jd).rowwise().sum();
  return g;
}

Matrix e_term(const Matrix& A, const Matrix& C, const Matrix& Jd, const Matrix& Sd) {
  Matrix e = -Sd * C.transpose();
  e.colwise() += (Jd.rowwise().squaredNorm() + A.cwiseProduct(Sd).rowwise().sum());
  return e;
}

// The adjoint block of coordinate d, or an empty matrix when that adjoint is absent.
Matrix block_or_empty(const Matrix& stack, Index d, Index N) {
  return stack.size() ? Matrix(stack.middleRows(d * N, N)) : Matrix();
}

}  // namespace

DeepKernel::DeepKernel(Index input_dim, Index components, Index layers, Index width,
                       const std::vector<double>& sigma_init, OnFeatures on, RandomStream& rng)
    : on_(on), logits_(Vector::Zero(components)), log_sigma_(Vector::Zero(on == OnFeatures::Gaussian ? components : 0)) {
  for (Index r = 0; r < components; ++r) {
    nets_.emplace_back(input_dim, width, layers);
    RandomStream net_rng = rng.derive(static_cast<std::uint64_t>(r));
    nets_.back().initialize(net_rng);
    if (gaussian())
      log_sigma_[r] = std::log(sigma_init.size() == 1 ? sigma_init[0] : sigma_init[static_cast<std::size_t>(r)]);
  }
}

KernelCapabilities DeepKernel::capabilities() const {
  KernelCapabilities c;
  c.differentiable_parameters = true;
  c.inducing_point_gradients = true;
  c.bounded_unit = gaussian();  // a convex combination of Gaussians lies in [0, 1]
  return c;
}

Vector DeepKernel::weights() const {
  Vector w = (logits_.array() - logits_.maxCoeff()).exp();
  return w / w.sum();
}

Index DeepKernel::net_offset(Index r) const {
  Index off = logits_.size() + log_sigma_.size();
  for (Index i = 0; i < r; ++i) off += nets_[static_cast<std::size_t>(i)].parameter_count();
  return off;
}

Index DeepKernel::parameter_count() const { return net_offset(components()); }

Vector DeepKernel::parameters() const {
  Vector theta(parameter_count());
  theta.head(logits_.size()) = logits_;
  theta.segment(logits_.size(), log_sigma_.size()) = log_sigma_;
  for (Index r = 0; r < components(); ++r) {
    const auto& net = nets_[static_cast<std::size_t>(r)];
    theta.segment(net_offset(r), net.parameter_count()) = net.parameters();
  }
  return theta;
}

void DeepKernel::set_parameters(const Vector& theta) {
  Kernel::set_parameters(theta);
  check_finite(theta, "deep kernel parameters");
  logits_ = theta.head(logits_.size());
  log_sigma_ = theta.segment(logits_.size(), log_sigma_.size());
  for (Index r = 0; r < components(); ++r) {
    auto& net = nets_[static_cast<std::size_t>(r)];
    net.set_parameters(theta.segment(net_offset(r), net.parameter_count()));
  }
}

std::vector<std::string> DeepKernel::parameter_names() const {
  std::vector<std::string> names;
  for (Index r = 0; r < components(); ++r) names.push_back("logit_" + std::to_string(r));
  for (Index r = 0; r < log_sigma_.size(); ++r) names.push_back("log_sigma_" + std::to_string(r));
  for (Index r = 0; r < components(); ++r)
    for (Index i = 0; i < nets_[static_cast<std::size_t>(r)].parameter_count(); ++i)
      names.push_back("net_" + std::to_string(r) + "_" + std::to_string(i));
  return names;
}

Matrix DeepKernel::gram(const Matrix& X, const Matrix& Y) const {
  KernelStacks st;
  derivatives(X, Y, 0, st);
  return st.value;
}

void DeepKernel::derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const {
  if (X.cols() != Y.cols())
    throw DataError("deep kernel: inputs of dimension " + std::to_string(X.cols()) + " and " + std::to_string(Y.cols()));
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const Vector rho = weights();
  out.value = Matrix::Zero(N, M);
  if (order >= 1) out.d1 = Matrix::Zero(N * D, M);
  if (order >= 2) out.d2 = Matrix::Zero(N * D, M);
  for (Index r = 0; r < components(); ++r) {
    const auto& net = nets_[static_cast<std::size_t>(r)];
    FeatureStacks fx, fy;
    net.forward(X, order, fx);
    net.forward(Y, 0, fy);
    const Matrix& A = fx.features;
    const Matrix& C = fy.features;
    if (gaussian()) {
      const double tau = std::exp(-2.0 * log_sigma_[r]);
      const Matrix K = (squared_distances(A, C) * (-0.5 * tau)).array().exp();
      out.value += rho[r] * K;
      for (Index d = 0; d < (order >= 1 ? D : 0); ++d) {
        const Matrix& Jd = fx.J[static_cast<std::size_t>(d)];
        const Matrix g = u_dot(A, C, Jd);
        out.d1.middleRows(d * N, N).array() -= rho[r] * tau * g.array() * K.array();
        if (order >= 2) {
          const Matrix e = e_term(A, C, Jd, fx.S[static_cast<std::size_t>(d)]);
          out.d2.middleRows(d * N, N).array() += rho[r] * (tau * tau * g.array().square() - tau * e.array()) * K.array();
        }
      }
    } else {
      out.value.noalias() += rho[r] * A * C.transpose();
      for (Index d = 0; d < (order >= 1 ? D : 0); ++d) {
        out.d1.middleRows(d * N, N).noalias() += rho[r] * fx.J[static_cast<std::size_t>(d)] * C.transpose();
        if (order >= 2)
          out.d2.middleRows(d * N, N).noalias() += rho[r] * fx.S[static_cast<std::size_t>(d)] * C.transpose();
      }
    }
  }
}

void DeepKernel::backward(const Matrix& X, const Matrix& Y, const KernelStacks& adj, Vector* grad_params,
                          Matrix* grad_Y) const {
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const int order = adj.d2.size() ? 2 : adj.d1.size() ? 1 : 0;
  const Vector rho = weights();
  Vector g = Vector::Zero(parameter_count());
  Matrix gY = Matrix::Zero(M, D);
  Vector rho_bar = Vector::Zero(components());
  const Matrix V_adj = adj.value.size() ? adj.value : Matrix(Matrix::Zero(N, M));

  for (Index r = 0; r < components(); ++r) {
    const auto& net = nets_[static_cast<std::size_t>(r)];
    FeatureStacks fx, fy;
    net.forward(X, order, fx);
    net.forward(Y, 0, fy);
    const Matrix& A = fx.features;
    const Matrix& C = fy.features;
    FeatureStacks ax;  // adjoints of φ_r(X), J_d, S_d
    ax.features = Matrix::Zero(N, A.cols());
    ax.J.assign(static_cast<std::size_t>(order >= 1 ? D : 0), Matrix::Zero(N, A.cols()));
    ax.S.assign(static_cast<std::size_t>(order >= 2 ? D : 0), Matrix::Zero(N, A.cols()));
    Matrix c_bar = Matrix::Zero(M, C.cols());

    if (gaussian()) {
      const double tau = std::exp(-2.0 * log_sigma_[r]);
      const Matrix r2 = squared_distances(A, C);
      const Matrix K = (r2 * (-0.5 * tau)).array().exp();
      // k̄ (adjoint of this component's k, before ρ) and τ̄, accumulated over the stacks.
      Matrix k_bar = rho[r] * V_adj;
      double tau_bar = 0.0;
      rho_bar[r] += (V_adj.array() * K.array()).sum();
      for (Index d = 0; d < (order >= 1 ? D : 0); ++d) {
        const Matrix& Jd = fx.J[static_cast<std::size_t>(d)];
        const Matrix gd = u_dot(A, C, Jd);
        const Matrix a1 = block_or_empty(adj.d1, d, N);
        const Matrix a2 = block_or_empty(adj.d2, d, N);
        Matrix g_bar = Matrix::Zero(N, M), e_bar;
        if (a1.size()) {
          rho_bar[r] += (a1.array() * (-tau) * gd.array() * K.array()).sum();
          k_bar.array() += rho[r] * a1.array() * (-tau) * gd.array();
          g_bar.array() += rho[r] * a1.array() * (-tau) * K.array();
          tau_bar += rho[r] * (a1.array() * (-gd.array()) * K.array()).sum();
        }
        Matrix ed;
        if (a2.size()) {
          const Matrix& Sd = fx.S[static_cast<std::size_t>(d)];
          ed = e_term(A, C, Jd, Sd);
          const auto bracket = tau * tau * gd.array().square() - tau * ed.array();
          rho_bar[r] += (a2.array() * bracket * K.array()).sum();
          k_bar.array() += rho[r] * a2.array() * bracket;
          g_bar.array() += rho[r] * a2.array() * 2.0 * tau * tau * gd.array() * K.array();
          e_bar = rho[r] * (a2.array() * (-tau) * K.array()).matrix();
          tau_bar += rho[r] * (a2.array() * (2.0 * tau * gd.array().square() - ed.array()) * K.array()).sum();
        }
        // g = uᵀJ_d: ∂/∂u = J_d, ∂/∂J_d = u.  e = J_dᵀJ_d + uᵀS_d: ∂/∂u = S_d, ∂/∂J_d = 2J_d, ∂/∂S_d = u.
        const Vector rg = g_bar.rowwise().sum();
        ax.features += rg.asDiagonal() * Jd;
        c_bar.noalias() -= g_bar.transpose() * Jd;
        ax.J[static_cast<std::size_t>(d)] += rg.asDiagonal() * A - g_bar * C;
        if (e_bar.size()) {
          const Matrix& Sd = fx.S[static_cast<std::size_t>(d)];
          const Vector re = e_bar.rowwise().sum();
          ax.features += re.asDiagonal() * Sd;
          c_bar.noalias() -= e_bar.transpose() * Sd;
          ax.J[static_cast<std::size_t>(d)] += 2.0 * re.asDiagonal() * Jd;
          ax.S[static_cast<std::size_t>(d)] += re.asDiagonal() * A - e_bar * C;
        }
      }
      // k = exp(−τ‖u‖²/2): ∂k/∂u = −τ u k, ∂k/∂τ = −‖u‖²k/2.
      const Matrix omega = k_bar.cwiseProduct(K);
      tau_bar += (omega.array() * (-0.5) * r2.array()).sum();
      const Vector row = omega.rowwise().sum(), col = omega.colwise().sum().transpose();
      ax.features -= tau * (row.asDiagonal() * A - omega * C);
      c_bar += tau * (omega.transpose() * A - col.asDiagonal() * C);  // u = a − c: c̄ = −Σ_n ū
      g[logits_.size() + r] += tau_bar * (-2.0 * tau);  // τ = exp(−2s)
    } else {
      rho_bar[r] += (V_adj.array() * (A * C.transpose()).array()).sum();
      ax.features += rho[r] * V_adj * C;
      c_bar += rho[r] * V_adj.transpose() * A;
      for (Index d = 0; d < (order >= 1 ? D : 0); ++d) {
        const Matrix a1 = block_or_empty(adj.d1, d, N);
        const Matrix& Jd = fx.J[static_cast<std::size_t>(d)];
        if (a1.size()) {
          rho_bar[r] += (a1.array() * (Jd * C.transpose()).array()).sum();
          ax.J[static_cast<std::size_t>(d)] += rho[r] * a1 * C;
          c_bar += rho[r] * a1.transpose() * Jd;
        }
        const Matrix a2 = block_or_empty(adj.d2, d, N);
        if (a2.size()) {
          const Matrix& Sd = fx.S[static_cast<std::size_t>(d)];
          rho_bar[r] += (a2.array() * (Sd * C.transpose()).array()).sum();
          ax.S[static_cast<std::size_t>(d)] += rho[r] * a2 * C;
          c_bar += rho[r] * a2.transpose() * Sd;
        }
      }
    }
    Vector g_net = Vector::Zero(net.parameter_count());
    net.backward(X, order, ax, &g_net, nullptr);
    FeatureStacks ay;
    ay.features = c_bar;
    net.backward(Y, 0, ay, &g_net, grad_Y ? &gY : nullptr);
    g.segment(net_offset(r), net.parameter_count()) += g_net;
  }
  // ρ = softmax(v): v̄_i = ρ_i (ρ̄_i − Σ_j ρ_j ρ̄_j).
  g.head(logits_.size()) = rho.cwiseProduct(rho_bar - Vector::Constant(rho.size(), rho.dot(rho_bar)));
  if (grad_params) {
    if (grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
    *grad_params += g;
  }
  if (grad_Y) {
    if (grad_Y->rows() != M || grad_Y->cols() != D) grad_Y->setZero(M, D);
    *grad_Y += gY;
  }
}

}  // namespace kef::deep
