#pragma once
// Central-difference checks shared by the network tests: forward-mode J and S against differences
// of the values and of J, and reverse mode (from adjoints of every channel) against differences of
// ⟨R, stack⟩ in the parameters and in the inputs.
#include <gtest/gtest.h>

#include <string>

#include "kef/network/network.hpp"
#include "test_support.hpp"

namespace kef::network::testing {

// Row block c (N rows) of a stacked matrix.
inline Matrix channel(const Matrix& stack, Index n, Index c) { return stack.middleRows(c * n, n); }

inline double max_scaled_error(const Matrix& got, const Matrix& want) {
  return ((got - want).array().abs() / (1.0 + want.array().abs())).maxCoeff();
}

// J_d = ∂h/∂x_d and S_d = ∂²h/∂x_d² from forward(X, 2) against central differences (step h) of the
// values and of J_d.
inline void expect_input_derivatives(const Network& net, const Matrix& X, const std::string& what,
                                     double tol = 1e-7, double h = 1e-5) {
  const Index N = X.rows(), D = X.cols();
  Matrix st;
  net.forward(X, 2, st, nullptr);
  ASSERT_EQ(st.rows(), N * (1 + 2 * D));
  for (Index d = 0; d < D; ++d) {
    Matrix Xp = X, Xm = X;
    Xp.col(d).array() += h;
    Xm.col(d).array() -= h;
    Matrix p, m;
    net.forward(Xp, 1, p, nullptr);
    net.forward(Xm, 1, m, nullptr);
    const Matrix fdJ = (channel(p, N, 0) - channel(m, N, 0)) / (2 * h);
    const Matrix fdS = (channel(p, N, 1 + d) - channel(m, N, 1 + d)) / (2 * h);
    EXPECT_LT(max_scaled_error(channel(st, N, 1 + d), fdJ), tol) << what << ": J_" << d;
    EXPECT_LT(max_scaled_error(channel(st, N, 1 + D + d), fdS), tol) << what << ": S_" << d;
  }
}

// Reverse mode at every order: gradients of ⟨R, forward(X, order)⟩ (R random, every channel) in
// the parameters and in X against central differences.
inline void expect_reverse_mode(const Network& net, const Matrix& X, const std::string& what,
                                double tol = 1e-7, int max_order = 2) {
  const Index N = X.rows(), D = X.cols();
  for (int order = 0; order <= max_order; ++order) {
    RandomStream rng(100 + static_cast<std::uint64_t>(order), "adjoint");
    const Matrix R = rng.normal_matrix(Network::stacked_rows(N, D, order), net.output_dim());
    Network::Tape tape;
    Matrix st;
    net.forward(X, order, st, &tape);
    Vector g;
    Matrix gX;
    net.backward(X, tape, R, &g, &gX);
    auto loss_theta = [&](const Vector& theta) {
      Network n2 = net;
      n2.set_parameters(theta);
      Matrix s;
      n2.forward(X, order, s, nullptr);
      return R.cwiseProduct(s).sum();
    };
    auto loss_x = [&](const Vector& xv) {
      Matrix s;
      net.forward(Eigen::Map<const Matrix>(xv.data(), N, D), order, s, nullptr);
      return R.cwiseProduct(s).sum();
    };
    const Vector fd_theta = kef::test::numerical_gradient(loss_theta, net.parameters());
    const Vector fd_x = kef::test::numerical_gradient(loss_x, Eigen::Map<const Vector>(X.data(), X.size()));
    ASSERT_EQ(g.size(), net.parameter_count());
    EXPECT_LT(max_scaled_error(g, fd_theta), tol) << what << ": parameter gradient, order " << order;
    EXPECT_LT(max_scaled_error(Eigen::Map<const Vector>(gX.data(), gX.size()), fd_x), tol)
        << what << ": input gradient, order " << order;
  }
}

}  // namespace kef::network::testing
