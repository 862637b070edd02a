#pragma once
// k(x, y) = exp(−‖x − y‖² / (2σ²)) with σ the length scale (docs/math.md §2); parameter: log σ.
#include <cmath>

#include "kef/kernel.hpp"

namespace kef::gaussian {

class GaussianKernel final : public Clonable<GaussianKernel, Kernel>, public RadialProfile {
 public:
  explicit GaussianKernel(double sigma) : log_sigma_(std::log(sigma)) {}

  KernelCapabilities capabilities() const override;
  Matrix gram(const Matrix& X, const Matrix& Y) const override;
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override;
  void cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const override;
  void cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const override;
  void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint, Vector* grad_params,
                Matrix* grad_Y) const override;

  Index parameter_count() const override { return 1; }
  Vector parameters() const override { return Vector::Constant(1, log_sigma_); }
  void set_parameters(const Vector& theta) override;
  std::vector<std::string> parameter_names() const override { return {"log_sigma"}; }

  double sigma() const { return std::exp(log_sigma_); }

  // φ(r) = exp(−r / (2σ²)).
  const RadialProfile* radial_profile() const override { return this; }
  void evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const override;

 private:
  double log_sigma_;
};

}  // namespace kef::gaussian
