// The network library's layers: every layer's forward-mode first and second input derivatives and
// its reverse mode (parameters and inputs, from adjoints of values, J and S) against central
// differences; the value-only path against the taped one; batch norm in both modes; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "kef/error.hpp"
#include "kef/network/activation.hpp"
#include "kef/network/batch_norm.hpp"
#include "kef/network/dense.hpp"
#include "kef/network/made.hpp"
#include "kef/network/network.hpp"
#include "network_check.hpp"
#include "residual.hpp"

namespace kef::network {
namespace {

using testing::channel;
using testing::expect_input_derivatives;
using testing::expect_reverse_mode;
using testing::max_scaled_error;

constexpr Index kD = 3;

LayerPtr act(ActivationKind k, Index w) { return std::make_unique<Activation>(k, w); }
LayerPtr dense(Index in, Index out) { return std::make_unique<Dense>(in, out); }

// Random parameters (biases included, so that no unit sits at a kink or the softplus threshold by
// construction) at a scale where every activation is in its curved range.
void randomize(Network& net, std::uint64_t seed) {
  RandomStream rng(seed, "network-test");
  net.initialize(rng);
  Vector theta = net.parameters();
  theta += 0.4 * rng.normal_matrix(theta.size(), 1).col(0);
  net.set_parameters(theta);
}

struct Case {
  std::string name;
  std::function<Network()> make;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"dense", [] { return std::move(Network(kD).add(dense(kD, 4))); }});
  out.push_back({"dense without bias", [] {
                   return std::move(Network(kD).add(std::make_unique<Dense>(kD, 4, std::nullopt, false)));
                 }});
  for (auto k : {ActivationKind::softplus, ActivationKind::tanh, ActivationKind::sigmoid,
                 ActivationKind::relu, ActivationKind::elu, ActivationKind::linear}) {
    out.push_back({activation_name(k) + " between dense layers",
                   [k] { return std::move(Network(kD).add(dense(kD, 5)).add(act(k, 5)).add(dense(5, 2))); }});
    out.push_back({activation_name(k) + " on the input",
                   [k] { return std::move(Network(kD).add(act(k, kD)).add(dense(kD, 2))); }});
  }
  out.push_back({"masked dense", [] {
                   const auto in = made::input_degrees(kD, made::InputOrder::reversed);
                   const auto hid = made::hidden_degrees(6, kD, made::HiddenDegrees::sequential, in);
                   return std::move(Network(kD)
                                        .add(std::make_unique<MaskedDense>(made::hidden_mask(in, hid)))
                                        .add(act(ActivationKind::tanh, 6))
                                        .add(std::make_unique<MaskedDense>(made::output_mask(hid, in))));
                 }});
  out.push_back({"input skip", [] {
                   return std::move(Network(kD)
                                        .add(dense(kD, 4))
                                        .add(act(ActivationKind::softplus, 4))
                                        .add(dense(4, 4))
                                        .add(std::make_unique<InputSkip>(4, kD))
                                        .add(act(ActivationKind::softplus, 4))
                                        .add(dense(4, 2)));
                 }});
  out.push_back({"residual", [] {
                   Sequence block;
                   block.add(dense(4, 4));
                   block.add(act(ActivationKind::tanh, 4));
                   block.add(dense(4, 4));
                   return std::move(Network(kD)
                                        .add(dense(kD, 4))
                                        .add(std::make_unique<Residual>(std::move(block)))
                                        .add(act(ActivationKind::sigmoid, 4))
                                        .add(dense(4, 2)));
                 }});
  out.push_back({"batch norm (evaluation)", [] {
                   Network net(kD);
                   net.add(dense(kD, 4))
                       .add(std::make_unique<BatchNorm>(4))
                       .add(act(ActivationKind::tanh, 4))
                       .add(dense(4, 2));
                   Vector m(4), v(4);
                   m << 0.3, -0.2, 0.1, 0.5;
                   v << 0.8, 1.7, 0.4, 2.5;
                   dynamic_cast<BatchNorm&>(net.layer(1)).set_running_statistics(m, v);
                   net.set_training(false);
                   return net;
                 }});
  return out;
}

