#pragma once
// Inverse multiquadric kernel k(x, y) = (c² + ‖x − y‖²)^β, c > 0, β < 0 (Gorham & Mackey 2017), the
// base kernel whose KSD detects non-convergence (the Gaussian kernel's does not in D ≥ 3).
#include "kef/kernel.hpp"

namespace kef::imq {

class ImqKernel final : public Clonable<ImqKernel, Kernel>, public RadialProfile {
 public:
  ImqKernel(double c, double beta) : c2_(c * c), beta_(beta), bounded_(c >= 1.0) {}

  KernelCapabilities capabilities() const override;
  Matrix gram(const Matrix& X, const Matrix& Y) const override;
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override;
  void cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const override;
  void cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const override;

  // φ(r) = (c² + r)^β.
  const RadialProfile* radial_profile() const override { return this; }
  void evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const override;

 private:
  Matrix base(const Matrix& X, const Matrix& Y) const;

  double c2_;
  double beta_;
  bool bounded_;
};

}  // namespace kef::imq
