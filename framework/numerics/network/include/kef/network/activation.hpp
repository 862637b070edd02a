#pragma once
// Elementwise activations s applied to every unit, with the chain rule on the derivative channels
// (layer.hpp): h = s(P), J = s'(P)·A, S = s''(P)·A² + s'(P)·Q for the channels A = ∂_d P, Q = ∂²_d P.
// Reverse mode needs s''' for the adjoint of S, so a taped pass of order k evaluates k + 1 derivatives.
//
//   softplus  log(1 + e^t), the identity above 30 (DKEF's threshold: derivatives 1, 0, 0 there), on
//             kef's exp_array with a log1p series (no logarithm), accurate to a few ulp
//   tanh      on exp_array above |t| = 0.4 and its odd series below, vectorised, within 4 ulp of std::tanh
//   sigmoid, relu (s'(0) = 0), elu (α = 1: e^t − 1 below 0), linear (the identity)
#include "kef/network/layer.hpp"

namespace kef::network {

enum class ActivationKind { softplus, tanh, sigmoid, relu, elu, linear };

// "softplus", "tanh", ...; Error for an unknown name.
ActivationKind activation_from_name(const std::string& name);
std::string activation_name(ActivationKind kind);

// s and its first `derivs` derivatives (0..3) at t[0..n); d1..d3 may be null when not requested.
void activate(ActivationKind kind, const double* t, Index n, int derivs, double* s, double* d1, double* d2,
              double* d3);

class Activation : public Layer {
 public:
  Activation(ActivationKind kind, Index width);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Activation>(*this); }
  std::string name() const override;
  ActivationKind kind() const { return kind_; }
  Index input_width() const override { return width_; }
  Index output_width() const override { return width_; }
  void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h, LayerTape* tape) const override;
  void backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint, double* grad,
                Matrix* grad_X) const override;

 private:
  ActivationKind kind_;
  Index width_;
};

}  // namespace kef::network
