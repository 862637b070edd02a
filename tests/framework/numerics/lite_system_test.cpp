// The lite system: chunked accumulation against a brute-force twin, thread independence, and the
// closed-form α as the minimiser of its regularised objective.
#include <gtest/gtest.h>

#include "kef/error.hpp"
#include "kef/lite_system.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"
#include "kef/score_matching.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

struct LiteSetup {
  KernelPtr kernel;
  BaseMeasurePtr base;
  Matrix X, Z;
  double sigma = 0.9, std0 = 1.5;
};

LiteSetup make_setup(Index n, Index m, Index d) {
  LiteSetup s;
  s.kernel = test::plugin_registry().make_kernel(test::config_from("type = \"gaussian\"\nsigma = 0.9"), {});
  s.base = test::plugin_registry().make_base_measure(test::config_from("type = \"gaussian\"\nstd = 1.5"), {});
  RandomStream rng(11, "lite-system");
  s.X = rng.normal_matrix(n, d);
  s.Z = rng.normal_matrix(m, d);
  return s;
}

// G, U, b written straight from docs/math.md §4 with explicit loops: no stacks, no chunks.
LiteSystem brute_force(const LiteSetup& s) {
  const Index N = s.X.rows(), M = s.Z.rows(), D = s.X.cols();
  const double s2 = s.sigma * s.sigma, v0 = s.std0 * s.std0;
  LiteSystem out;
  out.G = Matrix::Zero(M, M);
  out.U = Matrix::Zero(M, M);
  out.b_main = Vector::Zero(M);
  out.b_c = Vector::Zero(M);
  for (Index n = 0; n < N; ++n) {
    for (Index d = 0; d < D; ++d) {
      Vector d1(M), d2(M);
      for (Index m = 0; m < M; ++m) {
        const double k = std::exp(-(s.X.row(n) - s.Z.row(m)).squaredNorm() / (2 * s2));
        const double u = s.X(n, d) - s.Z(m, d);
        d1[m] = -u / s2 * k;
        d2[m] = (u * u / (s2 * s2) - 1 / s2) * k;
      }
      const double q1 = -s.X(n, d) / v0, q2 = -1 / v0;
      out.G += d1 * d1.transpose();
      out.U += d2 * d2.transpose();
      out.b_main += d2 + q1 * d1;
      out.b_c += q2 * d2;
    }
  }
  out.G /= N;
  out.U /= N;
  out.b_main /= N;
  out.b_c /= N;
  out.rows = N;
  return out;
}

