// Blocked passes on threads: bitwise the same for 1 and 2 threads (values, J, S, parameter and input
// gradients), equal to the one-block pass up to rounding, and refused for batch norm in training mode.
#include "blocked.hpp"

#include <gtest/gtest.h>

#include "kef/error.hpp"
#include "kef/network/activation.hpp"
#include "kef/network/batch_norm.hpp"
#include "kef/network/dense.hpp"
#include "residual.hpp"

namespace kef::network {
namespace {

Network mixed(Index D) {
  Sequence block;
  block.add(std::make_unique<Dense>(6, 6));
  block.add(std::make_unique<Activation>(ActivationKind::elu, 6));
  Network net(D);
  net.add(std::make_unique<Dense>(D, 6))
      .add(std::make_unique<Activation>(ActivationKind::tanh, 6))
      .add(std::make_unique<Residual>(std::move(block)))
      .add(std::make_unique<InputSkip>(6, D))
      .add(std::make_unique<Activation>(ActivationKind::softplus, 6))
      .add(std::make_unique<Dense>(6, 2));
  RandomStream rng(3, "blocked");
  net.initialize(rng);
  return net;
}

TEST(Blocked, BitwiseTheSameForOneAndTwoThreadsAndCloseToOneBlock) {
  const Index D = 3, N = 1000;  // 4 blocks of 256 rows, the last one of 232
  const Network net = mixed(D);
  RandomStream rng(4, "blocked-x");
  const Matrix X = rng.normal_matrix(N, D);
  for (int order = 0; order <= 2; ++order) {
    const Matrix R = rng.normal_matrix(Network::stacked_rows(N, D, order), 2);
    Matrix out1, out2, ref;
    BlockedTape t1, t2;
    forward_blocked(net, X, order, out1, &t1, Context(1, 1));
    forward_blocked(net, X, order, out2, &t2, Context(1, 2));
    EXPECT_EQ(t1.blocks.size(), 4u);
    Vector g1, g2, gr;
    Matrix x1, x2, xr;
    backward_blocked(net, X, t1, R, &g1, &x1, Context(1, 1));
    backward_blocked(net, X, t2, R, &g2, &x2, Context(1, 2));
    EXPECT_TRUE(out1 == out2) << "order " << order;
    EXPECT_TRUE(g1 == g2) << "order " << order;
    EXPECT_TRUE(x1 == x2) << "order " << order;
    Network::Tape tr;
    net.forward(X, order, ref, &tr);
    net.backward(X, tr, R, &gr, &xr);
    // Rows are independent, so only the order of the gradient's sum over samples differs.
    EXPECT_LE((out1 - ref).cwiseAbs().maxCoeff(), 1e-13 * ref.cwiseAbs().maxCoeff()) << "order " << order;
    EXPECT_LE((g1 - gr).cwiseAbs().maxCoeff(), 1e-12 * gr.cwiseAbs().maxCoeff()) << "order " << order;
    EXPECT_LE((x1 - xr).cwiseAbs().maxCoeff(), 1e-13 * xr.cwiseAbs().maxCoeff()) << "order " << order;
  }
  // An adjoint of the wrong shape, or another input size, is refused.
  BlockedTape t;
  Matrix out;
  forward_blocked(net, X, 1, out, &t, Context(1, 2));
  Vector g;
  EXPECT_THROW(backward_blocked(net, X.topRows(10), t, out, &g, nullptr, Context(1, 2)), Error);
  EXPECT_THROW(backward_blocked(net, X, t, out.topRows(10), &g, nullptr, Context(1, 2)), Error);
  EXPECT_THROW(forward_blocked(net, X, 1, out, &t, Context(1, 2), 0), Error);
}

TEST(Blocked, BatchNormOnlyInEvaluationMode) {
  Network net(2);
  net.add(std::make_unique<BatchNorm>(2)).add(std::make_unique<Dense>(2, 1));
  RandomStream rng(5, "blocked-bn");
  const Matrix X = rng.normal_matrix(10, 2);
  Matrix out;
  EXPECT_THROW(forward_blocked(net, X, 0, out, nullptr, Context(1, 2)), Error);
  net.set_training(false);
  EXPECT_NO_THROW(forward_blocked(net, X, 0, out, nullptr, Context(1, 2), 4));
  EXPECT_TRUE(out == net.value(X));
}

}  // namespace
}  // namespace kef::network
