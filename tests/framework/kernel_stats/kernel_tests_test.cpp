// The kernel test building blocks (kef/mmd_test.hpp, kef/hsic_test.hpp, kef/gamma_null.hpp,
// kef/bandwidth_rule.hpp): statistics against brute-force double loops, the null moments of the Gamma
// approximation against exhaustive permutation distributions, unbiasedness and size under H0 by Monte
// Carlo with fixed seeds, exact properties of permutation p-values, thread independence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kef/bandwidth_rule.hpp"
#include "kef/error.hpp"
#include "kef/gamma_null.hpp"
#include "kef/hsic_test.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "kef/mmd_test.hpp"
#include "test_support.hpp"

namespace kef::kernel_tests_test {
namespace {

double gauss(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b, double sigma) {
  return std::exp(-(a - b).squaredNorm() / (2 * sigma * sigma));
}

using test::gaussian_kernel;

// MMD² by its definitions (docs/math.md §8.7, §8.9): unbiased without the diagonal terms, biased with.
void brute_mmd2(const Matrix& X, const Matrix& Y, double sigma, double& unbiased, double& biased) {
  const Index n = X.rows(), m = Y.rows();
  double xx = 0, yy = 0, xy = 0, dx = 0, dy = 0;
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) (i == j ? dx : xx) += gauss(X.row(i), X.row(j), sigma);
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < m; ++j) (i == j ? dy : yy) += gauss(Y.row(i), Y.row(j), sigma);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < m; ++j) xy += gauss(X.row(i), Y.row(j), sigma);
  unbiased = xx / (n * (n - 1.0)) + yy / (m * (m - 1.0)) - 2 * xy / (n * double(m));
  biased = (xx + dx) / (double(n) * n) + (yy + dy) / (double(m) * m) - 2 * xy / (n * double(m));
}

Matrix brute_gram(const Matrix& X, double sigma) {
  Matrix K(X.rows(), X.rows());
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < X.rows(); ++j) K(i, j) = gauss(X.row(i), X.row(j), sigma);
  return K;
}

// HSIC_b = tr(KHLH)/n² with the centring matrix H formed explicitly.
double brute_hsic_biased(const Matrix& X, const Matrix& Y, double sx, double sy) {
  const Index n = X.rows();
  const Matrix H = Matrix::Identity(n, n) - Matrix::Constant(n, n, 1.0 / n);
  return (brute_gram(X, sx) * H * brute_gram(Y, sy) * H).trace() / (double(n) * n);
}

// The unbiased HSIC as the order-4 U-statistic it is (Song et al. 2012): the mean over ordered
// distinct (i, j, q, r) of k_ij l_ij + k_ij l_qr − 2 k_ij l_iq.
double brute_hsic_unbiased(const Matrix& X, const Matrix& Y, double sx, double sy) {
  const Index n = X.rows();
  const Matrix K = brute_gram(X, sx), L = brute_gram(Y, sy);
  double sum = 0, count = 0;
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j)
      for (Index q = 0; q < n; ++q)
        for (Index r = 0; r < n; ++r) {
          if (i == j || i == q || i == r || j == q || j == r || q == r) continue;
          sum += K(i, j) * L(i, j) + K(i, j) * L(q, r) - 2 * K(i, j) * L(i, q);
          count += 1;
        }
  return sum / count;
}

// Every n-subset of {0..N-1} as an indicator vector (the exhaustive two-sample permutation null).
std::vector<std::vector<int>> all_subsets(int N, int n) {
  std::vector<std::vector<int>> out;
  std::vector<int> pick(static_cast<std::size_t>(N), 0);
  std::fill(pick.begin(), pick.begin() + n, 1);
  std::sort(pick.begin(), pick.end());
  do out.push_back(pick);
  while (std::next_permutation(pick.begin(), pick.end()));
  return out;
}

void mean_and_variance(const std::vector<double>& v, double& mean, double& variance) {
  mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  variance = 0;
  for (double x : v) variance += (x - mean) * (x - mean);
  variance /= double(v.size());
}

