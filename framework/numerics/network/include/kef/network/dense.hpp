#pragma once
// Dense (fully connected) layers: P = h Wᵀ + b on the values and P' = J Wᵀ, S Wᵀ on the derivative
// channels, one GEMM over the stacked channels. MaskedDense is the same with W replaced by W ∘ M for
// a fixed 0/1 mask M (MADE, made.hpp builds the masks); masked weights stay in the parameter vector,
// are set to zero by initialize() and always get a zero gradient.
//
// Parameter layout (the layer's slice): W (out x in, column-major), then b (out) when it has a bias.
// Also InputSkip: adds V x (V: out x D, column-major, no bias) of the network input x to its input,
// DKEF's skip connection into the last layer.
#include <optional>

#include "kef/network/layer.hpp"

namespace kef::network {

// How initialize() draws weights (biases start at 0).
struct WeightInit {
  enum class Kind { normal, uniform } kind = Kind::normal;
  double scale = 1.0;  // normal: standard deviation; uniform: half-width of the interval
  static WeightInit normal(double sd) { return {Kind::normal, sd}; }
  // Glorot & Bengio's uniform: U(−a, a), a = √(6 / (fan_in + fan_out)).
  static WeightInit glorot_uniform(Index fan_in, Index fan_out);
  // N(0, 1/fan_in), the default.
  static WeightInit lecun_normal(Index fan_in);
  void draw(double* w, Index count, RandomStream& rng) const;
};

class Dense : public Layer {
 public:
  Dense(Index in, Index out, std::optional<WeightInit> init = std::nullopt, bool bias = true);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Dense>(*this); }
  std::string name() const override;
  Index input_width() const override { return in_; }
  Index output_width() const override { return out_; }
  Index parameter_count() const override { return out_ * in_ + (bias_ ? out_ : 0); }
  void initialize(double* theta, RandomStream& rng) const override;
  bool masks_parameters() const override { return mask_.size() > 0; }
  void mask_parameters(double* theta) const override;
  bool takes_seed() const override { return true; }
  void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h, LayerTape* tape) const override;
  void backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint, double* grad,
                Matrix* grad_X) const override;
  // The mask (out x in), empty for a plain dense layer.
  const Matrix& mask() const { return mask_; }

 protected:
  Dense(Index in, Index out, std::optional<WeightInit> init, bool bias, Matrix mask);

 private:
  // W, or W ∘ M for a masked layer unless the pass says the parameters are masked already.
  Eigen::Map<const Matrix> weights(const double* theta, const Pass& pass, Matrix& masked) const;

  Index in_, out_;
  WeightInit init_;
  bool bias_;
  Matrix mask_;
};

class MaskedDense : public Dense {
 public:
  // mask: out x in, entries 0 or 1.
  MaskedDense(Matrix mask, std::optional<WeightInit> init = std::nullopt, bool bias = true);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<MaskedDense>(*this); }
  std::string name() const override;
};

class InputSkip : public Layer {
 public:
  InputSkip(Index width, Index input_dim, std::optional<WeightInit> init = std::nullopt);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<InputSkip>(*this); }
  std::string name() const override;
  Index input_width() const override { return width_; }
  Index output_width() const override { return width_; }
  Index parameter_count() const override { return width_ * dim_; }
  void initialize(double* theta, RandomStream& rng) const override;
  void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h, LayerTape* tape) const override;
  void backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint, double* grad,
                Matrix* grad_X) const override;

 private:
  Index width_, dim_;
  WeightInit init_;
};

}  // namespace kef::network
