// Network::forward_stack: forward mode through a network whose input is itself a stack over an outer
// variable. Its brute-force twin is one network holding both halves: forward(X, 2) of the whole must
// equal forward_stack of the second half on the first half's order-2 stack (batch norm in evaluation
// mode included, and an outer dimension different from the second half's input width).
#include <gtest/gtest.h>

#include "kef/error.hpp"
#include "kef/network/activation.hpp"
#include "kef/network/batch_norm.hpp"
#include "kef/network/dense.hpp"
#include "kef/network/network.hpp"

namespace kef::network {
namespace {

TEST(ForwardStack, EqualsTheForwardPassOfTheComposedNetwork) {
  const Index D = 3, W = 5, K = 4, N = 7;
  auto first_half = [&](Network& n) {
    n.add(std::make_unique<Dense>(D, W)).add(std::make_unique<Activation>(ActivationKind::tanh, W));
  };
  auto second_half = [&](Network& n, bool with_norm) {
    if (with_norm) n.add(std::make_unique<BatchNorm>(W));
    n.add(std::make_unique<Dense>(W, W))
        .add(std::make_unique<Activation>(ActivationKind::softplus, W))
        .add(std::make_unique<Dense>(W, K));
  };
  for (bool with_norm : {false, true}) {
    Network whole(D), a(D), b(W);
    first_half(whole);
    second_half(whole, with_norm);
    first_half(a);
    second_half(b, with_norm);
    RandomStream rng(3, "forward-stack");
    whole.initialize(rng);
    Vector theta = whole.parameters();
    theta += 0.2 * rng.normal_matrix(theta.size(), 1).col(0);
    whole.set_parameters(theta);
    a.set_parameters(theta.head(a.parameter_count()));
    b.set_parameters(theta.tail(b.parameter_count()));
    if (with_norm) {
      const Vector mean = rng.normal_matrix(W, 1).col(0), var = rng.normal_matrix(W, 1).col(0).cwiseAbs();
      static_cast<BatchNorm&>(whole.layer(2)).set_running_statistics(mean, var);
      static_cast<BatchNorm&>(b.layer(0)).set_running_statistics(mean, var);
      whole.set_training(false);
      b.set_training(false);
    }
    const Matrix X = rng.normal_matrix(N, D);
    for (int order : {0, 1, 2}) {
      Matrix want, inner, got;
      whole.forward(X, order, want, nullptr);
      a.forward(X, order, inner, nullptr);
      b.forward_stack(inner, D, order, got);
      ASSERT_EQ(got.rows(), want.rows());
      EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 1e-14 * (1.0 + want.cwiseAbs().maxCoeff()))
          << "order " << order << (with_norm ? " with batch norm" : "");
    }
  }
}

TEST(ForwardStack, RefusesWrongShapesAndTrainingModeBatchNorm) {
  Network b(2);
  b.add(std::make_unique<BatchNorm>(2)).add(std::make_unique<Dense>(2, 1));
  Matrix out;
  EXPECT_THROW(b.forward_stack(Matrix::Zero(7, 2), 3, 1, out), Error);  // 7 rows: not N·(1 + 3)
  EXPECT_THROW(b.forward_stack(Matrix::Zero(8, 3), 3, 1, out), Error);  // 3 columns for width 2
  EXPECT_THROW(b.forward_stack(Matrix::Zero(8, 2), 3, 1, out), Error);  // training-mode batch norm
  b.set_training(false);
  EXPECT_NO_THROW(b.forward_stack(Matrix::Zero(8, 2), 3, 1, out));
  EXPECT_EQ(out.rows(), 8);
}

}  // namespace
}  // namespace kef::network
