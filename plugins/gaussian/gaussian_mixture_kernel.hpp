#pragma once
// k(x, y) = Σ_r ρ_r exp(−‖x − y‖² / (2σ_r²)), ρ = softmax(v), σ_r = exp(s_r): the kernel of DKEF's
// KEF-G baseline with R Gaussian components and no network (DKEF eq. 7 with φ the identity; docs/math.md
// §2). Parameters, as kernel/deep lays them out: v (R logits), then s (R log length scales).
#include <vector>

#include "gaussian_kernel.hpp"
#include "kef/kernel.hpp"

namespace kef::gaussian {

class GaussianMixtureKernel final : public Clonable<GaussianMixtureKernel, Kernel>, public RadialProfile {
 public:
  // sigma: the R length scales; weights: R positive mixture weights (normalised here).
  GaussianMixtureKernel(const std::vector<double>& sigma, const std::vector<double>& weights);

  KernelCapabilities capabilities() const override;
  Matrix gram(const Matrix& X, const Matrix& Y) const override;
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override;
  void cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const override;
  void cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const override;
  void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint, Vector* grad_params,
                Matrix* grad_Y) const override;

  Index parameter_count() const override { return 2 * components(); }
  Vector parameters() const override;
  void set_parameters(const Vector& theta) override;
  std::vector<std::string> parameter_names() const override;

  Index components() const { return static_cast<Index>(parts_.size()); }
  Vector weights() const;  // ρ
  Vector sigmas() const;   // σ_r

  // φ(r) = Σ_r ρ_r exp(−r / (2σ_r²)).
  const RadialProfile* radial_profile() const override { return this; }
  void evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const override;

 private:
  Vector logits_;
  std::vector<GaussianKernel> parts_;  // one single-bandwidth kernel per component
};

}  // namespace kef::gaussian
