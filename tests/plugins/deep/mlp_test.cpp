// The MLP of deep kernels: forward-mode input derivatives and the reverse-mode gradients for every
// weight and for the input, all against central differences.
#include "mlp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "kef/error.hpp"
#include "gradient_check.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

Mlp make_net(Index D, Index W, Index L, std::uint64_t seed) {
  Mlp net(D, W, L);
  RandomStream rng(seed, "mlp");
  net.initialize(rng);
  // Non-zero biases so that every code path (and both softplus branches) is exercised.
  Vector theta = net.parameters();
  theta += 0.3 * rng.normal_matrix(theta.size(), 1).col(0);
  net.set_parameters(theta);
  return net;
}

TEST(Mlp, ParameterCountAndInitialisation) {
  Mlp one(3, 5, 1), three(3, 5, 3);
  EXPECT_EQ(one.parameter_count(), 5 * 3 + 5);
  EXPECT_EQ(three.parameter_count(), (5 * 3 + 5) + 2 * (5 * 5 + 5) + 5 * 3);  // + skip V
  RandomStream rng(1, "init");
  Mlp big(4, 400, 1);
  big.initialize(rng);
  Vector w = big.parameters().head(400 * 4);
  // Weights ~ N(0, 1/W): the sample variance of 1600 draws is within 5·sqrt(2/1600)/W of 1/W.
  EXPECT_NEAR((w.array() - w.mean()).square().mean(), 1.0 / 400, 5 * std::sqrt(2.0 / 1600) / 400);
  EXPECT_EQ(big.parameters().tail(400).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_THROW(Mlp(0, 3, 1), Error);
}

TEST(Mlp, InputDerivativesMatchCentralDifferences) {
  for (Index L : {1, 2, 3}) {
    Mlp net = make_net(3, 4, L, 10 + static_cast<std::uint64_t>(L));
    RandomStream rng(2, "x");
    Matrix X = rng.normal_matrix(5, 3);
    FeatureStacks st;
    net.forward(X, 2, st);
    const double h = 1e-5;
    for (Index d = 0; d < 3; ++d) {
      Matrix Xp = X, Xm = X;
      Xp.col(d).array() += h;
      Xm.col(d).array() -= h;
      FeatureStacks p, m;
      net.forward(Xp, 1, p);
      net.forward(Xm, 1, m);
      Matrix fdJ = (p.features - m.features) / (2 * h);
      Matrix fdS = (p.J[static_cast<std::size_t>(d)] - m.J[static_cast<std::size_t>(d)]) / (2 * h);
      // Truncation O(h²) ~ 1e-10, rounding ~ 1e-16/h ~ 1e-11.
      EXPECT_LT((st.J[static_cast<std::size_t>(d)] - fdJ).cwiseAbs().maxCoeff(), 1e-8)
          << "L=" << L << " d=" << d;
      EXPECT_LT((st.S[static_cast<std::size_t>(d)] - fdS).cwiseAbs().maxCoeff(), 1e-8)
          << "L=" << L << " d=" << d;
    }
  }
}

// L = Σ adjoints ⊙ outputs; backward() must give dL/dθ and dL/dX.
double contract(const Mlp& net, const Matrix& X, int order, const FeatureStacks& adj) {
  FeatureStacks st;
  net.forward(X, order, st);
  double v = (adj.features.array() * st.features.array()).sum();
  for (std::size_t d = 0; d < adj.J.size() && order >= 1; ++d)
    v += (adj.J[d].array() * st.J[d].array()).sum();
  for (std::size_t d = 0; d < adj.S.size() && order >= 2; ++d)
    v += (adj.S[d].array() * st.S[d].array()).sum();
  return v;
}

TEST(Mlp, BackwardMatchesCentralDifferencesForWeightsAndInputs) {
  for (Index L : {1, 2, 3}) {
    for (int order : {0, 1, 2}) {
      Mlp net = make_net(2, 3, L, 20 + static_cast<std::uint64_t>(L));
      RandomStream rng(3, "adj");
      Matrix X = rng.normal_matrix(4, 2);
      FeatureStacks adj;
      adj.features = rng.normal_matrix(4, 3);
      if (order >= 1) adj.J = {rng.normal_matrix(4, 3), rng.normal_matrix(4, 3)};
      if (order >= 2) adj.S = {rng.normal_matrix(4, 3), rng.normal_matrix(4, 3)};
      Vector g = Vector::Zero(net.parameter_count());
      Matrix gx = Matrix::Zero(4, 2);
      net.backward(X, order, adj, &g, &gx);

      Vector fd = test::numerical_gradient(
          [&](const Vector& t) {
            Mlp n2 = net;
            n2.set_parameters(t);
            return contract(n2, X, order, adj);
          },
          net.parameters());
      EXPECT_TRUE(test::gradients_agree(g, fd, 1e-7))
          << "L=" << L << " order=" << order;
      Eigen::Map<const Vector> x0(X.data(), X.size());
      Vector fdx = test::numerical_gradient(
          [&](const Vector& xv) {
            return contract(net, Eigen::Map<const Matrix>(xv.data(), 4, 2), order, adj);
          },
          Vector(x0));
      Eigen::Map<const Vector> gxv(gx.data(), gx.size());
      EXPECT_TRUE(test::gradients_agree(gxv, fdx, 1e-7))
          << "L=" << L << " order=" << order;
    }
  }
}

TEST(Mlp, SoftplusTurnsIntoTheIdentityAboveThirtyWithoutOverflow) {
  Mlp net(1, 1, 1);
  Vector theta(2);
  theta << 1.0, 0.0;  // h = s(x)
  net.set_parameters(theta);
  Matrix X(3, 1);
  X << 29.0, 31.0, -800.0;
  FeatureStacks st;
  net.forward(X, 2, st);
  EXPECT_NEAR(st.features(0, 0), 29.0 + std::log1p(std::exp(-29.0)), 1e-12);
  EXPECT_EQ(st.features(1, 0), 31.0);
  EXPECT_EQ(st.J[0](1, 0), 1.0);
  EXPECT_GE(st.features(2, 0), 0.0);
  EXPECT_TRUE(st.features.allFinite() && st.J[0].allFinite() && st.S[0].allFinite());
}

// The order-0 pass without a tape activates in place (its own loop); it must give exactly the values
// of the taped pass (the same products), and those of the derivative pass to a few ulps: that pass
// multiplies a matrix of 1 + 2D stacked channels, a differently shaped product that the compiler and
// Eigen may block or contract into FMAs differently (bitwise under g++ -O3, 8.9e-16 apart under
// clang -O1 in the sanitizer build), as in NetworkLayers.ValueOnlyPassEqualsTheTapedPass....
TEST(Mlp, ValueOnlyPassEqualsTheTapedPassBitwiseAndTheDerivativePassToAFewUlps) {
  const Mlp net = make_net(4, 7, 3, 41);
  RandomStream rng(42, "x");
  const Matrix X = 3.0 * rng.normal_matrix(301, 4);
  Matrix fast, taped, stacked;
  Mlp::Tape tape;
  net.forward_stacked(X, 0, fast, nullptr);
  net.forward_stacked(X, 0, taped, &tape);
  net.forward_stacked(X, 2, stacked, nullptr);
  EXPECT_EQ((fast - taped).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LE((fast - stacked.topRows(X.rows())).cwiseAbs().maxCoeff(),
            8 * std::numeric_limits<double>::epsilon() * std::max(1.0, fast.cwiseAbs().maxCoeff()));
}

// s(t) = log(1 + e^t) against std::log1p/std::exp over the whole range, both passes. Budget
// (u = 2^-53): e = e^{−|t|} ≤ 3u (kef::exp_array), 1 + e and z = e/(2 + e) one rounding each, the
// atanh series and its final fused step ≤ 2u, log1p's condition number in e is ≤ 1, and the
// reference itself < 2u: 8u relative bounds it.
TEST(Mlp, SoftplusIsAccurateToAFewUlpOverTheWholeRange) {
  Mlp net(1, 1, 1);
  Vector theta(2);
  theta << 1.0, 0.0;  // h = s(x)
  net.set_parameters(theta);
  const Index n = 4001;
  Matrix X(n, 1);
  for (Index i = 0; i < n; ++i) X(i, 0) = -40.0 + 80.0 * static_cast<double>(i) / static_cast<double>(n - 1);
  Matrix fast;
  net.forward_stacked(X, 0, fast, nullptr);
  FeatureStacks st;
  net.forward(X, 1, st);
  const double budget = 8.0 * std::ldexp(1.0, -53);
  for (Index i = 0; i < n; ++i) {
    const double t = X(i, 0);
    const double want = t > 30.0 ? t : t > 0.0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t));
    EXPECT_LE(std::abs(fast(i, 0) - want), budget * want) << "t = " << t;
    EXPECT_EQ(fast(i, 0), st.features(i, 0)) << "t = " << t;
  }
}

}  // namespace
}  // namespace kef
