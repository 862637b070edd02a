// The deep kernel: derivative stacks and the backward pass (logits, length scales, every network
// weight, inducing points) against central differences, for Gaussian and linear components.
#include <gtest/gtest.h>

#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/model_archive.hpp"
#include "kef/progress.hpp"
#include "mlp.hpp"
#include "gradient_check.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

KernelPtr make_deep(const std::string& on, Index dim, std::uint64_t seed) {
  RandomStream rng(seed, "deep");
  auto k = test::plugin_registry().make_kernel(
      test::config_from("type = \"deep\"\ncomponents = 2\nlayers = 2\nwidth = 3\nsigma_init = [0.8, 1.5]\non = \"" + on + "\""),
      BuildContext{dim, &test::plugin_registry(), &rng});
  // Unequal mixture weights and non-zero biases, so no term of the gradient vanishes by symmetry.
  Vector theta = k->parameters();
  theta += 0.2 * rng.normal_matrix(theta.size(), 1).col(0);
  k->set_parameters(theta);
  return k;
}

class DeepKernelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeepKernelTest, DerivativeStacksMatchCentralDifferences) {
  auto k = make_deep(GetParam(), 2, 1);
  RandomStream rng(2, "points");
  Matrix X = rng.normal_matrix(4, 2), Y = rng.normal_matrix(3, 2);
  KernelStacks st;
  k->derivatives(X, Y, 2, st);
  EXPECT_LT((st.value - k->gram(X, Y)).cwiseAbs().maxCoeff(), 1e-14);
  const double h = 1e-5;
  for (Index d = 0; d < 2; ++d) {
    Matrix Xp = X, Xm = X;
    Xp.col(d).array() += h;
    Xm.col(d).array() -= h;
    KernelStacks p, m;
    k->derivatives(Xp, Y, 1, p);
    k->derivatives(Xm, Y, 1, m);
    // Truncation O(h²) and rounding O(1e-16/h) are both far below 1e-8 for O(1) values.
    EXPECT_LT((st.d1.middleRows(d * 4, 4) - (p.value - m.value) / (2 * h)).cwiseAbs().maxCoeff(), 1e-8);
    EXPECT_LT((st.d2.middleRows(d * 4, 4) - (p.d1.middleRows(d * 4, 4) - m.d1.middleRows(d * 4, 4)) / (2 * h))
                  .cwiseAbs()
                  .maxCoeff(),
              1e-8);
  }
}

TEST_P(DeepKernelTest, BackwardMatchesCentralDifferences) {
  auto k = make_deep(GetParam(), 2, 3);
  RandomStream rng(4, "adjoints");
  Matrix X = rng.normal_matrix(4, 2), Y = rng.normal_matrix(3, 2);
  // Every combination of present adjoints: value only, d1 only, d2 only, all three.
  std::vector<std::array<bool, 3>> combos = {{true, false, false}, {false, true, false}, {false, false, true}, {true, true, true}};
  for (const auto& c : combos) {
    KernelStacks adj;
    if (c[0]) adj.value = rng.normal_matrix(4, 3);
    if (c[1]) adj.d1 = rng.normal_matrix(8, 3);
    if (c[2]) adj.d2 = rng.normal_matrix(8, 3);
    Vector gp = Vector::Zero(k->parameter_count());
    Matrix gy = Matrix::Zero(3, 2);
    k->backward(X, Y, adj, &gp, &gy);
    KernelPtr probe = make_deep(GetParam(), 2, 3);
    Vector fd = test::numerical_gradient(
        [&](const Vector& t) {
          probe->set_parameters(t);
          return test::stack_adjoint_loss(*probe, X, Y, adj);
        },
        k->parameters());
    const double scale = std::max(1.0, fd.cwiseAbs().maxCoeff());
    EXPECT_LT((gp - fd).cwiseAbs().maxCoeff(), 1e-7 * scale)
        << "adjoints " << c[0] << c[1] << c[2] << "\nanalytic " << gp.transpose() << "\nnumeric  " << fd.transpose();
    const Matrix fdy = test::stack_adjoint_loss_gradient_y(*k, X, Y, adj);
    EXPECT_TRUE(test::gradients_agree(gy, fdy, 1e-7));
  }
}