TEST(MmdTest, StatisticsEqualBruteForceDoubleLoops) {
  RandomStream rng(1, "mmd-brute");
  const Matrix X = rng.normal_matrix(9, 3), Y = rng.normal_matrix(13, 3).array() + 0.3;
  const KernelPtr k = gaussian_kernel(1.3);
  RandomStream prng(2, "perm");
  const MmdTest t = mmd_test(*k, X, Y, 0, prng, Context(1, 1));
  double u = 0, b = 0;
  brute_mmd2(X, Y, 1.3, u, b);
  EXPECT_NEAR(t.mmd2, u, 1e-14);
  EXPECT_NEAR(t.mmd2_biased, b, 1e-14);
  EXPECT_TRUE(std::isnan(t.p_value));  // no permutations: no permutation p-value
  EXPECT_GT(t.gamma_p_value, 0.0);
  EXPECT_LE(t.gamma_p_value, 1.0);
}

TEST(MmdTest, GammaMomentsMatchTheExhaustivePermutationNull) {
  // n = 5, m = 6: all 462 relabellings. The mean is the exact permutation mean (docs/math.md §8.9),
  // so it agrees to rounding; the variance is the asymptotic one, within 25% at this size (measured
  // ratios 0.97-1.09 on such cases in the NumPy prototype), and its Gamma p-value must then be near
  // the exact permutation p-value.
  RandomStream rng(3, "mmd-gamma");
  const Matrix Z = rng.normal_matrix(11, 2);
  const double sigma = 1.0;
  const KernelPtr k = gaussian_kernel(sigma);
  std::vector<double> biased;
  for (const auto& pick : all_subsets(11, 5)) {
    Matrix X(5, 2), Y(6, 2);
    for (int r = 0, a = 0, c = 0; r < 11; ++r) (pick[r] ? X.row(a++) : Y.row(c++)) = Z.row(r);
    double u = 0, b = 0;
    brute_mmd2(X, Y, sigma, u, b);
    biased.push_back(b);
  }
  double mean = 0, variance = 0;
  mean_and_variance(biased, mean, variance);
  RandomStream prng(4, "perm");
  const MmdTest t = mmd_test(*k, Z.topRows(5), Z.bottomRows(6), 0, prng, Context(1, 1));
  EXPECT_NEAR(t.gamma.mean, mean, 1e-14);
  EXPECT_GT(t.gamma.variance / variance, 0.8);
  EXPECT_LT(t.gamma.variance / variance, 1.25);
  ::testing::Test::RecordProperty("mmd_variance_ratio_exhaustive",
                                  std::to_string(t.gamma.variance / variance));
  EXPECT_NEAR(t.gamma.shape, t.gamma.mean * t.gamma.mean / t.gamma.variance, 1e-12 * t.gamma.shape);
  EXPECT_NEAR(t.gamma.shape * t.gamma.scale, t.gamma.mean, 1e-15);
}

TEST(MmdTest, UnbiasedStatisticHasMeanZeroAndBiasedItsKnownMeanUnderTheNull) {
  // 300 pairs of N(0, I₂) samples, n = 12, m = 15, σ = 1: E MMD²_u = 0, and for the V-statistic
  // E MMD²_b = (1/n + 1/m)(1 − (σ²/(σ² + 2))^{D/2}) exactly. Both means within 4 Monte Carlo standard
  // errors (fixed seeds: the test is deterministic; a wrong diagonal term moves the biased mean by
  // about 10 standard errors).
  const KernelPtr k = gaussian_kernel(1.0);
  const int reps = 300;
  std::vector<double> u(reps), b(reps);
  for (int r = 0; r < reps; ++r) {
    RandomStream rng(1000 + r, "null");
    const Matrix X = rng.normal_matrix(12, 2), Y = rng.normal_matrix(15, 2);
    RandomStream prng(r, "perm");
    const MmdTest t = mmd_test(*k, X, Y, 0, prng, Context(1, 1), 0, false);
    u[r] = t.mmd2;
    b[r] = t.mmd2_biased;
  }
  double mu = 0, vu = 0, mb = 0, vb = 0;
  mean_and_variance(u, mu, vu);
  mean_and_variance(b, mb, vb);
  EXPECT_LT(std::abs(mu), 4 * std::sqrt(vu / reps)) << "mean " << mu;
  const double expected_b = (1.0 / 12 + 1.0 / 15) * (1 - std::pow(1.0 / 3.0, 1.0));
  EXPECT_LT(std::abs(mb - expected_b), 4 * std::sqrt(vb / reps)) << mb << " vs " << expected_b;
}

