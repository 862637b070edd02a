// KSD: the blocked, threaded statistic and bootstrap against a brute-force double loop built from the
// definition (cross_derivatives), calibration under the null, a known mean, power.
#include <gtest/gtest.h>

#include <cmath>

#include "kef/random.hpp"
#include "ksd.hpp"
#include "stein_common.hpp"
#include "stein_test_util.hpp"

namespace kef::stein {
namespace {

using test_util::GaussianModel;

KernelPtr base_kernel(const std::string& type) {
  auto& reg = kef::test::plugin_registry();
  return type == "gaussian" ? make_gaussian_kernel(reg, 1.3) : make_imq_kernel(reg, 1.0, -0.5);
}

// h(x_i, x_j) = s_iᵀs_j k + s_iᵀ∇_y k + s_jᵀ∇_x k + Σ_d ∂_{x_d}∂_{y_d} k straight from docs/math.md §8, one
// row at a time, with ∇_y k(x_i, x_j) = ∇_x k(x_j, x_i) (symmetry of k) and the trace from
// cross_derivatives(): no use of translation invariance, unlike stein_kernel().
Matrix brute_force_h(const Kernel& k, const Matrix& X, const Matrix& S) {
  const Index N = X.rows(), D = X.cols();
  Matrix H(N, N);
  KernelStacks to_all, from_all;
  k.derivatives(X, X, 1, to_all);  // d1[d*N + i, j] = ∂_{x_d} k(x_i, x_j)
  for (Index i = 0; i < N; ++i) {
    KernelCrossStacks cs;
    k.cross_derivatives(X.row(i), X, cs);  // dxdy[d, e*N + j] = ∂_{x_d}∂_{y_e} k(x_i, x_j)
    for (Index j = 0; j < N; ++j) {
      double h = S.row(i).dot(S.row(j)) * to_all.value(i, j);
      for (Index d = 0; d < D; ++d) {
        h += S(i, d) * to_all.d1(d * N + j, i);  // ∂_{y_d} k(x_i, x_j) = ∂_{x_d} k(x_j, x_i)
        h += S(j, d) * to_all.d1(d * N + i, j);
        h += cs.dxdy(d, d * N + j);
      }
      H(i, j) = h;
    }
  }
  return H;
}

// Tolerance. Each h is a sum of O(D) products (the definition) or of four terms (the radial form),
// each bounded by (1 + D)·max|h| here, so one entry differs by ≤ ~10(1 + D)ε·max|h| between the two.
// The statistic and the bootstrap sums add M = N² such entries in different orders, divided by
// ≈ N²: the summation error is ~√M·ε·max|h| = Nε·max|h| with overwhelming probability (rounding
// errors as independent zero-mean variables; Higham & Mary 2019). Together ≤ (1 + D)(10 + N)ε·max|h|,
// and 1e3 ≥ 10 + N for N = 300.
// The fused pass forms x_i·x_j, s_i·s_j and x_i·s_j + s_i·x_j from three inner products (centred x,
// p = x + λs, m = x − λs); its rounding error is a few Dε·max(‖x‖², λ²‖s‖²)/λ²·|φ| per term, within the
// same bound once λ balances the scales. The second case puts the data far from the origin (centring)
// with scores 30 times smaller than the points (λ = 32).
TEST(Ksd, BlockedStatisticAndBootstrapEqualTheDoubleLoop) {
  constexpr Index N = 300, D = 3, B = 5;  // a full and a partial row block of 256, partial tiles
  for (const double offset : {0.0, 100.0}) {
    RandomStream rng(21, "ksd-brute");
    const Matrix X = (rng.normal_matrix(N, D).array() + offset).matrix();
    GaussianModel model(Vector::Constant(D, 0.4 + offset), offset > 0 ? 5.5 : 1.3);
    const Matrix S = model.score(X);
    for (const std::string type : {"gaussian", "imq"}) {
      auto k = base_kernel(type);
      const Matrix H = brute_force_h(*k, X, S);
      const double tol = 1e3 * 2.2e-16 * H.cwiseAbs().maxCoeff() * (1 + D);
      // stein_kernel on a block equals the definition.
      EXPECT_LT((stein_kernel(*k->radial_profile(), X.topRows(40), S.topRows(40), X.bottomRows(50),
                              S.bottomRows(50)) -
                 H.block(0, N - 50, 40, 50))
                    .cwiseAbs()
                    .maxCoeff(),
                tol)
          << type;
      const double Nd = double(N);
      for (bool u : {true, false}) {
        RandomStream boot(5, "boot");
        const KsdResult r = ksd_test(*k, X, S, u, B, boot, Context(1, 2));
        const double sum = H.sum(), trace = H.diagonal().sum();
        const double expected = u ? (sum - trace) / (Nd * (Nd - 1)) : sum / (Nd * Nd);
        EXPECT_NEAR(r.statistic, expected, tol) << type << (u ? " U" : " V");
        // Without draws only the upper tiles of diagonal blocks are formed.
        RandomStream none(5, "boot");
        EXPECT_NEAR(ksd_test(*k, X, S, u, 0, none, Context(1, 2)).statistic, expected, tol)
            << type << (u ? " U" : " V") << " B = 0";
        // The bootstrap draws: signs are bit b % 64 of word b / 64 of row n, words drawn row by row
        // from the stream (the layout ksd.cpp documents).
        RandomStream again(5, "boot");
        const Index words = (B + 63) / 64;
        std::vector<std::uint64_t> bits(static_cast<std::size_t>(N * words));
        for (auto& w : bits) w = again();
        ASSERT_EQ(r.bootstrap.size(), static_cast<std::size_t>(B));
        for (Index b = 0; b < B; ++b) {
          Vector w(N);
          for (Index n = 0; n < N; ++n)
            w[n] = (bits[static_cast<std::size_t>(n * words + b / 64)] >> (b % 64)) & 1u ? 1.0 : -1.0;
          const double q = w.dot(H * w);
          const double star = u ? (q - trace) / (Nd * (Nd - 1)) : q / (Nd * Nd);
          EXPECT_NEAR(r.bootstrap[static_cast<std::size_t>(b)], star, tol) << type << " draw " << b;
        }
      }
    }
  }
}

TEST(Ksd, ResultsDoNotDependOnTheThreadCount) {
  constexpr Index N = 333, D = 2;
  RandomStream rng(22, "ksd-threads");
  const Dataset data = test_util::test_data(rng.normal_matrix(N, D));
  GaussianModel model(Vector::Constant(D, 0.2), 1.0);
  for (const char* toml : {"type = \"ksd\"\nbootstrap_draws = 50", "type = \"ksd\"\nbootstrap_draws = 0",
                           "type = \"ksd\"\nkernel = \"imq\"\nstatistic = \"v\"\nbootstrap_draws = 50"}) {
    auto e = test_util::make_evaluator(toml, D);
    const auto one = test_util::run(*e, model, data, 4, 1);
    for (int threads : {2, 3, 8}) {
      const auto many = test_util::run(*e, model, data, 4, threads);
      ASSERT_EQ(one.values.size(), many.values.size());
      for (std::size_t i = 0; i < one.values.size(); ++i)
        EXPECT_EQ(one.values[i].second, many.values[i].second) << toml << ": " << one.values[i].first;
    }
  }
}

// Under H0, E h(x, y) = 0 for independent x, y (Stein's identity), so the U-statistic has mean 0: the
// mean of R copies exceeds 4 sd/√R with probability 6e-5. The wild bootstrap is consistent (Chwialkowski
// et al. 2014), so p-values are uniform up to O(1/√N) and the KS bound of fssd_test.cpp applies
// (1.949/√R at level 0.001, plus 1/(B + 1) for the Monte Carlo grid).
TEST(Ksd, NullStatisticIsCentredAndPValuesAreUniform) {
  constexpr int R = 200;
  constexpr Index N = 200, D = 2, B = 300;
  GaussianModel truth(D, 0.0, 1.0);
  for (const std::string type : {"gaussian", "imq"}) {
    auto k = base_kernel(type);
    std::vector<double> stats, pvalues;
    for (int r = 0; r < R; ++r) {
      RandomStream rng(static_cast<std::uint64_t>(r), "ksd-null");
      const Matrix X = rng.normal_matrix(N, D);
      const KsdResult res = ksd_test(*k, X, truth.score(X), true, B, rng, Context(1, 2));
      stats.push_back(res.statistic);
      pvalues.push_back(res.pvalue);
    }
    const auto [mean, sd] = test_util::mean_sd(stats);
    EXPECT_LT(std::abs(mean), 4.0 * sd / std::sqrt(double(R))) << type << ": mean " << mean << " sd " << sd;
    EXPECT_LT(test_util::ks_uniform(pvalues), 1.949 / std::sqrt(double(R)) + 1.0 / (B + 1)) << type;
  }
}

// Known value: data N(0, I_D), model N(μ, I_D), Gaussian kernel σ. Then s_p − s_q = μ and
// E h_p(x, y) = ‖μ‖² E k(x, y) = ‖μ‖² (σ²/(σ² + 2))^(D/2) (x − y ~ N(0, 2I)); the U-statistic is
// unbiased, so the mean of R copies lies within 4 sd/√R of it (probability 6e-5 otherwise). The same
// runs give the power: with the statistic ≈ 0.23 (sd ≈ 0.055 here) against bootstrap draws of order 1/N, each p-value is
// the minimum 1/(B + 1) unless the bootstrap fails, so all R must be below 0.05.
TEST(Ksd, ShiftedModelHasTheKnownMeanAndIsRejected) {
  constexpr int R = 40;
  constexpr Index N = 200, D = 2, B = 200;
  const double sigma = 1.3, shift = 0.5;
  auto k = make_gaussian_kernel(kef::test::plugin_registry(), sigma);
  GaussianModel wrong(D, shift, 1.0);
  const double expected = D * shift * shift * std::pow(sigma * sigma / (sigma * sigma + 2.0), D / 2.0);
  std::vector<double> stats;
  int rejections = 0;
  for (int r = 0; r < R; ++r) {
    RandomStream rng(static_cast<std::uint64_t>(r), "ksd-shift");
    const Matrix X = rng.normal_matrix(N, D);
    const KsdResult res = ksd_test(*k, X, wrong.score(X), true, B, rng, Context(1, 2));
    stats.push_back(res.statistic);
    rejections += res.pvalue < 0.05;
  }
  const auto [mean, sd] = test_util::mean_sd(stats);
  EXPECT_LT(std::abs(mean - expected), 4.0 * sd / std::sqrt(double(R))) << "mean " << mean << " expected " << expected;
  EXPECT_EQ(rejections, R);
}

}  // namespace
}  // namespace kef::stein