Matrix inputs(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "network-x");
  return rng.normal_matrix(n, kD);
}

TEST(NetworkLayers, ForwardModeInputDerivativesMatchCentralDifferences) {
  std::uint64_t seed = 1;
  for (const auto& c : cases()) {
    Network net = c.make();
    randomize(net, seed++);
    expect_input_derivatives(net, inputs(5, seed), c.name);
  }
}

TEST(NetworkLayers, ReverseModeThroughValuesAndDerivativesMatchesCentralDifferences) {
  std::uint64_t seed = 50;
  for (const auto& c : cases()) {
    Network net = c.make();
    randomize(net, seed++);
    expect_reverse_mode(net, inputs(4, seed), c.name);
  }
}

TEST(NetworkLayers, ValueOnlyPassEqualsTheTapedPassBitwiseAndTheDerivativePassToAFewUlps) {
  std::uint64_t seed = 90;
  for (const auto& c : cases()) {
    Network net = c.make();
    randomize(net, seed++);
    const Matrix X = inputs(7, seed);
    Matrix fast, taped, stacked;
    Network::Tape tape;
    net.forward(X, 0, fast, nullptr);
    net.forward(X, 0, taped, &tape);
    net.forward(X, 2, stacked, nullptr);
    EXPECT_EQ((fast - taped).cwiseAbs().maxCoeff(), 0.0) << c.name;
    // The derivative pass multiplies a matrix of 1 + 2D stacked channels: a differently shaped product,
    // which the compiler and Eigen may block or vectorise differently, so a few ulps, not bitwise.
    EXPECT_LE((fast - channel(stacked, 7, 0)).cwiseAbs().maxCoeff(),
              8 * std::numeric_limits<double>::epsilon() * std::max(1.0, fast.cwiseAbs().maxCoeff()))
        << c.name;
    EXPECT_EQ((fast - net.value(X)).cwiseAbs().maxCoeff(), 0.0) << c.name;
  }
}

