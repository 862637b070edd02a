#pragma once
// The deep kernel of DKEF (eq. 7, MATH.md §2): a mixture of R components, each a Gaussian (or, for
// DKEF-L, linear) kernel on its own learned feature map φ_r (kef::Mlp),
//   k(x, y) = Σ_r ρ_r exp(−‖φ_r(x) − φ_r(y)‖² / (2σ_r²)),   ρ = softmax(v),  σ_r = exp(s_r).
// Parameter vector: v (R), then s (R; Gaussian components only), then each network's parameters.
#include <vector>

#include "kef/kernel.hpp"
#include "kef/mlp.hpp"

namespace kef::deep {

enum class OnFeatures { Gaussian, Linear };

class DeepKernel final : public Kernel {
 public:
  DeepKernel(Index input_dim, Index components, Index layers, Index width, const std::vector<double>& sigma_init,
             OnFeatures on, RandomStream& rng);

  KernelCapabilities capabilities() const override;
  Matrix gram(const Matrix& X, const Matrix& Y) const override;
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override;
  void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint, Vector* grad_params,
                Matrix* grad_Y) const override;

  Index parameter_count() const override;
  Vector parameters() const override;
  void set_parameters(const Vector& theta) override;
  std::vector<std::string> parameter_names() const override;

 private:
  Vector weights() const;  // ρ
  Index components() const { return static_cast<Index>(nets_.size()); }
  bool gaussian() const { return on_ == OnFeatures::Gaussian; }
  Index net_offset(Index r) const;

  OnFeatures on_;
  Vector logits_;     // v
  Vector log_sigma_;  // s (Gaussian components)
  std::vector<Mlp> nets_;
};

}  // namespace kef::deep