TEST(MmdTest, PermutationPValueExactProperties) {
  const KernelPtr k = gaussian_kernel(1.0);
  RandomStream rng(5, "mmd-exact");
  // Far apart: no relabelling reaches the observed statistic, so p is its lower bound 1/(B + 1).
  const Matrix X = rng.normal_matrix(15, 2), Y = (rng.normal_matrix(15, 2).array() + 10.0).matrix();
  RandomStream prng(6, "perm");
  const MmdTest far = mmd_test(*k, X, Y, 99, prng, Context(1, 1));
  EXPECT_EQ(far.p_value, 1.0 / 100);
  EXPECT_EQ(far.p_value_biased, 1.0 / 100);
  EXPECT_LT(far.gamma_p_value, 1e-6);
  // Identical samples: the biased statistic is 0 up to rounding and no relabelling goes below 0 by more
  // than rounding, so nearly every relabelling counts: p > 0.9. The p-value is always a multiple of
  // 1/(B + 1) in [1/(B + 1), 1].
  RandomStream prng2(7, "perm");
  const MmdTest same = mmd_test(*k, X, X, 99, prng2, Context(1, 1));
  EXPECT_LT(std::abs(same.mmd2_biased), 1e-14);
  EXPECT_GT(same.p_value_biased, 0.9);
  EXPECT_GT(same.p_value, 0.9);  // MMD²_u of identical samples is negative: −2·(mean diagonal term)/n
  for (double p : {same.p_value, same.p_value_biased, far.p_value}) {
    const double count = p * 100;
    EXPECT_NEAR(count, std::round(count), 1e-9);
    EXPECT_GE(p, 0.01);
    EXPECT_LE(p, 1.0);
  }
  EXPECT_EQ(same.gamma_p_value, 1.0) << "a statistic <= 0 has Gamma p-value 1";
}

// Size under H0 at α = 0.05: 40 data sets, p-values by 99 permutations and by the Gamma approximation.
// The permutation test's level is exact (P(p ≤ 0.05) = 5/100); for the Gamma one, approximate. With
// 40 independent tests at level 0.05, P(more than 7 rejections) = 0.0029 (Binomial(40, 0.05)).
TEST(MmdTest, SizeUnderTheNullIsWithinItsMonteCarloBand) {
  int perm_rejections = 0, gamma_rejections = 0;
  for (int r = 0; r < 40; ++r) {
    RandomStream rng(2000 + r, "size");
    const Matrix X = rng.normal_matrix(25, 2), Y = rng.normal_matrix(25, 2);
    const ChosenBandwidth bw = choose_bandwidth(BandwidthRule{}, X, Y, "test", Context(1, 1));
    const KernelPtr k = gaussian_kernel(bw.sigma);
    RandomStream prng(3000 + r, "perm");
    const MmdTest t = mmd_test(*k, X, Y, 99, prng, Context(1, 1));
    perm_rejections += t.p_value <= 0.05;
    gamma_rejections += t.gamma_p_value <= 0.05;
  }
  EXPECT_LE(perm_rejections, 7);
  EXPECT_LE(gamma_rejections, 7);
  ::testing::Test::RecordProperty("mmd_size_permutation", perm_rejections);
  ::testing::Test::RecordProperty("mmd_size_gamma", gamma_rejections);
}