// s', s'', s''' of every activation against central differences of s, s', s'' over both signs and
// the tails (softplus above its threshold of 30 is the identity: 1, 0, 0).
TEST(NetworkLayers, ActivationDerivativesMatchCentralDifferences) {
  const std::vector<double> ts = {-40.0, -12.0, -3.1, -0.7, -1e-3, 2e-3, 0.45,
                                  1.3,   4.2,   11.0, 29.0, 31.0,  45.0};
  const Index n = static_cast<Index>(ts.size());
  const double h = 1e-6;
  for (auto k : {ActivationKind::softplus, ActivationKind::tanh, ActivationKind::sigmoid,
                 ActivationKind::relu, ActivationKind::elu, ActivationKind::linear}) {
    Vector s(n), d1(n), d2(n), d3(n);
    activate(k, ts.data(), n, 3, s.data(), d1.data(), d2.data(), d3.data());
    Vector tp(n), tm(n);
    for (Index i = 0; i < n; ++i) {
      tp[i] = ts[static_cast<std::size_t>(i)] + h;
      tm[i] = ts[static_cast<std::size_t>(i)] - h;
    }
    Vector sp(n), sm(n), p1(n), m1(n), p2(n), m2(n), unused(n);
    activate(k, tp.data(), n, 2, sp.data(), p1.data(), p2.data(), nullptr);
    activate(k, tm.data(), n, 2, sm.data(), m1.data(), m2.data(), nullptr);
    for (Index i = 0; i < n; ++i) {
      const std::string at = activation_name(k) + " at " + std::to_string(ts[static_cast<std::size_t>(i)]);
      EXPECT_NEAR(d1[i], (sp[i] - sm[i]) / (2 * h), 1e-8 * (1 + std::abs(d1[i]))) << at;
      EXPECT_NEAR(d2[i], (p1[i] - m1[i]) / (2 * h), 1e-8) << at;
      EXPECT_NEAR(d3[i], (p2[i] - m2[i]) / (2 * h), 1e-8) << at;
    }
    // The value-only call (in place) gives the same values.
    Vector inplace = Eigen::Map<const Vector>(ts.data(), n);
    activate(k, inplace.data(), n, 0, inplace.data(), nullptr, nullptr, nullptr);
    EXPECT_EQ((inplace - s).cwiseAbs().maxCoeff(), 0.0) << activation_name(k);
  }
  // Closed forms at a few points (not only self-consistency).
  const double t[] = {-2.0, 0.5};
  double s[2], d1[2], d2[2], d3[2];
  activate(ActivationKind::sigmoid, t, 2, 3, s, d1, d2, d3);
  for (int i = 0; i < 2; ++i) {
    const double sg = 1.0 / (1.0 + std::exp(-t[i]));
    EXPECT_NEAR(s[i], sg, 1e-15);
    EXPECT_NEAR(d1[i], sg * (1 - sg), 1e-15);
    EXPECT_NEAR(d2[i], sg * (1 - sg) * (1 - 2 * sg), 1e-15);
  }
  activate(ActivationKind::softplus, t, 2, 1, s, d1, nullptr, nullptr);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(s[i], std::log1p(std::exp(t[i])), 1e-15);
  activate(ActivationKind::elu, t, 2, 1, s, d1, nullptr, nullptr);
  EXPECT_NEAR(s[0], std::exp(-2.0) - 1.0, 1e-15);
  EXPECT_EQ(s[1], 0.5);
  EXPECT_EQ(activation_from_name("relu"), ActivationKind::relu);
  EXPECT_THROW(activation_from_name("swish"), Error);
}

// Ulps between two finite doubles of the same sign (0 when equal).
double ulp_distance(double a, double b) {
  if (a == b) return 0.0;
  const double lo = std::min(std::abs(a), std::abs(b)), hi = std::max(std::abs(a), std::abs(b));
  if ((a < 0) != (b < 0)) return std::numeric_limits<double>::infinity();
  double steps = 0.0;
  for (double x = lo; x < hi && steps < 1e6; x = std::nextafter(x, hi)) ++steps;
  return steps;
}

