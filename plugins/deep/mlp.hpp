#pragma once
// The network of DKEF's deep kernels (docs/math.md §2): L fully connected layers of width W with
// softplus (s(t) = t for t > 30), and for L > 1 a skip connection from the input into the last layer:
//   h_l = s(W_l h_{l−1} + b_l),  h_L = s(W_L h_{L−1} + V x + b_L),  h_0 = x.
// Forward mode propagates the input derivatives J_d = ∂h/∂x_d and S_d = ∂²h/∂x_d² for every
// coordinate d; reverse mode turns adjoints of (h, J, S) into gradients for every weight and for x.
// An instance of the network library (kef/network/network.hpp): Dense, softplus, ..., Dense,
// InputSkip (V), softplus; this class fixes DKEF's architecture, initialisation and interface.
//
// Parameter layout (flat vector): for l = 1..L: W_l (W x fan_in, column-major), then b_l (W); then V
// (W x D, column-major) when L > 1.
#include "kef/feature_map.hpp"
#include "kef/network/network.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

class Mlp {
 public:
  Mlp(Index input_dim, Index width, Index layers);

  // DKEF's initialisation: weights N(0, 1/W), biases 0.
  void initialize(RandomStream& rng) { net_.initialize(rng); }

  Index input_dim() const { return input_dim_; }
  Index width() const { return width_; }
  Index layers() const { return layers_; }
  Index parameter_count() const { return net_.parameter_count(); }
  const Vector& parameters() const { return net_.parameters(); }
  void set_parameters(const Vector& theta) { net_.set_parameters(theta); }
  const network::Network& network() const { return net_; }

  // order 0: features; 1: and J; 2: and S.
  void forward(const Matrix& X, int order, FeatureStacks& out) const;
  // Adjoints of forward(X, order)'s outputs (empty = zero) into gradients (accumulated; either may
  // be null). Recomputes the forward intermediates it needs.
  void backward(const Matrix& X, int order, const FeatureStacks& adjoint, Vector* grad_params,
                Matrix* grad_X) const;

  // The same passes on one stacked matrix, so that every layer is a single GEMM over all channels:
  // N·(1 + D·order) rows and W columns, row block c (N rows each) holding the features (c = 0), J_d
  // (c = 1 + d) and, for order 2, S_d (c = 1 + D + d) (kef/network/layer.hpp). The tape keeps what
  // backward_stacked needs.
  using Tape = network::Network::Tape;
  static Index stacked_rows(Index n, Index dim, int order) {
    return network::Network::stacked_rows(n, dim, order);
  }
  void forward_stacked(const Matrix& X, int order, Matrix& out, Tape* tape) const {
    net_.forward(X, order, out, tape);
  }
  // adjoint: stacked like forward_stacked's output for the tape's order; gradients are accumulated.
  void backward_stacked(const Matrix& X, const Tape& tape, const Matrix& adjoint, Vector* grad_params,
                        Matrix* grad_X) const {
    net_.backward(X, tape, adjoint, grad_params, grad_X);
  }

 private:
  Index input_dim_, width_, layers_;
  network::Network net_;
};

}  // namespace kef