TEST(MmdTest, RejectsAShiftWithBothPValues) {
  RandomStream rng(8, "shift");
  const Matrix X = rng.normal_matrix(60, 2), Y = (rng.normal_matrix(60, 2).array() + 1.0).matrix();
  const ChosenBandwidth bw = choose_bandwidth(BandwidthRule{}, X, Y, "test", Context(1, 1));
  const KernelPtr k = gaussian_kernel(bw.sigma);
  RandomStream prng(9, "perm");
  const MmdTest t = mmd_test(*k, X, Y, 199, prng, Context(1, 1));
  EXPECT_EQ(t.p_value, 1.0 / 200);
  EXPECT_LT(t.gamma_p_value, 1e-4);
}

TEST(MmdTest, OneTwoAndThreeThreadsGiveBitwiseEqualResults) {
  RandomStream rng(10, "threads");
  const Matrix X = rng.normal_matrix(70, 3), Y = rng.normal_matrix(60, 3);
  const KernelPtr k = gaussian_kernel(1.5);
  MmdTest runs[3];
  for (int t = 0; t < 3; ++t) {
    RandomStream prng(11, "perm");
    runs[t] = mmd_test(*k, X, Y, 50, prng, Context(1, t + 1), 16);
  }
  for (int t = 1; t < 3; ++t) {
    EXPECT_EQ(runs[t].mmd2, runs[0].mmd2);
    EXPECT_EQ(runs[t].mmd2_biased, runs[0].mmd2_biased);
    EXPECT_EQ(runs[t].permuted, runs[0].permuted);
    EXPECT_EQ(runs[t].permuted_biased, runs[0].permuted_biased);
    EXPECT_EQ(runs[t].gamma.variance, runs[0].gamma.variance);
    EXPECT_EQ(runs[t].gamma_p_value, runs[0].gamma_p_value);
  }
}

TEST(MmdTest, BadInputIsADataError) {
  const KernelPtr k = gaussian_kernel(1.0);
  RandomStream prng(12, "perm");
  const Matrix X = Matrix::Random(5, 2);
  EXPECT_TRUE(test::contains(
      test::message_of<DataError>([&] { mmd_test(*k, X, Matrix::Random(5, 3), 10, prng, Context(1, 1)); }),
      "dimension"));
  EXPECT_TRUE(test::contains(
      test::message_of<DataError>([&] { mmd_test(*k, X, Matrix::Random(1, 2), 10, prng, Context(1, 1)); }),
      "at least 2"));
  // Labellings that would not fit in memory: refused before allocating, naming the permutations.
  EXPECT_TRUE(test::contains(
      test::message_of<ConfigError>([&] { mmd_test(*k, X, X, Index{1} << 28, prng, Context(1, 1)); }),
      "permutations"));
}

TEST(HsicTest, StatisticsEqualBruteForce) {
  RandomStream rng(20, "hsic-brute");
  const Matrix X = rng.normal_matrix(9, 2);
  const Matrix Y = (X.col(0).array().square() + 0.3 * rng.normal_matrix(9, 1).array()).matrix();
  const KernelPtr kx = gaussian_kernel(0.9), ky = gaussian_kernel(1.7);
  const HsicTest t = hsic_test(*kx, *ky, X, Y, 0, RandomStream(21, "perm"), Context(1, 1));
  EXPECT_NEAR(t.hsic, brute_hsic_biased(X, Y, 0.9, 1.7), 1e-15);
  EXPECT_NEAR(t.hsic_unbiased, brute_hsic_unbiased(X, Y, 0.9, 1.7), 1e-14);
  EXPECT_TRUE(std::isnan(t.p_value));
}