// The vectorised tanh (activation.cpp: kef::exp_array above |t| = 0.4, an odd series below) against
// std::tanh element by element: a dense sweep of [-25, 25] crossing the branch point, both sides of
// 0.4 to the ulp, tiny and subnormal values, ±0, the saturated range, ±inf and NaN, in chunks of
// every length mod 256 (the kernel's chunk). Bound: 4 ulp (observed maximum printed).
TEST(NetworkLayers, VectorisedTanhMatchesStdTanhWithinFourUlp) {
  std::vector<double> t;
  for (int i = -250000; i <= 250000; ++i) t.push_back(i * 1e-4);
  for (double x = 1e-300; x < 1.0; x *= 1.37) {
    t.push_back(x);
    t.push_back(-x);
  }
  for (double b : {0.4, -0.4}) {
    double up = b, down = b;
    for (int k = 0; k < 64; ++k) {
      t.push_back(up = std::nextafter(up, 1e9));
      t.push_back(down = std::nextafter(down, -1e9));
    }
  }
  for (double x : {0.0, -0.0, 4.9e-324, -4.9e-324, 2.2250738585072014e-308, 18.0, 19.06, 19.1, 20.0, 354.0,
                   710.0, 1e300, -1e300, -19.1})
    t.push_back(x);
  const Index n = static_cast<Index>(t.size());
  Vector s(n), d1(n);
  activate(ActivationKind::tanh, t.data(), n, 1, s.data(), d1.data(), nullptr, nullptr);
  double worst = 0.0, worst_at = 0.0;
  for (Index i = 0; i < n; ++i) {
    const double x = t[static_cast<std::size_t>(i)], ref = std::tanh(x);
    ASSERT_EQ(std::signbit(s[i]), std::signbit(ref)) << "tanh(" << x << ")";
    const double u = ulp_distance(s[i], ref);
    if (u > worst) worst = u, worst_at = x;
    ASSERT_LE(u, 4.0) << "tanh(" << x << ") = " << s[i] << ", std::tanh " << ref;
    ASSERT_EQ(d1[i], 1.0 - s[i] * s[i]);
  }
  std::printf("vectorised tanh: max %g ulp from std::tanh (at %.17g) over %ld points\n", worst, worst_at,
              static_cast<long>(n));
  // Every chunk length and offset (the kernel works in chunks of 256 and must not read past n).
  for (Index len : {Index(1), Index(3), Index(255), Index(256), Index(257), Index(1000)}) {
    Vector part(len);
    activate(ActivationKind::tanh, t.data() + 1000, len, 0, part.data(), nullptr, nullptr, nullptr);
    for (Index i = 0; i < len; ++i) EXPECT_EQ(part[i], s[1000 + i]);
  }
  const double special[] = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  double out[3];
  activate(ActivationKind::tanh, special, 3, 0, out, nullptr, nullptr, nullptr);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], -1.0);
  EXPECT_TRUE(std::isnan(out[2]));
}

Network batch_norm_net() {
  Network net(kD);
  net.add(dense(kD, 4))
      .add(std::make_unique<BatchNorm>(4))
      .add(act(ActivationKind::tanh, 4))
      .add(dense(4, 2));
  randomize(net, 7);
  return net;
}

// Training mode: every output depends on the whole batch through its mean and variance; the gradient
// in X includes that coupling (central differences move one entry of X and so the statistics too).
TEST(NetworkLayers, BatchNormTrainingModeGradientsMatchCentralDifferences) {
  const Network net = batch_norm_net();
  ASSERT_TRUE(net.training());
  expect_reverse_mode(net, inputs(6, 3), "batch norm (training)", 1e-7, 0);
  // Standardised per unit: the batch norm's output (before its scale e^γ and shift β) has mean 0 and
  // variance v/(v + ε) over the batch.
  Network bare(kD);
  bare.add(std::make_unique<BatchNorm>(kD));
  const Matrix X = inputs(50, 4);
  const Matrix Y = bare.value(X);
  for (Index j = 0; j < kD; ++j) {
    const double v = (X.col(j).array() - X.col(j).mean()).square().mean();
    EXPECT_NEAR(Y.col(j).mean(), 0.0, 1e-14);
    EXPECT_NEAR(Y.col(j).array().square().mean(), v / (v + 1e-5), 1e-13);
  }
}