// gram_times consumes the Gram block by block in cache; its brute-force twin is gram(X, Y)·b. Sums
// of up to M = 300 terms of size |b|·k ≤ |b| in a different order: 1e-12 relative to Σ|b_m| covers
// the reordering (~M·2^-53) by two orders of magnitude.
TEST_P(DeepKernelTest, GramTimesEqualsTheGramTimesTheVector) {
  const std::string on = GetParam();
  RandomStream rng(71, "gram-times");
  auto k = test::plugin_registry().make_kernel(test::config_from("type = \"deep\"\non = \"" + on + "\""),
                                               BuildContext{11, &test::plugin_registry(), &rng});
  Vector theta = k->parameters();
  theta += 0.1 * rng.normal_matrix(theta.size(), 1).col(0);
  k->set_parameters(theta);
  for (const Index n : {1, 127, 128, 129, 300}) {
    const Matrix X = 1.5 * rng.normal_matrix(n, 11), Y = rng.normal_matrix(300, 11);
    const Vector b = rng.normal_matrix(300, 1).col(0);
    const Vector want = k->gram(X, Y) * b;
    const Vector got = k->gram_times(X, Y, b);
    ASSERT_EQ(got.size(), n);
    EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 1e-12 * b.cwiseAbs().sum()) << on << ", n = " << n;
  }
  EXPECT_THROW(k->gram_times(rng.normal_matrix(3, 11), rng.normal_matrix(5, 11), Vector::Ones(4)), Error);
}

INSTANTIATE_TEST_SUITE_P(OnFeatures, DeepKernelTest, ::testing::Values("gaussian", "linear"));

TEST(DeepKernel, GaussianMixtureIsBoundedAndWeightsSumToOne) {
  auto k = make_deep("gaussian", 3, 5);
  RandomStream rng(6, "x");
  Matrix X = rng.normal_matrix(20, 3);
  Matrix G = k->gram(X, X);
  EXPECT_LE(G.maxCoeff(), 1.0 + 1e-15);
  EXPECT_GE(G.minCoeff(), 0.0);
  EXPECT_NEAR(G.diagonal().minCoeff(), 1.0, 1e-12);  // k(x, x) = Σ ρ_r = 1
  EXPECT_TRUE(k->capabilities().bounded_unit);
}

// DKEF's code initialises log10 σ_r² at 0, 0.5, 1 and uses σ_r² as the variance of
// exp(−‖u‖² / (2σ_r²)); kef's σ_r are length scales, so the default starts at 10^{0, 0.25, 0.5}
// (kef 0.2 took 1, 3.16, 10 as length scales). Checked on the kernel's values, not only its parameters.
TEST(DeepKernel, DefaultSigmaInitIsDkefsVariancesAsLengthScales) {
  RandomStream init(3, "init");
  auto k = test::plugin_registry().make_kernel(test::config_from("type = \"deep\"\nlayers = 1\nwidth = 2"),
                                               BuildContext{2, nullptr, &init});
  const Vector theta = k->parameters();
  const double dkef_log10_variance[] = {0.0, 0.5, 1.0};
  for (Index r = 0; r < 3; ++r)
    EXPECT_NEAR(2.0 * theta[3 + r], dkef_log10_variance[r] * std::log(10.0), 1e-12) << "component " << r;
  // One component at a time (weights all on r): k between two points whose features differ by u is
  // exp(−‖u‖² / (2·10^{log10 σ²})) with DKEF's variance.
  for (Index r = 0; r < 3; ++r) {
    Vector t = theta;
    t.head(3).setConstant(-200.0);
    t[r] = 0.0;
    k->set_parameters(t);
    const Matrix X = (Matrix(1, 2) << 0.3, -0.2).finished(), Y = (Matrix(1, 2) << -0.4, 0.5).finished();
    // The features of the network are not the identity; read ‖φ(x) − φ(y)‖² off the kernel with
    // σ = 1 and compare the kernel at the default σ_r with DKEF's formula.
    Vector t1 = t;
    t1[3 + r] = 0.0;
    k->set_parameters(t1);
    const double d2 = -2.0 * std::log(k->gram(X, Y)(0, 0));
    k->set_parameters(t);
    EXPECT_NEAR(k->gram(X, Y)(0, 0), std::exp(-0.5 * d2 / std::pow(10.0, dkef_log10_variance[r])), 1e-12);
  }
}

TEST(DeepKernel, BadKeysAreConfigErrorsNamingTheKey) {
  auto expect = [](const std::string& toml, const std::string& key, Index dim) {
    try {
      test::plugin_registry().make_kernel(test::config_from("type = \"deep\"\n" + toml), BuildContext{dim});
      ADD_FAILURE() << toml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect("width = 0", "width", 2);
  expect("components = 0", "components", 2);
  expect("components = 2\nsigma_init = [1, 2, 3]", "sigma_init", 2);
  expect("components = 5", "sigma_init", 2);
  expect("on = \"cubic\"", "on", 2);
  expect("", "dimension", -1);
}

TEST(DeepKernel, LiteModelWithADeepKernelSavesAndReloads) {
  Registry& reg = test::plugin_registry();
  RandomStream init(7, "init");
  auto kernel = reg.make_kernel(test::config_from("type = \"deep\"\ncomponents = 2\nlayers = 2\nwidth = 4"),
                                BuildContext{2, &reg, &init});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 2.0"), {});
  auto est = reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = 20"),
                                EstimatorParts{kernel, base, &reg}, {});
  Context context = Context(8, 2).child("data");  // the data, the fit and the probes draw from one stream
  RandomStream& rng = context.rng();
  Matrix train = rng.normal_matrix(200, 2), empty(0, 2);
  FitReport report;
  ModelPtr model = est->fit(FitInput{train, empty, context, report});
  auto dir = test::temp_dir("deep-save") / "m";
  save_model(*model, dir);
  ModelPtr back = load_model(dir, reg);
  Matrix X = rng.normal_matrix(10, 2);
  EXPECT_EQ((back->log_unnormalized(X) - model->log_unnormalized(X)).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((back->score(X) - model->score(X)).cwiseAbs().maxCoeff(), 0.0);
}

}  // namespace
}  // namespace kef