TEST(HsicTest, PermutedStatisticsAndGammaMeanMatchTheExhaustivePermutationNull) {
  // n = 6: all 720 pairings of Y's rows with X's. Every permuted statistic is one of them, and the Gamma
  // mean is their exact mean. (The variance is asymptotic, checked at n = 200 below: at n = 6 it is
  // off by a factor that depends on the data, 0.42 here.)
  RandomStream rng(22, "hsic-exhaustive");
  const Matrix X = rng.normal_matrix(6, 1), Y = rng.normal_matrix(6, 2);
  const KernelPtr kx = gaussian_kernel(1.0), ky = gaussian_kernel(1.4);
  std::vector<Index> perm(6);
  std::iota(perm.begin(), perm.end(), Index{0});
  std::vector<double> all;
  do {
    Matrix Yp(6, 2);
    for (int i = 0; i < 6; ++i) Yp.row(i) = Y.row(perm[static_cast<std::size_t>(i)]);
    all.push_back(brute_hsic_biased(X, Yp, 1.0, 1.4));
  } while (std::next_permutation(perm.begin(), perm.end()));
  double mean = 0, variance = 0;
  mean_and_variance(all, mean, variance);
  const HsicTest t = hsic_test(*kx, *ky, X, Y, 200, RandomStream(23, "perm"), Context(1, 2));
  EXPECT_NEAR(t.gamma.mean, mean, 1e-15);
  for (Index p = 0; p < t.permuted.size(); ++p) {
    const bool found =
        std::any_of(all.begin(), all.end(), [&](double v) { return std::abs(v - t.permuted[p]) < 1e-14; });
    ASSERT_TRUE(found) << "permutation " << p << " matches no pairing";
  }
}

TEST(HsicTest, GammaVarianceApproachesThePermutationVariance) {
  // n = 200, 20000 permutations: the permutation variance to about 1.5% (its relative standard error,
  // √((kurtosis − 1)/B) with kurtosis ≈ 5 for this skewed law). The asymptotic variance 2E[k̃²]E[l̃²]/n²
  // differs from the finite-n one by O(1/n) terms; 15% allows for both.
  RandomStream rng(28, "hsic-variance");
  const Matrix X = rng.normal_matrix(200, 2), Y = rng.normal_matrix(200, 1);
  const KernelPtr kx = gaussian_kernel(choose_bandwidth(BandwidthRule{}, X, "x", Context(1, 1)).sigma);
  const KernelPtr ky = gaussian_kernel(choose_bandwidth(BandwidthRule{}, Y, "y", Context(1, 1)).sigma);
  const HsicTest t = hsic_test(*kx, *ky, X, Y, 20000, RandomStream(29, "perm"), Context(1, 2));
  const double mean = t.permuted.mean();
  const double variance = (t.permuted.array() - mean).square().mean();
  const double se_mean = std::sqrt(variance / 20000.0);
  EXPECT_LT(std::abs(mean - t.gamma.mean), 5 * se_mean);
  EXPECT_GT(t.gamma.variance / variance, 0.85);
  EXPECT_LT(t.gamma.variance / variance, 1.15);
  ::testing::Test::RecordProperty("hsic_variance_ratio_n200", std::to_string(t.gamma.variance / variance));
}

