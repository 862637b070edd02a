// kef::Mlp, now an instance of the network library, against its own previous hand-written
// implementation (reference_mlp.*, the twin): parameter layout and initialisation, features, J, S
// and every gradient (parameters and inputs, from adjoints of all channels) agree to 1e-13 relative
// (normwise per output matrix) for DKEF's architectures, including pre-activations above softplus's
// threshold of 30.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "mlp.hpp"
#include "reference_mlp.hpp"

namespace kef {
namespace {

double worst = 0.0;  // the largest relative difference seen, printed at the end

void expect_close(const Matrix& got, const Matrix& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  const double scale = std::max(want.cwiseAbs().maxCoeff(), 1e-300);
  const double rel = (got - want).cwiseAbs().maxCoeff() / scale;
  worst = std::max(worst, rel);
  EXPECT_LE(rel, 1e-13) << what;
}

struct Shape {
  Index D, W, L;
};

TEST(MlpTwin, ValuesDerivativesAndGradientsEqualTheHandWrittenImplementation) {
  const Shape shapes[] = {{1, 1, 1}, {3, 4, 1}, {2, 5, 2}, {3, 4, 3}, {11, 30, 3}, {5, 8, 4}};
  for (const auto& s : shapes) {
    const std::string tag =
        "D=" + std::to_string(s.D) + " W=" + std::to_string(s.W) + " L=" + std::to_string(s.L);
    Mlp net(s.D, s.W, s.L);
    test::ReferenceMlp ref(s.D, s.W, s.L);
    ASSERT_EQ(net.parameter_count(), ref.parameter_count()) << tag;
    RandomStream r1(7, "twin"), r2(7, "twin");
    net.initialize(r1);
    ref.initialize(r2);
    EXPECT_EQ((net.parameters() - ref.parameters()).cwiseAbs().maxCoeff(), 0.0) << tag << ": initialisation";
    // Non-zero biases; the second half of the rows is scaled so that some units pass softplus's threshold.
    Vector theta = net.parameters();
    theta += 0.3 * r1.normal_matrix(theta.size(), 1).col(0);
    net.set_parameters(theta);
    ref.set_parameters(theta);
    Matrix X = r1.normal_matrix(9, s.D);
    X.bottomRows(4) *= 40.0;
    for (int order = 0; order <= 2; ++order) {
      const std::string at = tag + " order " + std::to_string(order);
      Matrix a, b;
      Mlp::Tape ta;
      test::ReferenceMlp::Tape tb;
      net.forward_stacked(X, order, a, nullptr);
      ref.forward_stacked(X, order, b, nullptr);
      expect_close(a, b, at + ": forward_stacked");
      net.forward_stacked(X, order, a, &ta);
      ref.forward_stacked(X, order, b, &tb);
      expect_close(a, b, at + ": taped forward_stacked");
      const Matrix R = r1.normal_matrix(a.rows(), a.cols());
      Vector ga = Vector::Constant(net.parameter_count(), 0.5), gb = ga;  // accumulation too
      Matrix xa, xb;
      net.backward_stacked(X, ta, R, &ga, &xa);
      ref.backward_stacked(X, tb, R, &gb, &xb);
      expect_close(ga, gb, at + ": parameter gradient");
      expect_close(xa, xb, at + ": input gradient");
      // The FeatureStacks interface, with some adjoints left empty (= zero).
      FeatureStacks fa, fb, adj;
      net.forward(X, order, fa);
      ref.forward(X, order, fb);
      expect_close(fa.features, fb.features, at + ": features");
      ASSERT_EQ(fa.J.size(), fb.J.size());
      ASSERT_EQ(fa.S.size(), fb.S.size());
      for (std::size_t d = 0; d < fa.J.size(); ++d) expect_close(fa.J[d], fb.J[d], at + ": J");
      for (std::size_t d = 0; d < fa.S.size(); ++d) expect_close(fa.S[d], fb.S[d], at + ": S");
      adj.features = r1.normal_matrix(X.rows(), s.W);
      for (std::size_t d = 0; d < fa.J.size(); ++d)
        adj.J.push_back(d % 2 ? Matrix() : r1.normal_matrix(X.rows(), s.W));
      for (std::size_t d = 0; d < fa.S.size(); ++d) adj.S.push_back(r1.normal_matrix(X.rows(), s.W));
      Vector g1, g2;
      Matrix x1, x2;
      net.backward(X, order, adj, &g1, &x1);
      ref.backward(X, order, adj, &g2, &x2);
      expect_close(g1, g2, at + ": FeatureStacks parameter gradient");
      expect_close(x1, x2, at + ": FeatureStacks input gradient");
    }
  }
  std::printf("largest relative difference to the hand-written Mlp: %.3g\n", worst);
}

}  // namespace
}  // namespace kef
