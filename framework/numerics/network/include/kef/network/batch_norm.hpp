#pragma once
// Batch normalisation (Ioffe & Szegedy 2015) with a log-parametrised scale, as MAF uses it:
//   y = e^{γ} (x − m)/√(v + ε) + β  per unit,
// where in training mode m, v are the batch's mean and (biased) variance and in evaluation mode the
// running statistics. Parameters: γ (width), then β (width). Running statistics start at m = 0,
// v = 1 and change only through Network::update_running_statistics (a forward pass stays const).
//
// Derivative channels: in evaluation mode the layer is affine per unit, and J, S (and their reverse
// mode) are exact. In training mode every output depends on the whole batch, so per-sample input
// derivatives are not what a method would want: the layer supports order 0 only there (max_order),
// and the network refuses a higher order in training mode rather than returning something else.
#include "kef/network/layer.hpp"

namespace kef::network {

class BatchNorm : public Layer {
 public:
  explicit BatchNorm(Index width, double epsilon = 1e-5);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<BatchNorm>(*this); }
  std::string name() const override;
  Index input_width() const override { return width_; }
  Index output_width() const override { return width_; }
  Index parameter_count() const override { return 2 * width_; }
  void initialize(double* theta, RandomStream& rng) const override;
  int max_order(bool training) const override { return training ? 0 : 2; }
  bool has_running_statistics() const override { return true; }
  void update_statistics(const LayerTape& tape, double momentum) override;
  void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h, LayerTape* tape) const override;
  void backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint, double* grad,
                Matrix* grad_X) const override;

  double epsilon() const { return epsilon_; }
  const Vector& running_mean() const { return mean_; }
  const Vector& running_variance() const { return variance_; }
  // Error on a size mismatch or a negative or non-finite variance.
  void set_running_statistics(const Vector& mean, const Vector& variance);

 private:
  Index width_;
  double epsilon_;
  Vector mean_, variance_;
};

}  // namespace kef::network
