#pragma once
// THE TWIN: kef::Mlp as it was before it became an instance of the network library (commit 17ad6c8),
// kept unchanged except for its name and namespace, so that tests/plugins/deep/mlp_twin_test.cpp can
// compare the new Mlp with it. Not used anywhere else.
//
// The network of DKEF's deep kernels (MATH.md §2): L fully connected layers of width W with softplus
// (s(t) = t for t > 30), and for L > 1 a skip connection from the input into the last layer:
//   h_l = s(W_l h_{l−1} + b_l),  h_L = s(W_L h_{L−1} + V x + b_L),  h_0 = x.
// Forward mode propagates the input derivatives J_d = ∂h/∂x_d and S_d = ∂²h/∂x_d² for every
// coordinate d; reverse mode turns adjoints of (h, J, S) into gradients for every weight and for x.
//
// Parameter layout (flat vector): for l = 1..L: W_l (W x fan_in, column-major), then b_l (W); then V
// (W x D, column-major) when L > 1.
#include <vector>

#include "kef/feature_map.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::test {

using kef::FeatureStacks;
using kef::Index;
using kef::Matrix;
using kef::RandomStream;
using kef::Vector;

class ReferenceMlp {
 public:
  ReferenceMlp(Index input_dim, Index width, Index layers);

  // DKEF's initialisation: weights N(0, 1/W), biases 0.
  void initialize(RandomStream& rng);

  Index input_dim() const { return input_dim_; }
  Index width() const { return width_; }
  Index layers() const { return layers_; }
  Index parameter_count() const { return static_cast<Index>(theta_.size()); }
  const Vector& parameters() const { return theta_; }
  void set_parameters(const Vector& theta);

  // order 0: features; 1: and J; 2: and S.
  void forward(const Matrix& X, int order, FeatureStacks& out) const;
  // Adjoints of forward(X, order)'s outputs (empty = zero) into gradients (accumulated; either may
  // be null). Recomputes the forward intermediates it needs.
  void backward(const Matrix& X, int order, const FeatureStacks& adjoint, Vector* grad_params,
                Matrix* grad_X) const;

  // The same passes on one stacked matrix, so that every layer is a single GEMM over all channels:
  // N·(1 + D·order) rows and W columns, row block c (N rows each) holding the features (c = 0), J_d
  // (c = 1 + d) and, for order 2, S_d (c = 1 + D + d). The tape keeps what backward_stacked needs.
  struct TapeLayer {
    Matrix input;       // stacked h_{l−1}, J, S of the layer's input (empty for the first layer: x itself)
    Matrix pre;         // stacked pre-activations P, ∂_d P, W_l S_d(h_{l−1})
    Matrix s1, s2, s3;  // s'(P), s''(P), s'''(P)
  };
  struct Tape {
    int order = 0;
    std::vector<TapeLayer> layers;
  };
  static Index stacked_rows(Index n, Index dim, int order) { return n * (1 + dim * order); }
  void forward_stacked(const Matrix& X, int order, Matrix& out, Tape* tape) const;
  // adjoint: stacked like forward_stacked's output for the tape's order; gradients are accumulated.
  void backward_stacked(const Matrix& X, const Tape& tape, const Matrix& adjoint, Vector* grad_params,
                        Matrix* grad_X) const;

 private:
  struct Layer {
    Index w_offset, b_offset, fan_in;
  };
  Eigen::Map<const Matrix> weight(Index l) const;
  Eigen::Map<const Vector> bias(Index l) const;
  Eigen::Map<const Matrix> skip() const;

  Index input_dim_, width_, layers_;
  std::vector<Layer> layer_;
  Index v_offset_ = -1;
  Vector theta_;
};

}  // namespace kef::test