TEST(NetworkLayers, BatchNormRunningStatisticsAndModes) {
  Network net(kD);
  net.add(std::make_unique<BatchNorm>(kD));
  const Matrix X = inputs(20, 5);
  Network::Tape tape;
  Matrix out;
  net.forward(X, 0, out, &tape);
  const Vector mean = X.colwise().mean().transpose();
  const Vector var = (X.rowwise() - mean.transpose()).array().square().colwise().mean().transpose();
  net.update_running_statistics(tape, 0.1);
  const auto& bn = dynamic_cast<const BatchNorm&>(net.layer(0));
  EXPECT_LT((bn.running_mean() - 0.1 * mean).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((bn.running_variance() - (0.9 * Vector::Ones(kD) + 0.1 * var)).cwiseAbs().maxCoeff(), 1e-15);
  net.update_running_statistics(tape, 1.0);  // momentum 1 records the batch's statistics
  EXPECT_LT((bn.running_mean() - mean).cwiseAbs().maxCoeff(), 1e-15);
  // Evaluation mode with the recorded statistics reproduces the training-mode output on that batch.
  net.set_training(false);
  EXPECT_LT((net.value(X) - out).cwiseAbs().maxCoeff(), 1e-14);
  // Input derivatives exist in evaluation mode only; an evaluation tape cannot update statistics.
  Network::Tape eval_tape;
  EXPECT_NO_THROW(net.forward(X, 2, out, &eval_tape));
  EXPECT_THROW(net.update_running_statistics(eval_tape, 0.1), Error);
  net.set_training(true);
  EXPECT_EQ(net.max_order(), 0);
  EXPECT_THROW(net.forward(X, 1, out, nullptr), Error);
  EXPECT_THROW(net.update_running_statistics(tape, 0.0), Error);
}

TEST(NetworkLayers, ParameterLayoutInitialisationAndCopies) {
  Network net(kD);
  net.add(dense(kD, 4))
      .add(act(ActivationKind::tanh, 4))
      .add(std::make_unique<InputSkip>(4, kD))
      .add(dense(4, 1));
  EXPECT_EQ(net.parameter_count(), (4 * kD + 4) + 4 * kD + (4 + 1));
  EXPECT_EQ(net.parameter_offset(2), 4 * kD + 4);
  EXPECT_EQ(net.parameter_offset(3), 8 * kD + 4);
  RandomStream rng(3, "init");
  net.initialize(rng);
  EXPECT_EQ(net.parameters().segment(4 * kD, 4).cwiseAbs().maxCoeff(), 0.0);  // biases start at 0
  EXPECT_GT(net.parameters().head(4 * kD).cwiseAbs().minCoeff(), 0.0);
  // Glorot uniform stays inside ±√(6/(in + out)).
  Network g(kD);
  g.add(std::make_unique<Dense>(kD, 200, WeightInit::glorot_uniform(kD, 200)));
  g.initialize(rng);
  const double a = std::sqrt(6.0 / (kD + 200));
  EXPECT_LE(g.parameters().head(200 * kD).cwiseAbs().maxCoeff(), a);
  EXPECT_GT(g.parameters().head(200 * kD).cwiseAbs().maxCoeff(), 0.9 * a);
  // A copy is deep: changing it leaves the original alone.
  Network copy = net;
  copy.set_parameters(Vector::Zero(net.parameter_count()));
  EXPECT_GT(net.parameters().cwiseAbs().maxCoeff(), 0.0);
  const Matrix X = inputs(3, 9);
  EXPECT_NE((copy.value(X) - net.value(X)).cwiseAbs().maxCoeff(), 0.0);
}

TEST(NetworkLayers, ErrorsNameTheProblem) {
  Network net(kD);
  EXPECT_THROW(net.value(inputs(2, 1)), Error);  // no layers
  EXPECT_THROW(net.add(dense(kD + 1, 2)), Error);
  net.add(dense(kD, 4));
  EXPECT_THROW(net.add(dense(5, 2)), Error);
  EXPECT_THROW(net.value(Matrix::Zero(2, kD + 1)), DataError);
  Matrix out;
  EXPECT_THROW(net.forward(inputs(2, 1), 3, out, nullptr), Error);
  Network::Tape tape;
  net.forward(inputs(2, 1), 1, out, &tape);
  Vector g;
  EXPECT_THROW(net.backward(inputs(2, 1), tape, Matrix::Zero(3, 4), &g, nullptr), Error);
  EXPECT_THROW(net.set_parameters(Vector::Zero(3)), Error);
  EXPECT_THROW(MaskedDense(Matrix::Constant(2, 2, 0.5)), Error);
  Sequence widening;
  widening.add(dense(4, 5));
  EXPECT_THROW(Residual(std::move(widening)), Error);
  EXPECT_THROW(BatchNorm(3, 0.0), Error);
}

}  // namespace
}  // namespace kef::network