TEST(LiteSystem, ChunkedAccumulationEqualsBruteForce) {
  LiteSetup s = make_setup(203, 17, 3);
  LiteSystem ref = brute_force(s);
  for (Index chunk : {1, 7, 64, 1000}) {
    LiteAccumulateOptions opt;
    opt.chunk_rows = chunk;
    LiteSystem sys = accumulate_lite_system(*s.kernel, *s.base, s.X, s.Z, opt, Context(1, 2));
    EXPECT_LT((sys.G - ref.G).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_LT((sys.U - ref.U).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_LT((sys.b_main - ref.b_main).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_LT((sys.b_c - ref.b_c).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_TRUE(sys.G.isApprox(sys.G.transpose(), 0.0)) << "G must be exactly symmetric";
  }
}

TEST(LiteSystem, StackPathEqualsBruteForce) {
  LiteSetup s = make_setup(203, 17, 3);
  LiteSystem ref = brute_force(s);
  for (Index chunk : {1, 64}) {
    LiteAccumulateOptions opt;
    opt.chunk_rows = chunk;
    opt.use_radial_structure = false;
    LiteSystem sys = accumulate_lite_system(*s.kernel, *s.base, s.X, s.Z, opt, Context(1, 2));
    EXPECT_LT((sys.G - ref.G).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_LT((sys.U - ref.U).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_LT((sys.b_main - ref.b_main).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
    EXPECT_LT((sys.b_c - ref.b_c).cwiseAbs().maxCoeff(), 1e-13) << "chunk " << chunk;
  }
}

// The radial fast path against the general stack path, for both radial kernels, a base measure whose
// second derivative varies with x (so every term of b_c counts), and data far from the origin (where
// ‖x‖² + ‖z‖² − 2xᵀz would cancel without the centring).
TEST(LiteSystem, RadialPathEqualsStackPath) {
  const char* kernels[] = {"type = \"gaussian\"\nsigma = 0.7", "type = \"imq\"\nc = 1.3\nbeta = -0.5"};
  for (const char* kernel_toml : kernels) {
    for (double offset : {0.0, 1.0e4}) {
      auto kernel = test::plugin_registry().make_kernel(test::config_from(kernel_toml), {});
      ASSERT_NE(kernel->radial_profile(), nullptr) << kernel_toml;
      BuildContext ctx;
      ctx.dim = 3;
      auto base = test::plugin_registry().make_base_measure(
          test::config_from("type = \"generalized_normal\"\nmean = " + std::to_string(offset) +
                            "\nstd = 1.2\nbeta = 3.0"),
          ctx);
      RandomStream rng(5, "radial");
      Matrix X = rng.normal_matrix(301, 3).array() + offset;
      Matrix Z = rng.normal_matrix(23, 3).array() + offset;
      LiteAccumulateOptions opt;
      opt.chunk_rows = 40;
      opt.use_radial_structure = false;
      LiteSystem ref = accumulate_lite_system(*kernel, *base, X, Z, opt, Context(1, 1));
      opt.use_radial_structure = true;
      LiteSystem fast = accumulate_lite_system(*kernel, *base, X, Z, opt, Context(1, 1));
      auto rel = [](const auto& a, const auto& b) { return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff(); };
      EXPECT_LT(rel(fast.G, ref.G), 1e-12) << kernel_toml << " offset " << offset;
      EXPECT_LT(rel(fast.U, ref.U), 1e-12) << kernel_toml << " offset " << offset;
      EXPECT_LT(rel(fast.b_main, ref.b_main), 1e-12) << kernel_toml << " offset " << offset;
      EXPECT_LT(rel(fast.b_c, ref.b_c), 1e-12) << kernel_toml << " offset " << offset;
      EXPECT_TRUE(fast.G.isApprox(fast.G.transpose(), 0.0)) << "G must be exactly symmetric";
      // Without U the radial path never forms a stack; G and b must not change.
      opt.need_U = false;
      LiteSystem no_u = accumulate_lite_system(*kernel, *base, X, Z, opt, Context(1, 1));
      EXPECT_EQ(no_u.U.size(), 0);
      EXPECT_LT(rel(no_u.G, ref.G), 1e-12);
      EXPECT_LT(rel(no_u.b_c, ref.b_c), 1e-12);
    }
  }
}

TEST(LiteSystem, ResultDoesNotDependOnThreadCount) {
  LiteSetup s = make_setup(1500, 40, 4);
  LiteAccumulateOptions opt;
  opt.chunk_rows = 50;
  LiteSystem one = accumulate_lite_system(*s.kernel, *s.base, s.X, s.Z, opt, Context(1, 1));
  for (int t : {2, 3, 8}) {
    LiteSystem many = accumulate_lite_system(*s.kernel, *s.base, s.X, s.Z, opt, Context(1, t));
    EXPECT_EQ((one.G - many.G).cwiseAbs().maxCoeff(), 0.0) << t << " threads";
    EXPECT_EQ((one.b_c - many.b_c).cwiseAbs().maxCoeff(), 0.0) << t << " threads";
    EXPECT_EQ((one.U - many.U).cwiseAbs().maxCoeff(), 0.0) << t << " threads";
    EXPECT_EQ((one.b_main - many.b_main).cwiseAbs().maxCoeff(), 0.0) << t << " threads";
  }
}

// The regularised objective of docs/math.md §4, computed from the definition.
double objective(const LiteSetup& s, const Vector& alpha, double la, double lh, double lc) {
  KernelStacks st;
  s.kernel->derivatives(s.X, s.Z, 2, st);
  Matrix q1, q2;
  s.base->derivatives(s.X, q1, q2);
  const Index N = s.X.rows(), D = s.X.cols();
  Vector g = st.d1 * alpha, h = st.d2 * alpha;
  Matrix score = Eigen::Map<const Matrix>(g.data(), N, D) + q1;
  Matrix lap = Eigen::Map<const Matrix>(h.data(), N, D) + q2;
  const double J = score_matching_objective(score, lap, "test");
  const Matrix K = s.kernel->gram(s.Z, s.Z);
  const double curvature = lap.array().square().rowwise().sum().mean();
  return J + 0.5 * (la * alpha.squaredNorm() + lh * alpha.dot(K * alpha) + lc * curvature);
}

TEST(LiteSystem, ClosedFormAlphaHasZeroGradientOfItsObjective) {
  LiteSetup s = make_setup(300, 12, 2);
  const double la = 1e-2, lh = 1e-3, lc = 1e-2;
  LiteAccumulateOptions opt;
  LiteSystem sys = accumulate_lite_system(*s.kernel, *s.base, s.X, s.Z, opt, Context(1, 1));
  LiteSolution sol = solve_lite_system(sys, s.kernel->gram(s.Z, s.Z), la, lh, lc);
  auto f = [&](const Vector& a) { return objective(s, a, la, lh, lc); };
  Vector g = test::numerical_gradient(f, sol.alpha, 1e-4);
  // The objective is quadratic, so central differences are exact up to rounding (~1e-12 / h).
  Vector g_off = test::numerical_gradient(f, sol.alpha + Vector::Constant(sol.alpha.size(), 0.1), 1e-4);
  EXPECT_LT(g.cwiseAbs().maxCoeff(), 1e-7) << "gradient at the solution";
  EXPECT_GT(g_off.cwiseAbs().maxCoeff(), 1e-3) << "the check must be able to fail";
  // And it is a minimum: every perturbation increases the objective.
  RandomStream rng(2, "perturb");
  for (int i = 0; i < 5; ++i) {
    Vector delta = rng.normal_matrix(sol.alpha.size(), 1).col(0) * 1e-2;
    EXPECT_GT(f(sol.alpha + delta), f(sol.alpha));
  }
}

TEST(LiteSystem, RejectsMismatchedDimensions) {
  LiteSetup s = make_setup(10, 3, 2);
  Matrix Zbad = Matrix::Zero(3, 3);
  EXPECT_THROW(accumulate_lite_system(*s.kernel, *s.base, s.X, Zbad, {}, Context(1, 1)), DataError);
}

}  // namespace
}  // namespace kef
