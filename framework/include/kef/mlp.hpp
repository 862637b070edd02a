#pragma once
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

namespace kef {

class Mlp {
 public:
  Mlp(Index input_dim, Index width, Index layers);

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

 private:
  struct Layer {
    Index w_offset, b_offset, fan_in;
  };
  struct LayerTape;
  void run_forward(const Matrix& X, int order, FeatureStacks& out, std::vector<LayerTape>* tape) const;
  Eigen::Map<const Matrix> weight(Index l) const;
  Eigen::Map<const Vector> bias(Index l) const;
  Eigen::Map<const Matrix> skip() const;

  Index input_dim_, width_, layers_;
  std::vector<Layer> layer_;
  Index v_offset_ = -1;
  Vector theta_;
};

}  // namespace kef