TEST(HsicTest, SizeUnderIndependenceAndPowerUnderDependence) {
  // 40 independent data sets, n = 30: as for MMD, more than 7 rejections at 0.05 has probability 0.0029.
  int perm_rejections = 0, gamma_rejections = 0;
  for (int r = 0; r < 40; ++r) {
    RandomStream rng(4000 + r, "hsic-size");
    const Matrix X = rng.normal_matrix(30, 2), Y = rng.normal_matrix(30, 1);
    const KernelPtr kx = gaussian_kernel(choose_bandwidth(BandwidthRule{}, X, "x", Context(1, 1)).sigma);
    const KernelPtr ky = gaussian_kernel(choose_bandwidth(BandwidthRule{}, Y, "y", Context(1, 1)).sigma);
    const HsicTest t = hsic_test(*kx, *ky, X, Y, 99, RandomStream(5000 + r, "perm"), Context(1, 1));
    perm_rejections += t.p_value <= 0.05;
    gamma_rejections += t.gamma_p_value <= 0.05;
  }
  EXPECT_LE(perm_rejections, 7);
  EXPECT_LE(gamma_rejections, 7);
  ::testing::Test::RecordProperty("hsic_size_permutation", perm_rejections);
  ::testing::Test::RecordProperty("hsic_size_gamma", gamma_rejections);
  // y = x² + noise: uncorrelated with x, but dependent; both p-values small.
  RandomStream rng(24, "hsic-power");
  const Matrix X = rng.normal_matrix(80, 1);
  const Matrix Y = (X.array().square() + 0.2 * rng.normal_matrix(80, 1).array()).matrix();
  const KernelPtr kx = gaussian_kernel(choose_bandwidth(BandwidthRule{}, X, "x", Context(1, 1)).sigma);
  const KernelPtr ky = gaussian_kernel(choose_bandwidth(BandwidthRule{}, Y, "y", Context(1, 1)).sigma);
  const HsicTest t = hsic_test(*kx, *ky, X, Y, 199, RandomStream(25, "perm"), Context(1, 1));
  EXPECT_EQ(t.p_value, 1.0 / 200);
  EXPECT_LT(t.gamma_p_value, 1e-4);
}

TEST(HsicTest, OneTwoAndThreeThreadsGiveBitwiseEqualResults) {
  RandomStream rng(26, "hsic-threads");
  const Matrix X = rng.normal_matrix(50, 2), Y = rng.normal_matrix(50, 2);
  const KernelPtr k = gaussian_kernel(1.2);
  HsicTest runs[3];
  // 70 permutations: 5 blocks of 16, the last one partial.
  for (int t = 0; t < 3; ++t)
    runs[t] = hsic_test(*k, *k, X, Y, 70, RandomStream(27, "perm"), Context(1, t + 1));
  for (int t = 1; t < 3; ++t) {
    EXPECT_EQ(runs[t].hsic, runs[0].hsic);
    EXPECT_EQ(runs[t].permuted, runs[0].permuted);
    EXPECT_EQ(runs[t].p_value, runs[0].p_value);
    EXPECT_EQ(runs[t].gamma_p_value, runs[0].gamma_p_value);
  }
  // Distinct permutations in distinct blocks (a block stream reused would repeat them).
  std::vector<double> v(runs[0].permuted.data(), runs[0].permuted.data() + 70);
  std::sort(v.begin(), v.end());
  EXPECT_GT(std::unique(v.begin(), v.end()) - v.begin(), 65);
}

TEST(HsicTest, UnequalRowCountsAreADataError) {
  const KernelPtr k = gaussian_kernel(1.0);
  const std::string m = test::message_of<DataError>([&] {
    hsic_test(*k, *k, Matrix::Random(8, 1), Matrix::Random(9, 1), 10, RandomStream(1, "p"), Context(1, 1));
  });
  EXPECT_TRUE(test::contains(m, "8 rows")) << m;
  EXPECT_TRUE(test::contains(m, "9")) << m;
}

TEST(GammaNull, PValueIsTheUpperTailOfTheMatchedGamma) {
  // Shape 1: the exponential law with mean θ, P(T ≥ t) = exp(−t/θ).
  const GammaNull g = match_gamma(2.0, 4.0, "test");
  EXPECT_DOUBLE_EQ(g.shape, 1.0);
  EXPECT_DOUBLE_EQ(g.scale, 2.0);
  EXPECT_NEAR(g.p_value(3.0), std::exp(-1.5), 1e-15);
  // Shape 2 (Erlang): P(T ≥ t) = (1 + t/θ) exp(−t/θ).
  const GammaNull e = match_gamma(1.0, 0.5, "test");
  EXPECT_NEAR(e.p_value(1.2), (1 + 2.4) * std::exp(-2.4), 1e-15);
  EXPECT_EQ(e.p_value(-1.0), 1.0);
  EXPECT_TRUE(
      test::contains(test::message_of<NumericalError>([] { match_gamma(0.0, 1.0, "where"); }), "where"));
}

