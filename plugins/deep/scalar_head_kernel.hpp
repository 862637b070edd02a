#pragma once
// The kernel of DKEF-L-50-1 (DKEF §4, "DKEF" paragraph): DKEF-L-50's network φ (kef::Mlp, L layers of
// width W) with an extra single-neuron layer on top, the affine scalar head
//   ψ(x) = wᵀφ(x) + b,        k(x, y) = ψ(x) ψ(y).
// With one inducing point z the lite model is f(x) = α ψ(z) ψ(x): a scalar deep energy whose network
// is trained by DKEF's meta-learning.
//
// The head is affine (no softplus): the energy networks DKEF-L-50-1 is compared with end in a linear
// output unit, and a softplus head would make ψ > 0, so f = αψ(z)ψ(x) could only be bounded on one side
// by a fixed sign of αψ(z) — an energy shape restriction the paper does not describe.
//
// Derivatives (docs/math.md §2 notation, J_d = ∂φ/∂x_d, S_d = ∂²φ/∂x_d²):
//   ∂_d k = (wᵀJ_d(x)) ψ(y),   ∂²_d k = (wᵀS_d(x)) ψ(y).
// Parameter vector: the network's parameters (layout in mlp.hpp), then w (W), then b.
// Not bounded in [0, 1]; rank one, so positive semi-definite but not positive definite.
#include <string>
#include <vector>

#include "kef/kernel.hpp"
#include "mlp.hpp"

namespace kef::deep {

class ScalarHeadKernel final : public Clonable<ScalarHeadKernel, Kernel> {
 public:
  // Network weights and w drawn N(0, 1/W) from `rng`, biases and b set to 0 (DKEF's initialisation).
  ScalarHeadKernel(Index input_dim, Index layers, Index width, RandomStream& rng);

  KernelCapabilities capabilities() const override;
  Matrix gram(const Matrix& X, const Matrix& Y) const override;
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override;
  void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint, Vector* grad_params,
                Matrix* grad_Y) const override;

  // The network from rng.derive("network"), w from rng.derive("head"), b = 0.
  void initialize(RandomStream& rng) override;

  Index parameter_count() const override { return net_.parameter_count() + head_w_.size() + 1; }
  Vector parameters() const override;
  void set_parameters(const Vector& theta) override;
  std::vector<std::string> parameter_names() const override;

 private:
  void check_inputs(const Matrix& X, const Matrix& Y) const;
  // ψ of a batch from its features.
  Vector head(const Matrix& features) const;

  Mlp net_;
  Vector head_w_;  // w
  double head_b_ = 0.0;
};

}  // namespace kef::deep
