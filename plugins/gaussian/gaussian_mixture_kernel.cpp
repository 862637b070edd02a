#include "gaussian_mixture_kernel.hpp"

#include <cmath>

#include "kef/error.hpp"

namespace kef::gaussian {

namespace {

// Σ Ā ⊙ S over the stacks whose adjoint is given: the derivative of the loss the adjoints describe with
// respect to a factor that scales every stack of one component.
double contract(const KernelStacks& adjoint, const KernelStacks& stacks) {
  double s = 0.0;
  if (adjoint.value.size() > 0) s += (adjoint.value.array() * stacks.value.array()).sum();
  if (adjoint.d1.size() > 0) s += (adjoint.d1.array() * stacks.d1.array()).sum();
  if (adjoint.d2.size() > 0) s += (adjoint.d2.array() * stacks.d2.array()).sum();
  return s;
}

}  // namespace

GaussianMixtureKernel::GaussianMixtureKernel(const std::vector<double>& sigma,
                                             const std::vector<double>& weights) {
  if (sigma.empty() || sigma.size() != weights.size())
    throw Error("gaussian_mixture kernel: needs one weight per length scale");
  logits_.resize(static_cast<Index>(sigma.size()));
  for (std::size_t r = 0; r < sigma.size(); ++r) {
    if (!(sigma[r] > 0.0 && std::isfinite(sigma[r])) || !(weights[r] > 0.0 && std::isfinite(weights[r])))
      throw Error("gaussian_mixture kernel: length scales and weights must be positive and finite");
    parts_.emplace_back(sigma[r]);
    logits_[static_cast<Index>(r)] = std::log(weights[r]);
  }
}

KernelCapabilities GaussianMixtureKernel::capabilities() const {
  KernelCapabilities c;
  c.differentiable_parameters = true;
  c.inducing_point_gradients = true;
  c.cross_derivatives = true;
  c.cross_second_derivatives = true;
  c.bounded_unit = true;  // a convex combination of kernels with values in [0, 1]
  return c;
}

Vector GaussianMixtureKernel::weights() const {
  Vector w = (logits_.array() - logits_.maxCoeff()).exp();
  return w / w.sum();
}

Vector GaussianMixtureKernel::sigmas() const {
  Vector s(components());
  for (Index r = 0; r < components(); ++r) s[r] = parts_[static_cast<std::size_t>(r)].sigma();
  return s;
}

Vector GaussianMixtureKernel::parameters() const {
  Vector theta(parameter_count());
  theta.head(components()) = logits_;
  for (Index r = 0; r < components(); ++r) theta[components() + r] = std::log(sigmas()[r]);
  return theta;
}

void GaussianMixtureKernel::set_parameters(const Vector& theta) {
  Kernel::set_parameters(theta);
  if (!theta.allFinite()) throw NumericalError("gaussian_mixture kernel: non-finite parameters");
  logits_ = theta.head(components());
  for (Index r = 0; r < components(); ++r)
    parts_[static_cast<std::size_t>(r)].set_parameters(Vector::Constant(1, theta[components() + r]));
}

std::vector<std::string> GaussianMixtureKernel::parameter_names() const {
  std::vector<std::string> names;
  for (Index r = 0; r < components(); ++r) names.push_back("logit_" + std::to_string(r));
  for (Index r = 0; r < components(); ++r) names.push_back("log_sigma_" + std::to_string(r));
  return names;
}

Matrix GaussianMixtureKernel::gram(const Matrix& X, const Matrix& Y) const {
  const Vector rho = weights();
  Matrix G = rho[0] * parts_[0].gram(X, Y);
  for (Index r = 1; r < components(); ++r) G += rho[r] * parts_[static_cast<std::size_t>(r)].gram(X, Y);
  return G;
}

void GaussianMixtureKernel::evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const {
  const Vector rho = weights();
  Matrix p, dp, d2p;
  for (Index c = 0; c < components(); ++c) {
    parts_[static_cast<std::size_t>(c)].evaluate(r, phi ? &p : nullptr, dphi ? &dp : nullptr,
                                                 d2phi ? &d2p : nullptr);
    if (phi) *phi = c == 0 ? Matrix(rho[c] * p) : Matrix(*phi + rho[c] * p);
    if (dphi) *dphi = c == 0 ? Matrix(rho[c] * dp) : Matrix(*dphi + rho[c] * dp);
    if (d2phi) *d2phi = c == 0 ? Matrix(rho[c] * d2p) : Matrix(*d2phi + rho[c] * d2p);
  }
}

void GaussianMixtureKernel::derivatives(const Matrix& X, const Matrix& Y, int order,
                                        KernelStacks& out) const {
  const Vector rho = weights();
  parts_[0].derivatives(X, Y, order, out);
  out.value *= rho[0];
  if (order >= 1) out.d1 *= rho[0];
  if (order >= 2) out.d2 *= rho[0];
  KernelStacks part;
  for (Index r = 1; r < components(); ++r) {
    parts_[static_cast<std::size_t>(r)].derivatives(X, Y, order, part);
    out.value += rho[r] * part.value;
    if (order >= 1) out.d1 += rho[r] * part.d1;
    if (order >= 2) out.d2 += rho[r] * part.d2;
  }
}

void GaussianMixtureKernel::cross_derivatives(const Matrix& X, const Matrix& Y,
                                              KernelCrossStacks& out) const {
  const Vector rho = weights();
  parts_[0].cross_derivatives(X, Y, out);
  out.dxdy *= rho[0];
  out.d2xdy *= rho[0];
  KernelCrossStacks part;
  for (Index r = 1; r < components(); ++r) {
    parts_[static_cast<std::size_t>(r)].cross_derivatives(X, Y, part);
    out.dxdy += rho[r] * part.dxdy;
    out.d2xdy += rho[r] * part.d2xdy;
  }
}

void GaussianMixtureKernel::cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const {
  const Vector rho = weights();
  parts_[0].cross_second_derivatives(X, Y, d2xd2y);
  d2xd2y *= rho[0];
  Matrix part;
  for (Index r = 1; r < components(); ++r) {
    parts_[static_cast<std::size_t>(r)].cross_second_derivatives(X, Y, part);
    d2xd2y += rho[r] * part;
  }
}

void GaussianMixtureKernel::backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint,
                                     Vector* grad_params, Matrix* grad_Y) const {
  const Index R = components();
  const Vector rho = weights();
  const int order = adjoint.d2.size() > 0 ? 2 : adjoint.d1.size() > 0 ? 1 : 0;
  if (grad_params && grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
  // k = Σ_r ρ_r k_r: ∂/∂s_r = ρ_r ∂k_r/∂s_r; ∂/∂v_q = Σ_r ρ_r (δ_rq − ρ_q) a_r with a_r = Σ Ā ⊙ S_r;
  // ∂/∂Y = Σ_r ρ_r ∂k_r/∂Y.
  Vector a = Vector::Zero(R);
  for (Index r = 0; r < R; ++r) {
    const GaussianKernel& part = parts_[static_cast<std::size_t>(r)];
    Vector g;
    Matrix gY;
    part.backward(X, Y, adjoint, grad_params ? &g : nullptr, grad_Y ? &gY : nullptr);
    if (grad_params) {
      (*grad_params)[R + r] += rho[r] * g[0];
      KernelStacks stacks;
      part.derivatives(X, Y, order, stacks);
      a[r] = contract(adjoint, stacks);
    }
    if (grad_Y) {
      if (grad_Y->rows() != Y.rows() || grad_Y->cols() != Y.cols()) grad_Y->setZero(Y.rows(), Y.cols());
      *grad_Y += rho[r] * gY;
    }
  }
  if (grad_params) {
    const double mean_a = rho.dot(a);
    for (Index q = 0; q < R; ++q) (*grad_params)[q] += rho[q] * (a[q] - mean_a);
  }
}

}  // namespace kef::gaussian