TEST(BandwidthRule, ParsesMedianAndPositiveValuesAndNamesTheOptionOtherwise) {
  EXPECT_EQ(parse_bandwidth_rule("median", "--kernel-bandwidth").kind, BandwidthRule::Kind::Median);
  const BandwidthRule given = parse_bandwidth_rule("0.25", "--kernel-bandwidth");
  EXPECT_EQ(given.kind, BandwidthRule::Kind::Given);
  EXPECT_EQ(given.value, 0.25);
  for (const char* bad : {"0", "-1", "abc", "", "1.5x", "nan", "inf"}) {
    const std::string m =
        test::message_of<ConfigError>([&] { parse_bandwidth_rule(bad, "--kernel-bandwidth"); });
    EXPECT_TRUE(test::contains(m, "--kernel-bandwidth")) << bad << ": " << m;
  }
  // The pooled median: the median distance of the rows of both samples (all of them when few).
  RandomStream rng(30, "median");
  const Matrix X = rng.normal_matrix(20, 2), Y = rng.normal_matrix(30, 2);
  Matrix pooled(50, 2);
  pooled << X, Y;
  EXPECT_EQ(choose_bandwidth(BandwidthRule{}, X, Y, "t", Context(1, 1)).sigma,
            median_pairwise_distance(pooled, 50));
  EXPECT_EQ(choose_bandwidth(BandwidthRule{}, X, "t", Context(1, 1)).sigma, median_pairwise_distance(X, 20));
  EXPECT_EQ(choose_bandwidth(given, X, Y, "t", Context(1, 1)).sigma, 0.25);
  EXPECT_TRUE(test::contains(test::message_of<NumericalError>([&] {
                               choose_bandwidth(BandwidthRule{}, Matrix::Zero(5, 2), "--kernel-bandwidth",
                                                Context(1, 1));
                             }),
                             "--kernel-bandwidth"));
}

TEST(BandwidthRule, BklIsBayesianKernelLearningWithItsLandmarkRuleOnThePooledSample) {
  EXPECT_EQ(parse_bandwidth_rule("bkl", "--kernel-bandwidth").kind, BandwidthRule::Kind::Bkl);
  EXPECT_EQ(bkl_landmarks(50, 2), 5);        // n / 10
  EXPECT_EQ(bkl_landmarks(20, 4), 5);        // at least D + 1
  EXPECT_EQ(bkl_landmarks(100000, 3), 100);  // at most 100
  // The rule is bkl_bandwidth with those options, on the pooled rows for two samples: same σ, and
  // its provenance.
  RandomStream rng(31, "bkl rule");
  const Matrix X = rng.normal_matrix(150, 2), Y = 1.5 * rng.normal_matrix(150, 2);
  Matrix pooled(300, 2);
  pooled << X, Y;
  BklOptions o;
  o.landmarks = bkl_landmarks(300, 2);
  o.context = "t";
  const BklResult direct = bkl_bandwidth(pooled, o, Context(4, 1));
  const ChosenBandwidth c =
      choose_bandwidth(BandwidthRule{BandwidthRule::Kind::Bkl, 0}, X, Y, "t", Context(4, 2));
  EXPECT_EQ(c.sigma, direct.sigma);
  EXPECT_TRUE(test::contains(c.how, "Bayesian kernel learning")) << c.how;
  EXPECT_TRUE(test::contains(c.how, "pooled")) << c.how;
  const ChosenBandwidth one =
      choose_bandwidth(BandwidthRule{BandwidthRule::Kind::Bkl, 0}, X, "t", Context(4, 1));
  o.landmarks = bkl_landmarks(150, 2);
  EXPECT_EQ(one.sigma, bkl_bandwidth(X, o, Context(4, 1)).sigma);
}

}  // namespace
}  // namespace kef::kernel_tests_test
