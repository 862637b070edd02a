#include "mlp.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "feature_stack_layout.hpp"
#include "kef/error.hpp"
#include "kef/network/activation.hpp"
#include "kef/network/dense.hpp"

namespace kef {

namespace {

network::Network build(Index D, Index W, Index L) {
  using namespace network;
  if (D < 1 || W < 1 || L < 1)
    throw Error("mlp: input dimension, width and layers must be positive (got " + std::to_string(D) + ", " +
                std::to_string(W) + ", " + std::to_string(L) + ")");
  const auto init = WeightInit::normal(1.0 / std::sqrt(static_cast<double>(W)));  // N(0, 1/W)
  Network net(D);
  for (Index l = 0; l < L; ++l) {
    net.add(std::make_unique<Dense>(l == 0 ? D : W, W, init));
    if (L > 1 && l == L - 1) net.add(std::make_unique<InputSkip>(W, D, init));
    net.add(std::make_unique<Activation>(ActivationKind::softplus, W));
  }
  return net;
}

}  // namespace

Mlp::Mlp(Index input_dim, Index width, Index layers)
    : input_dim_(input_dim), width_(width), layers_(layers), net_(build(input_dim, width, layers)) {}

void Mlp::forward(const Matrix& X, int order, FeatureStacks& out) const {
  Matrix st;
  forward_stacked(X, order, st, nullptr);
  unstack_features(st, X.rows(), input_dim_, order, out);
}

void Mlp::backward(const Matrix& X, int order, const FeatureStacks& adj, Vector* grad_params,
                   Matrix* grad_X) const {
  Tape tape;
  Matrix st;
  forward_stacked(X, order, st, &tape);
  const Matrix a = stack_adjoint(adj, X.rows(), input_dim_, order, st.rows(), st.cols());
  backward_stacked(X, tape, a, grad_params, grad_X);
}

}  // namespace kef