namespace kef {
namespace {

// k(x, y) = Σ_r ρ_r exp(−‖φ_r(x) − φ_r(y)‖²/(2σ_r²)) pair by pair, with each φ_r run on one row at a
// time from the kernel's parameter vector (layout: v, s, then each network): the brute-force twin of
// the stacked, GEMM-based, cached gram().
Matrix direct_gram(const Kernel& k, Index R, Index D, Index W, Index L, const Matrix& X, const Matrix& Y) {
  const Vector theta = k.parameters();
  Vector rho = theta.head(R).array().exp();
  rho /= rho.sum();
  Matrix G = Matrix::Zero(X.rows(), Y.rows());
  Index off = 2 * R;
  for (Index r = 0; r < R; ++r) {
    Mlp net(D, W, L);
    net.set_parameters(theta.segment(off, net.parameter_count()));
    off += net.parameter_count();
    const double sigma = std::exp(theta[R + r]);
    for (Index n = 0; n < X.rows(); ++n) {
      FeatureStacks a;
      net.forward(X.row(n), 0, a);
      for (Index m = 0; m < Y.rows(); ++m) {
        FeatureStacks c;
        net.forward(Y.row(m), 0, c);
        G(n, m) += rho[r] * std::exp(-(a.features - c.features).squaredNorm() / (2 * sigma * sigma));
      }
    }
  }
  return G;
}

TEST(DeepKernel, FastGramMatchesTheDirectDefinitionAtDkefSize) {
  const Index R = 3, D = 11, W = 30, L = 3;
  RandomStream rng(21, "gram");
  auto k = test::plugin_registry().make_kernel(test::config_from("type = \"deep\""),
                                               BuildContext{D, &test::plugin_registry(), &rng});
  Vector theta = k->parameters();
  theta.head(R) << 0.3, -0.2, 0.1;  // unequal mixture weights
  k->set_parameters(theta);
  for (const double offset : {0.0, 40.0}) {
    // offset 40 puts every feature far from the origin (softplus is linear there), where the
    // uncentred ‖a‖² + ‖c‖² − 2aᵀc would lose digits.
    const Matrix X = rng.normal_matrix(37, D).array() + offset, Y = rng.normal_matrix(23, D).array() + offset;
    const Matrix direct = direct_gram(*k, R, D, W, L, X, Y);
    // Centred squared distances are exact to ~1e-15 relative to the spread of the features (O(10)
    // here); k = exp(−r²/(2σ²)) with σ ≥ 1 carries that absolute error, so 1e-11 is a wide margin
    // while an uncentred form at offset 40 (features ~ 10³, ‖a‖² ~ 10⁶·W) would miss it.
    EXPECT_LT((k->gram(X, Y) - direct).cwiseAbs().maxCoeff(), 1e-11) << "offset " << offset;
    KernelStacks st;
    k->derivatives(X, Y, 2, st);
    EXPECT_LT((st.value - direct).cwiseAbs().maxCoeff(), 1e-11) << "offset " << offset;
    // Split into chunks against the same Y (the cached features of Y are reused): same values.
    Matrix chunks(X.rows(), Y.rows());
    chunks.topRows(20) = k->gram(X.topRows(20), Y);
    chunks.bottomRows(17) = k->gram(X.bottomRows(17), Y);
    EXPECT_LT((chunks - direct).cwiseAbs().maxCoeff(), 1e-11);
  }
}

TEST(DeepKernel, CachedFeaturesFollowNewParametersAndPoints) {
  auto k = make_deep("gaussian", 2, 31);
  RandomStream rng(32, "cache");
  const Matrix X = rng.normal_matrix(6, 2), Y = rng.normal_matrix(5, 2), Y2 = rng.normal_matrix(5, 2);
  const Matrix before = k->gram(X, Y);
  EXPECT_LT((k->gram(X, Y2) - direct_gram(*k, 2, 2, 3, 2, X, Y2)).cwiseAbs().maxCoeff(), 1e-13);
  Vector theta = k->parameters();
  theta += 0.3 * rng.normal_matrix(theta.size(), 1).col(0);
  k->set_parameters(theta);
  const Matrix after = k->gram(X, Y);
  EXPECT_GT((after - before).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_LT((after - direct_gram(*k, 2, 2, 3, 2, X, Y)).cwiseAbs().maxCoeff(), 1e-13);
}

}  // namespace
}  // namespace kef
