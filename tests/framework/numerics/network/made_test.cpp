// MADE's degrees and masks, and the property they exist for: output i of a masked network depends
// only on the inputs before input i in the order (checked exactly on the forward-mode Jacobian).
#include "kef/network/made.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kef/error.hpp"
#include "kef/network/activation.hpp"
#include "kef/network/dense.hpp"
#include "kef/network/network.hpp"

namespace kef::network {
namespace {

TEST(Made, InputAndHiddenDegrees) {
  EXPECT_EQ(made::input_degrees(4, made::InputOrder::natural), (std::vector<Index>{1, 2, 3, 4}));
  EXPECT_EQ(made::input_degrees(4, made::InputOrder::reversed), (std::vector<Index>{4, 3, 2, 1}));
  RandomStream rng(5, "made");
  auto r = made::input_degrees(7, made::InputOrder::random, &rng);
  auto sorted = r;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, made::input_degrees(7, made::InputOrder::natural));
  EXPECT_NE(r, sorted);  // a permutation other than the identity for this seed
  EXPECT_THROW(made::input_degrees(3, made::InputOrder::random), Error);
  // Sequential: k mod (D − 1) + 1.
  EXPECT_EQ(made::hidden_degrees(7, 4, made::HiddenDegrees::sequential, {}),
            (std::vector<Index>{1, 2, 3, 1, 2, 3, 1}));
  EXPECT_EQ(made::hidden_degrees(3, 1, made::HiddenDegrees::sequential, {}), (std::vector<Index>{0, 0, 0}));
  // Random: within [min(previous), D − 1].
  const auto h = made::hidden_degrees(200, 5, made::HiddenDegrees::random, {3, 4, 5}, &rng);
  EXPECT_EQ(*std::min_element(h.begin(), h.end()), 3);
  EXPECT_EQ(*std::max_element(h.begin(), h.end()), 4);
}

TEST(Made, MasksCompareDegrees) {
  const Matrix hm = made::hidden_mask({1, 2, 3}, {2, 1});
  Matrix want(2, 3);
  want << 1, 1, 0, 1, 0, 0;
  EXPECT_EQ(hm, want);
  const Matrix om = made::output_mask({1, 2}, {1, 2, 3});
  Matrix want_out(3, 2);
  want_out << 0, 0, 1, 0, 1, 1;
  EXPECT_EQ(om, want_out);
}

// A two-hidden-layer MADE with two outputs per input (a Gaussian MADE's μ and log precision):
// ∂ out_i / ∂ x_j is exactly 0 unless degree(x_j) < degree(out_i), and not identically 0 otherwise.
TEST(Made, MaskedNetworkIsAutoregressive) {
  const Index D = 4, H = 9;
  for (auto order : {made::InputOrder::natural, made::InputOrder::reversed, made::InputOrder::random}) {
    for (auto mode : {made::HiddenDegrees::sequential, made::HiddenDegrees::random}) {
      RandomStream rng(11, "made-net");
      const auto in = made::input_degrees(D, order, &rng);
      const auto h1 = made::hidden_degrees(H, D, mode, in, &rng);
      const auto h2 = made::hidden_degrees(H, D, mode, h1, &rng);
      std::vector<Index> out = in;
      out.insert(out.end(), in.begin(), in.end());
      Network net(D);
      net.add(std::make_unique<MaskedDense>(made::hidden_mask(in, h1)))
          .add(std::make_unique<Activation>(ActivationKind::tanh, H))
          .add(std::make_unique<MaskedDense>(made::hidden_mask(h1, h2)))
          .add(std::make_unique<Activation>(ActivationKind::relu, H))
          .add(std::make_unique<MaskedDense>(made::output_mask(h2, out)));
      net.initialize(rng);
      // Masked weights are zero after initialisation and get zero gradients.
      const Matrix X = rng.normal_matrix(6, D);
      Matrix st;
      Network::Tape tape;
      net.forward(X, 1, st, &tape);
      Vector g;
      net.backward(X, tape, Matrix::Ones(st.rows(), st.cols()), &g, nullptr);
      const Matrix m1 = made::hidden_mask(in, h1);
      const Eigen::Map<const Matrix> W1(net.parameters().data(), H, D), G1(g.data(), H, D);
      EXPECT_EQ(W1.cwiseProduct((1.0 - m1.array()).matrix()).cwiseAbs().maxCoeff(), 0.0);
      EXPECT_EQ(G1.cwiseProduct((1.0 - m1.array()).matrix()).cwiseAbs().maxCoeff(), 0.0);
      for (Index j = 0; j < D; ++j) {
        const Matrix J = st.middleRows((1 + j) * 6, 6);
        for (Index i = 0; i < 2 * D; ++i) {
          const double mx = J.col(i).cwiseAbs().maxCoeff();
          if (in[static_cast<std::size_t>(j)] >= out[static_cast<std::size_t>(i)]) {
            EXPECT_EQ(mx, 0.0) << "output " << i << " input " << j;
          } else if (mode == made::HiddenDegrees::sequential) {
            EXPECT_GT(mx, 0.0) << "output " << i << " input " << j;  // every allowed path exists
          }
        }
      }
    }
  }
}

// Parameters whose masked entries are not zero (a PyTorch MADE's raw weights, which its forward
// multiplies by the mask): the network keeps them as given and reads them masked, so values, input
// derivatives and gradients equal those of the same parameters with the masked entries zeroed,
// bit for bit, and the masked entries' gradients are zero.
TEST(Made, UnmaskedParameterValuesAreKeptButNeverRead) {
  const Index D = 3, H = 7;
  const auto in = made::input_degrees(D, made::InputOrder::natural, nullptr);
  const auto h1 = made::hidden_degrees(H, D, made::HiddenDegrees::sequential, in, nullptr);
  std::vector<Index> out = in;
  Network net(D);
  net.add(std::make_unique<MaskedDense>(made::hidden_mask(in, h1)))
      .add(std::make_unique<Activation>(ActivationKind::tanh, H))
      .add(std::make_unique<MaskedDense>(made::output_mask(h1, out)));
  RandomStream rng(5, "raw");
  const Vector raw = rng.normal_matrix(net.parameter_count(), 1).col(0);
  Network zeroed = net;
  net.set_parameters(raw);
  Vector masked = raw;
  const Matrix m1 = made::hidden_mask(in, h1), m2 = made::output_mask(h1, out);
  Eigen::Map<Matrix>(masked.data(), H, D).array() *= m1.array();
  Eigen::Map<Matrix>(masked.data() + H * D + H, D, H).array() *= m2.array();
  EXPECT_GT((raw - masked).cwiseAbs().maxCoeff(), 0.0);
  zeroed.set_parameters(masked);
  for (Index i = 0; i < raw.size(); ++i) ASSERT_EQ(net.parameters()[i], raw[i]);  // kept as given
  const Matrix X = rng.normal_matrix(5, D);
  Matrix a, b;
  Network::Tape ta, tb;
  net.forward(X, 2, a, &ta);
  zeroed.forward(X, 2, b, &tb);
  ASSERT_EQ(a.rows(), b.rows());
  for (Index i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << i;
  const Matrix adjoint = rng.normal_matrix(a.rows(), a.cols());
  Vector ga, gb;
  net.backward(X, ta, adjoint, &ga, nullptr);
  zeroed.backward(X, tb, adjoint, &gb, nullptr);
  for (Index i = 0; i < ga.size(); ++i) ASSERT_EQ(ga[i], gb[i]) << i;
  for (Index i = 0; i < ga.size(); ++i) {
    if (raw[i] != masked[i]) {
      EXPECT_EQ(ga[i], 0.0) << i;
    }
  }
}

}  // namespace
}  // namespace kef::network
