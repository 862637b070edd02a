// Aggregated kernel tests (kef/aggregated_test.hpp, kef/aggregate_collection.hpp): the collection
// and every statistic against brute-force formulas on small samples, the matrix-product fast path against a
// loop over the draws, the same results for any thread count, the level over repeated null trials, and the
// errors for bad input.
#include "kef/aggregated_test.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kef/aggregate_collection.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using Profile = AggregateKernel::Profile;

Matrix uniform(Index n, Index d, RandomStream& rng, double shift = 0) {
  Matrix X(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < d; ++j) X(i, j) = rng.uniform() + shift;
  return X;
}

double l1(const Matrix& A, Index i, const Matrix& B, Index j) {
  double s = 0;
  for (Index c = 0; c < A.cols(); ++c) s += std::abs(A(i, c) - B(j, c));
  return s;
}
double l2(const Matrix& A, Index i, const Matrix& B, Index j) { return (A.row(i) - B.row(j)).norm(); }

double kernel(const AggregateKernel& k, double lambda, const Matrix& A, Index i, const Matrix& B, Index j) {
  const double d = k.distance == AggregateDistance::L1 ? l1(A, i, B, j) : l2(A, i, B, j);
  return aggregate_kernel_value(k.profile, d / lambda);
}

// The Matérn kernel of smoothness ν = p + 1/2 by its closed form for half-integer ν:
// exp(−√(2ν) d) · p!/(2p)! · Σ_{i≤p} (p + i)!/(i!(p − i)!) (2√(2ν) d)^(p−i).
double matern_closed_form(int p, double d) {
  auto fact = [](int k) { return std::tgamma(k + 1.0); };
  const double s = std::sqrt(2.0 * (p + 0.5));
  double sum = 0;
  for (int i = 0; i <= p; ++i) sum += fact(p + i) / (fact(i) * fact(p - i)) * std::pow(2 * s * d, p - i);
  return std::exp(-s * d) * fact(p) / fact(2 * p) * sum;
}

TEST(AggregateCollection, KernelProfilesAreThePapersFormulas) {
  const Profile matern[] = {Profile::Matern05, Profile::Matern15, Profile::Matern25, Profile::Matern35,
                            Profile::Matern45};
  for (const double d : {0.0, 0.3, 1.0, 2.7}) {
    EXPECT_DOUBLE_EQ(aggregate_kernel_value(Profile::Gaussian, d), std::exp(-d * d));
    EXPECT_DOUBLE_EQ(aggregate_kernel_value(Profile::Imq, d), std::pow(1 + d * d, -0.5));
    for (int p = 0; p < 5; ++p)
      EXPECT_NEAR(aggregate_kernel_value(matern[p], d), matern_closed_form(p, d), 1e-14) << p << " " << d;
  }
  // The matrix form is the scalar one entry by entry.
  RandomStream rng(3, "profiles");
  const Matrix D = uniform(7, 5, rng) * 3;
  for (const AggregateKernel& k : parse_aggregate_kernels("all", "kernels")) {
    Matrix K;
    aggregate_kernel_matrix(k, 0.7, D, K);
    for (Index i = 0; i < D.rows(); ++i)
      for (Index j = 0; j < D.cols(); ++j)
        EXPECT_NEAR(K(i, j), aggregate_kernel_value(k.profile, D(i, j) / 0.7), 1e-15) << k.name;
  }
}

TEST(AggregateCollection, NamedCollectionsPutL1FamiliesFirst) {
  std::vector<std::string> names;
  for (const auto& k : parse_aggregate_kernels("all", "kernels")) names.push_back(k.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"matern_0.5_l1", "matern_1.5_l1", "matern_2.5_l1", "matern_3.5_l1",
                                      "matern_4.5_l1", "matern_0.5_l2", "matern_1.5_l2", "matern_2.5_l2",
                                      "matern_3.5_l2", "matern_4.5_l2", "gaussian", "imq"}));
  const auto lg = parse_aggregate_kernels("gaussian_laplace", "kernels");
  ASSERT_EQ(lg.size(), 2u);
  EXPECT_EQ(lg[0].name, "laplace");
  EXPECT_EQ(lg[0].distance, AggregateDistance::L1);
  EXPECT_EQ(lg[1].name, "gaussian");
  try {
    parse_aggregate_kernels("matern_5.5_l1", "--kernels");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--kernels"), std::string::npos) << e.what();
  }
}

TEST(AggregateCollection, BandwidthsAreTheGeometricGridOfTheScaledDistances) {
  RandomStream rng(5, "bandwidths");
  for (const double scale : {1.0, 0.01}) {  // 0.01: the smallest distance is below 0.1
    const Matrix X = uniform(30, 3, rng) * scale, Y = uniform(25, 3, rng) * scale;
    for (const AggregateDistance norm : {AggregateDistance::L1, AggregateDistance::L2}) {
      std::vector<double> d;
      for (Index i = 0; i < X.rows(); ++i)
        for (Index j = 0; j < Y.rows(); ++j)
          d.push_back(norm == AggregateDistance::L1 ? l1(X, i, Y, j) : l2(X, i, Y, j));
      std::sort(d.begin(), d.end());
      double low = d.front();
      if (low < 0.1) low = std::max(d[static_cast<std::size_t>(std::floor(d.size() * 0.05))], 0.1);
      const double high = std::max(d.back(), 0.3);
      const std::vector<double> b = mmdagg_bandwidths(X, Y, norm, 6);
      ASSERT_EQ(b.size(), 6u);
      EXPECT_NEAR(b.front(), low / 2, 1e-15 * low);
      EXPECT_NEAR(b.back(), 2 * high, 1e-13 * high);
      for (std::size_t r = 1; r < b.size(); ++r)
        EXPECT_NEAR(b[r] / b[r - 1], std::pow(4 * high / low, 1.0 / 5), 1e-13);
    }
  }
  const Matrix X = uniform(12, 4, rng);
  const std::vector<double> k = ksdagg_bandwidths(X, 5);
  double largest = 0;
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < X.rows(); ++j) largest = std::max(largest, l2(X, i, X, j));
  EXPECT_NEAR(k.front(), 1.0 / 4, 1e-15);
  EXPECT_NEAR(k.back(), std::max(largest, 2.0) / 4, 1e-14);
  std::vector<double> d;
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = i + 1; j < X.rows(); ++j) d.push_back(l2(X, i, X, j));
  std::sort(d.begin(), d.end());
  const double median = 0.5 * (d[d.size() / 2 - 1] + d[d.size() / 2]);  // 66 distances: even
  const std::vector<double> h = hsicagg_bandwidths(X, 2, -2, 2);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_DOUBLE_EQ(h[0], median / 4);
  EXPECT_DOUBLE_EQ(h[4], median * 4);
}

TEST(AggregateCollection, WeightsSumToOneWithThePapersShapes) {
  const double h4 = 1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4;
  const auto dec = aggregate_weights(4, AggregateWeights::Decreasing);
  const auto inc = aggregate_weights(4, AggregateWeights::Increasing);
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(dec[static_cast<std::size_t>(r)], 1 / ((r + 1) * h4), 1e-16);
    EXPECT_NEAR(inc[static_cast<std::size_t>(r)], 1 / ((4 - r) * h4), 1e-16);
  }
  const auto odd = aggregate_weights(5, AggregateWeights::Centred);  // ∝ 1/3, 1/2, 1, 1/2, 1/3
  EXPECT_NEAR(odd[2] / odd[0], 3.0, 1e-14);
  EXPECT_NEAR(odd[1] / odd[0], 1.5, 1e-14);
  const auto even = aggregate_weights(4, AggregateWeights::Centred);  // ∝ 1/2, 1, 1, 1/2
  EXPECT_NEAR(even[1] / even[0], 2.0, 1e-14);
  EXPECT_DOUBLE_EQ(even[1], even[2]);
  for (const auto w : {AggregateWeights::Uniform, AggregateWeights::Decreasing, AggregateWeights::Increasing,
                       AggregateWeights::Centred})
    for (const Index R : {2, 5, 10}) {
      const auto v = aggregate_weights(R, w);
      double s = 0;
      for (const double x : v) s += x;
      EXPECT_NEAR(s, 1.0, 1e-15);
    }
}

AggregateOptions small_options() {
  AggregateOptions o;
  o.bandwidths = 3;
  o.bootstrap_draws = 200;
  o.level_draws = 100;
  o.bisection_steps = 20;
  o.alpha = 0.1;
  o.keep_simulated = true;
  return o;
}

// Σ_{i≠j} w_i w_j h(i, j) / norm for a draw w, pair by pair.
double brute_form(const Vector& w, const std::function<double(Index, Index)>& h, double norm) {
  double s = 0;
  for (Index i = 0; i < w.size(); ++i)
    for (Index j = 0; j < w.size(); ++j)
      if (i != j) s += w[i] * w[j] * h(i, j);
  return s / norm;
}

TEST(MmdAgg, WildBootstrapStatisticsEqualTheirPairwiseFormulas) {
  RandomStream data(11, "data");
  const Matrix X = uniform(9, 2, data), Y = uniform(9, 2, data, 0.3);
  AggregateOptions o = small_options();
  o.kernels = "all";
  o.bootstrap_draws = 400;  // 36 single tests at alpha = 0.1 need at least 359
  const Context context(1, 1);
  RandomStream rng(7, "mmdagg");
  const AggregatedTest t = mmd_agg(X, Y, o, rng, context);
  EXPECT_EQ(t.approximation, "wild bootstrap");
  ASSERT_EQ(t.tests.size(), 36u);
  RandomStream again(7, "mmdagg");
  const Matrix W = rademacher_draws(9, 500, again);
  const auto kernels = parse_aggregate_kernels("all", "kernels");
  for (std::size_t s = 0; s < t.tests.size(); ++s) {
    const AggregateKernel& k = kernels[s / 3];
    const double lam = t.tests[s].bandwidth;
    EXPECT_EQ(t.tests[s].kernel, k.name);
    EXPECT_EQ(lam, mmdagg_bandwidths(X, Y, k.distance, 3)[s % 3]);
    auto h = [&](Index i, Index j) {
      return kernel(k, lam, X, i, X, j) + kernel(k, lam, Y, i, Y, j) - kernel(k, lam, X, i, Y, j) -
             kernel(k, lam, Y, i, X, j);
    };
    for (Index b = 0; b < W.cols(); b += 37) {  // the observed statistic and a spread of draws
      const double brute = brute_form(W.col(b), h, 9.0 * 8.0);
      EXPECT_NEAR(t.simulated(static_cast<Index>(s), b), brute, 1e-13 * (1 + std::abs(brute)))
          << k.name << " " << b;
    }
    EXPECT_EQ(t.tests[s].statistic, t.simulated(static_cast<Index>(s), 0));
  }
}

// Above 500 rows the bandwidths come from the first 500 of each sample, taken from the distance
// matrices the test forms (both approximations).
TEST(MmdAgg, BandwidthsLookAtTheFirst500Rows) {
  RandomStream data(19, "data");
  const Matrix X = uniform(505, 2, data), Y = uniform(505, 2, data, 0.1), Y2 = uniform(520, 2, data);
  AggregateOptions o = small_options();
  o.bandwidths = 2;
  o.bootstrap_draws = 60;
  o.level_draws = 10;
  o.keep_simulated = false;
  const Context context(1, 2);
  for (const Matrix* y : {&Y, &Y2}) {
    RandomStream rng(3, "mmdagg");
    const AggregatedTest t = mmd_agg(X, *y, o, rng, context);
    EXPECT_EQ(t.approximation, y == &Y ? "wild bootstrap" : "permutations");
    const auto kernels = parse_aggregate_kernels(o.kernels, "kernels");
    for (std::size_t s = 0; s < t.tests.size(); ++s)
      EXPECT_EQ(t.tests[s].bandwidth, mmdagg_bandwidths(X, *y, kernels[s / 2].distance, 2)[s % 2]) << s;
  }
}

TEST(MmdAgg, PermutationStatisticsAreTheUnbiasedMmdOfEachLabelling) {
  RandomStream data(12, "data");
  const Matrix X = uniform(7, 3, data), Y = uniform(10, 3, data, 0.2);
  AggregateOptions o = small_options();
  o.kernels = "laplace_gaussian";
  const Context context(1, 1);
  RandomStream rng(8, "mmdagg");
  const AggregatedTest t = mmd_agg(X, Y, o, rng, context);
  EXPECT_EQ(t.approximation, "permutations");
  RandomStream again(8, "mmdagg");
  const Matrix A = permutation_draws(7, 17, 300, again);
  Matrix Z(17, 3);
  Z << X, Y;
  const auto kernels = parse_aggregate_kernels("laplace_gaussian", "kernels");
  for (std::size_t s = 0; s < t.tests.size(); ++s) {
    const AggregateKernel& k = kernels[s / 3];
    const double lam = t.tests[s].bandwidth;
    for (Index b = 0; b < A.cols(); b += 23) {
      std::vector<Index> first, second;
      for (Index i = 0; i < 17; ++i) (A(i, b) == 1.0 ? first : second).push_back(i);
      ASSERT_EQ(first.size(), 7u);
      double xx = 0, yy = 0, xy = 0;
      for (Index i : first)
        for (Index j : first)
          if (i != j) xx += kernel(k, lam, Z, i, Z, j);
      for (Index i : second)
        for (Index j : second)
          if (i != j) yy += kernel(k, lam, Z, i, Z, j);
      for (Index i : first)
        for (Index j : second) xy += kernel(k, lam, Z, i, Z, j);
      const double brute = xx / 42.0 + yy / 90.0 - 2 * xy / 70.0;
      EXPECT_NEAR(t.simulated(static_cast<Index>(s), b), brute, 1e-13) << k.name << " " << b;
    }
  }
}

// The pattern-table quadratic forms against the product H·W and against a loop over the draws, for
// sizes that leave a partial last block of rows, both kinds of draws, and any thread count.
TEST(AggregateQuadraticForms, PatternTablesEqualTheProductAndTheLoop) {
  RandomStream rng(17, "forms");
  // Blocks of 6 rows (labels) and 7 (signs); 130 rows: more blocks than runs of them.
  for (const Index n : {1, 2, 5, 6, 7, 8, 13, 14, 40, 130}) {
    Matrix H = rng.normal_matrix(n, n);
    H = (H + H.transpose()).eval();
    H(0, 0) = 0.75;  // a diagonal entry counts once
    RandomStream draws(n, "draws");
    for (const bool signs : {true, false}) {
      const Matrix W = signs ? rademacher_draws(n, 70, draws) : permutation_draws(n / 2, n, 70, draws);
      const TwoValuedDraws P = signs ? two_valued_draws(W, -1, 1) : two_valued_draws(W, 0, 1);
      const Vector fast = quadratic_forms(H, P, Context(1, 1));
      const Vector product = quadratic_forms(H, W, Context(1, 1));
      ASSERT_EQ(fast.size(), 71);
      for (Index b = 0; b < W.cols(); ++b) {
        double loop = 0;
        for (Index i = 0; i < n; ++i)
          for (Index j = 0; j < n; ++j) loop += W(i, b) * H(i, j) * W(j, b);
        EXPECT_NEAR(fast[b], loop, 1e-12 * (1 + H.cwiseAbs().sum())) << n << " " << signs << " " << b;
        EXPECT_NEAR(fast[b], product[b], 1e-12 * (1 + H.cwiseAbs().sum())) << n << " " << signs << " " << b;
      }
      EXPECT_TRUE(fast.cwiseEqual(quadratic_forms(H, P, Context(1, 3))).all()) << n;
      Matrix upper = H;  // only the upper triangle is read
      upper.triangularView<Eigen::StrictlyLower>().setConstant(std::nan(""));
      EXPECT_TRUE(fast.cwiseEqual(quadratic_forms(upper, P, Context(1, 2))).all()) << n;
    }
  }
  Matrix W = Matrix::Ones(8, 3);
  W(7, 2) = 0.5;
  EXPECT_THROW(two_valued_draws(W, -1, 1), Error);
  // The signs' patterns straight from the random bits: rows across 64-bit words, a partial last block.
  for (const Index n : {1, 6, 63, 64, 65, 130, 200}) {
    RandomStream a(5, "signs"), b(5, "signs");
    const TwoValuedDraws direct = rademacher_patterns(n, 9, a),
                         via = two_valued_draws(rademacher_draws(n, 9, b), -1, 1);
    EXPECT_EQ(direct.patterns, via.patterns) << n;
    EXPECT_EQ(direct.draws, 10);
    EXPECT_EQ(a(), b()) << n;  // the same number of draws taken
  }
}

TEST(HsicAgg, StatisticsEqualTheirPairwiseFormulas) {
  RandomStream data(13, "data");
  const Matrix X = uniform(15, 2, data);  // odd: the last row is left out
  Matrix Y = uniform(15, 1, data);
  Y.col(0) += X.col(0);
  AggregateOptions o = small_options();
  o.hsic_lower = -1;
  o.hsic_upper = 1;
  const Context context(1, 1);
  RandomStream rng(9, "hsicagg");
  const AggregatedTest t = hsic_agg(X, Y, o, rng, context);
  ASSERT_EQ(t.tests.size(), 9u);
  EXPECT_EQ(t.rows, 7);
  RandomStream again(9, "hsicagg");
  const Matrix W = rademacher_draws(7, 300, again);
  const AggregateKernel g{Profile::Gaussian, AggregateDistance::L2, "gaussian"};
  auto hpart = [&](const Matrix& S, double lam, Index i, Index j) {
    return kernel(g, lam, S, i, S, j) + kernel(g, lam, S, i + 7, S, j + 7) - kernel(g, lam, S, i, S, j + 7) -
           kernel(g, lam, S, i + 7, S, j);
  };
  for (std::size_t s = 0; s < t.tests.size(); ++s) {
    const double lx = t.tests[s].bandwidth, ly = t.tests[s].bandwidth_y;
    EXPECT_EQ(lx, hsicagg_bandwidths(X, 2, -1, 1)[s % 3]);
    EXPECT_EQ(ly, hsicagg_bandwidths(Y, 2, -1, 1)[s / 3]);
    auto h = [&](Index i, Index j) { return hpart(X, lx, i, j) * hpart(Y, ly, i, j); };
    for (Index b = 0; b < W.cols(); b += 29)
      EXPECT_NEAR(t.simulated(static_cast<Index>(s), b), brute_form(W.col(b), h, 42.0), 1e-14)
          << s << " " << b;
  }
}

// The IMQ kernel (1 + ‖x − y‖²/λ²)^(−1/2) and its Stein kernel for the score s, with every derivative
// of k by central differences.
double stein_by_differences(const Vector& x, const Vector& y, const Vector& sx, const Vector& sy,
                            double lam) {
  auto k = [&](const Vector& a, const Vector& b) {
    return std::pow(1 + (a - b).squaredNorm() / (lam * lam), -0.5);
  };
  const double e = 1e-4;
  const Index D = x.size();
  double h = sx.dot(sy) * k(x, y);
  for (Index d = 0; d < D; ++d) {
    Vector u = Vector::Zero(D);
    u[d] = e;
    const double dx = (k(x + u, y) - k(x - u, y)) / (2 * e), dy = (k(x, y + u) - k(x, y - u)) / (2 * e);
    const double dxy = (k(x + u, y + u) - k(x + u, y - u) - k(x - u, y + u) + k(x - u, y - u)) / (4 * e * e);
    h += sx[d] * dy + sy[d] * dx + dxy;
  }
  return h;
}

TEST(KsdAgg, StatisticsEqualTheSteinKernelByCentralDifferences) {
  RandomStream data(14, "data");
  const Matrix X = uniform(8, 2, data) * 2;
  const Matrix S = -X * 1.3 + Matrix::Constant(8, 2, 0.4);  // a Gaussian's score
  AggregateOptions o = small_options();
  const Context context(1, 1);
  RandomStream rng(10, "ksdagg");
  const AggregatedTest t = ksd_agg(X, S, o, rng, context);
  ASSERT_EQ(t.tests.size(), 3u);
  RandomStream again(10, "ksdagg");
  const Matrix W = rademacher_draws(8, 300, again);
  for (std::size_t s = 0; s < 3; ++s) {
    const double lam = t.tests[s].bandwidth;
    EXPECT_EQ(t.tests[s].kernel, "imq");
    auto h = [&](Index i, Index j) {
      return stein_by_differences(X.row(i).transpose(), X.row(j).transpose(), S.row(i).transpose(),
                                  S.row(j).transpose(), lam);
    };
    for (Index b = 0; b < W.cols(); b += 31) {
      const double brute = brute_form(W.col(b), h, 56.0);
      EXPECT_NEAR(t.simulated(static_cast<Index>(s), b), brute, 1e-6 * (1 + std::abs(brute)))
          << s << " " << b;
    }
  }
}

TEST(AggregateDecision, QuantilesPValuesAndLevelCorrectionFollowTheRule) {
  RandomStream rng(15, "decision");
  const Index T = 4, B1 = 99, B2 = 200;
  Matrix M(T, 1 + B1 + B2);
  for (Index t = 0; t < T; ++t)
    for (Index b = 0; b < M.cols(); ++b) M(t, b) = rng.normal() + (b == 0 ? 2.0 : 0.0);
  const std::vector<double> w = aggregate_weights(T, AggregateWeights::Decreasing);
  const double alpha = 0.1;
  const AggregateDecision d = aggregate_decision(M, w, alpha, B1, B2, 40);
  auto exceed_fraction = [&](double u) {
    Index count = 0;
    for (Index b = 1 + B1; b < M.cols(); ++b) {
      bool any = false;
      for (Index t = 0; t < T; ++t) {
        std::vector<double> first;
        for (Index c = 0; c <= B1; ++c) first.push_back(M(t, c));
        std::sort(first.begin(), first.end());
        const auto pos =
            static_cast<std::size_t>(std::ceil((B1 + 1) * (1 - u * w[static_cast<std::size_t>(t)])) - 1);
        any = any || M(t, b) > first[pos];
      }
      count += any;
    }
    return static_cast<double>(count) / B2;
  };
  const double u = d.level_correction;
  EXPECT_LE(exceed_fraction(u), alpha);
  EXPECT_GT(exceed_fraction(u + 1e-3), alpha);  // the bisection found the edge (to 2^-40 of the range)
  EXPECT_GT(u, alpha);                          // at least the Bonferroni correction for these weights
  for (Index t = 0; t < T; ++t) {
    Index at_least = 0;
    for (Index b = 0; b <= B1; ++b) at_least += M(t, b) >= M(t, 0);
    EXPECT_DOUBLE_EQ(d.p_values[t], at_least / 100.0);
    EXPECT_DOUBLE_EQ(d.thresholds[t], u * w[static_cast<std::size_t>(t)]);
    EXPECT_EQ(d.reject[static_cast<std::size_t>(t)], M(t, 0) > d.quantiles[t]);
  }
}

TEST(AggregatedTests, ResultsDoNotDependOnTheThreadCount) {
  RandomStream data(16, "data");
  const Matrix X = uniform(140, 2, data), Y = uniform(140, 2, data, 0.05), Y2 = uniform(90, 2, data);
  AggregateOptions o = small_options();
  o.hsic_lower = -1;
  o.hsic_upper = 1;
  auto run = [&](int threads, int which) {
    const Context context(1, threads);
    RandomStream rng(21, "agg");
    if (which == 0) return mmd_agg(X, Y, o, rng, context).simulated;
    if (which == 1) return mmd_agg(X, Y2, o, rng, context).simulated;
    if (which == 2) return hsic_agg(X, Y, o, rng, context).simulated;
    return ksd_agg(X, -X, o, rng, context).simulated;
  };
  for (int which = 0; which < 4; ++which) {
    const Matrix one = run(1, which);
    EXPECT_TRUE(one.cwiseEqual(run(2, which)).all()) << which;
    EXPECT_TRUE(one.cwiseEqual(run(3, which)).all()) << which;
  }
}

// The rejection rate over `trials` null samples is at most α + 2 sd; and, so that a test that never
// rejects cannot pass, the same test rejects a clear alternative.
double rejection_rate(int trials, const std::function<bool(RandomStream&)>& reject) {
  int count = 0;
  for (int r = 0; r < trials; ++r) {
    RandomStream rng(static_cast<std::uint64_t>(r), "level");
    count += reject(rng);
  }
  return static_cast<double>(count) / trials;
}

AggregateOptions level_options() {
  AggregateOptions o;
  o.alpha = 0.05;
  o.bandwidths = 4;
  o.bootstrap_draws = 199;  // 8 single tests at alpha = 0.05 need at least 159
  o.level_draws = 200;
  o.bisection_steps = 20;
  return o;
}

constexpr int kTrials = 500;
const double kBound = 0.05 + 2 * std::sqrt(0.05 * 0.95 / kTrials);

TEST(AggregatedTests, MmdAggKeepsTheLevelByWildBootstrapAndByPermutations) {
  const Context context(1, 1);
  const AggregateOptions o = level_options();
  AggregateOptions p = o;
  p.permutations = true;
  const double boot = rejection_rate(kTrials, [&](RandomStream& rng) {
    const Matrix X = uniform(12, 2, rng), Y = uniform(12, 2, rng);
    return mmd_agg(X, Y, o, rng, context).reject;
  });
  const double perm = rejection_rate(kTrials, [&](RandomStream& rng) {
    const Matrix X = uniform(12, 2, rng), Y = uniform(12, 2, rng);
    return mmd_agg(X, Y, p, rng, context).reject;
  });
  EXPECT_LE(boot, kBound);
  EXPECT_LE(perm, kBound);
  RandomStream rng(1, "power");
  const Matrix X = uniform(12, 2, rng), Y = uniform(12, 2, rng, 1.0);
  EXPECT_TRUE(mmd_agg(X, Y, o, rng, context).reject);
  EXPECT_TRUE(mmd_agg(X, Y, p, rng, context).reject);
}

TEST(AggregatedTests, HsicAggAndKsdAggKeepTheLevel) {
  const Context context(1, 1);
  AggregateOptions o = level_options();
  o.hsic_lower = -1;
  o.hsic_upper = 0;  // 4 pairs of bandwidths
  const double hsic = rejection_rate(kTrials, [&](RandomStream& rng) {
    const Matrix X = uniform(24, 1, rng), Y = uniform(24, 1, rng);
    return hsic_agg(X, Y, o, rng, context).reject;
  });
  const double ksd = rejection_rate(kTrials, [&](RandomStream& rng) {
    const Matrix X = rng.normal_matrix(12, 2);
    return ksd_agg(X, -X, o, rng, context).reject;
  });
  EXPECT_LE(hsic, kBound);
  EXPECT_LE(ksd, kBound);
  RandomStream rng(2, "power");
  const Matrix X = uniform(40, 1, rng);
  EXPECT_TRUE(hsic_agg(X, X, o, rng, context).reject);
  const Matrix Z = rng.normal_matrix(30, 2);
  EXPECT_TRUE(ksd_agg(Z, -(Z.array() - 1.5).matrix(), o, rng, context).reject);  // the score of N(1.5, I)
}

void expect_error(const std::function<void()>& f, const std::string& part, bool config) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one naming " << part;
  } catch (const ConfigError& e) {
    EXPECT_TRUE(config) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  } catch (const DataError& e) {
    EXPECT_FALSE(config) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(AggregatedTests, BadInputIsAnErrorNamingTheOption) {
  const Context context(1, 1);
  RandomStream rng(4, "bad");
  const Matrix X = uniform(10, 2, rng), Y = uniform(10, 2, rng);
  AggregateOptions o = small_options();
  auto mmd = [&](const Matrix& a, const Matrix& b, const AggregateOptions& opt) {
    return [&, opt] { mmd_agg(a, b, opt, rng, context); };
  };
  expect_error(mmd(X.topRows(1), Y, o), "mmdagg: the first sample has 1 row;", false);
  expect_error(mmd(X, Y.topRows(1), o), "mmdagg: the second sample has 1 row;", false);
  AggregateOptions named = o;  // as the command and the Python functions name them
  named.x_name = "X (x.npy)";
  named.y_name = "Y (y.npy)";
  expect_error(mmd(X, Y.topRows(1), named), "mmdagg: Y (y.npy), the second sample, has 1 row;", false);
  expect_error([&] { ksd_agg(X.topRows(1), Y.topRows(1), named, rng, context); },
               "ksdagg: X (x.npy), the sample, has 1 row;", false);
  expect_error(mmd(X, uniform(10, 3, rng), o), "samples of dimension 2 and 3", false);
  for (const double alpha : {0.0, 1.0, -0.2, std::nan("")}) {
    AggregateOptions a = o;
    a.alpha = alpha;
    expect_error(mmd(X, Y, a), "`alpha` must be in (0, 1)", true);
  }
  AggregateOptions one = o;
  one.bandwidths = 1;
  expect_error(mmd(X, Y, one), "`number_bandwidths` = 1", true);
  AggregateOptions few = o;
  few.bootstrap_draws = 50;  // 6 single tests at alpha = 0.1: at least 59
  expect_error(mmd(X, Y, few), "`bootstrap_draws` = 50 is too few for alpha = 0.1 over 6 single tests", true);
  few.flag_names = true;
  expect_error(mmd(X, Y, few), "--bootstrap-draws = 50 is too few", true);
  AggregateOptions enough = o;
  enough.bootstrap_draws = 59;
  EXPECT_NO_THROW(mmd_agg(X, Y, enough, rng, context));
  AggregateOptions hsic = o;
  hsic.hsic_lower = hsic.hsic_upper = 0;
  expect_error([&] { hsic_agg(X, Y, hsic, rng, context); }, "`hsic_lower` = 0 and `hsic_upper` = 0", true);
  AggregateOptions pairs = o;
  pairs.hsic_lower = -1;
  pairs.hsic_upper = 1;
  expect_error([&] { hsic_agg(X, Y.topRows(9), pairs, rng, context); }, "paired samples of 10 and 9 rows",
               false);
  AggregateOptions grid = o;  // 25 pairs of bandwidths at alpha = 0.1: at least 249 draws
  expect_error([&] { hsic_agg(X, Y, grid, rng, context); }, "`bootstrap_draws` = 200 is too few", true);
  AggregateOptions weights = o;
  weights.weights = "centered";
  expect_error(mmd(X, Y, weights), "unknown weights `centered`", true);
  expect_error([&] { ksd_agg(X, Y.leftCols(1), o, rng, context); }, "the scores are 10 x 1", false);
  Matrix nan = X;
  nan(3, 1) = std::nan("");
  EXPECT_THROW(mmd_agg(nan, Y, o, rng, context), NumericalError);
}

// `kef test two-sample|independence --aggregate`: the report is the library's for the same seed (the
// same statistics for any thread count), and bad options exit 2 naming the flag before a file is read.
TEST(AggregatedTests, CommandReportsEverySingleTestAndNamesBadFlags) {
  const auto dir = test::temp_dir("aggregated");
  RandomStream data(31, "cli");
  const Matrix X = uniform(30, 2, data), Y = uniform(30, 2, data, 0.5);
  write_npy(dir / "x.npy", X);
  write_npy(dir / "y.npy", Y);
  const std::string files = " " + (dir / "x.npy").string() + " " + (dir / "y.npy").string();
  const auto one = test::kef_cmd("test two-sample" + files + " --aggregate --json --seed 4 --threads 1");
  ASSERT_EQ(one.status, 0) << one.output;
  const auto two = test::kef_cmd("test two-sample" + files + " --aggregate --json --seed 4 --threads 2");
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_EQ(one.output, two.output);
  const auto j = nlohmann::json::parse(one.output);
  const auto& agg = j["aggregate"];
  EXPECT_EQ(agg["test"], "mmdagg");
  EXPECT_EQ(agg["approximation"], "wild bootstrap");
  ASSERT_EQ(agg["single_tests"].size(), 20u);
  EXPECT_TRUE(agg["reject"].get<bool>());
  AggregateOptions o;
  const Context context(4, 1);
  RandomStream rng = context.rng().derive("two-sample").derive("aggregate");
  const AggregatedTest t = mmd_agg(X, Y, o, rng, context);
  for (std::size_t s = 0; s < t.tests.size(); ++s) {
    EXPECT_EQ(agg["single_tests"][s]["kernel"], t.tests[s].kernel);
    EXPECT_EQ(agg["single_tests"][s]["statistic"].get<double>(), t.tests[s].statistic);
    EXPECT_EQ(agg["single_tests"][s]["p_value"].get<double>(), t.tests[s].p_value);
  }
  const auto hsic =
      test::kef_cmd("test independence" + files + " --aggregate --json --hsic-lower -1 --hsic-upper 1");
  ASSERT_EQ(hsic.status, 0) << hsic.output;
  EXPECT_EQ(nlohmann::json::parse(hsic.output)["aggregate"]["single_tests"].size(), 9u);
  // A sample too small is named as the user gave it: the argument and its file.
  write_npy(dir / "one.npy", Matrix(X.topRows(1)));
  write_npy(dir / "three.npy", Matrix(X.topRows(3)));
  for (const auto& [args, part] : std::vector<std::pair<std::string, std::string>>{
           {"test two-sample " + (dir / "one.npy").string() + " " + (dir / "y.npy").string() + " --aggregate",
            "mmdagg: X (" + (dir / "one.npy").string() + "), the first sample, has 1 row;"},
           {"test two-sample " + (dir / "x.npy").string() + " " + (dir / "one.npy").string() + " --aggregate",
            "mmdagg: Y (" + (dir / "one.npy").string() + "), the second sample, has 1 row;"},
           {"test independence " + (dir / "three.npy").string() + " " + (dir / "three.npy").string() +
                " --aggregate",
            "hsicagg: X (" + (dir / "three.npy").string() + "), the first sample, has 3 rows;"}}) {
    const auto r = test::kef_cmd(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(test::contains(r.output, part)) << args << "\n" << r.output;
  }
  const std::string missing = " " + (dir / "none.npy").string() + " " + (dir / "y.npy").string();
  for (const auto& [args, part] : std::vector<std::pair<std::string, std::string>>{
           {"test two-sample" + missing + " --aggregate --alpha 1.5", "--alpha must be in (0, 1)"},
           {"test two-sample" + missing + " --aggregate --number-bandwidths 1", "--number-bandwidths = 1"},
           {"test two-sample" + missing + " --aggregate --bootstrap-draws 100",
            "--bootstrap-draws = 100 is too few"},
           {"test two-sample" + missing + " --aggregate --kernels gauss",
            "--kernels: unknown kernel collection"},
           {"test independence" + missing + " --aggregate --hsic-lower 1 --hsic-upper 1", "--hsic-lower = 1"},
           {"test two-sample" + files + " --kernels all", "--aggregate"}}) {
    const auto r = test::kef_cmd(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(test::contains(r.output, part)) << args << "\n" << r.output;
  }
}

// `kef eval MODEL --data X --type ksdagg`: the evaluator of plugins/kernel_tests runs KSDAgg from the
// saved model's score; it rejects a shifted sample and not one from the model, and too few draws for
// the level exit 2 naming the key.
TEST(AggregatedTests, KsdAggEvaluatorTestsASavedModel) {
  const auto dir = test::temp_dir("ksdagg");
  RandomStream rng(41, "ksdagg-eval");
  write_npy(dir / "train.npy", rng.normal_matrix(400, 2));
  write_npy(dir / "held.npy", rng.normal_matrix(200, 2));
  write_npy(dir / "shifted.npy", Matrix((rng.normal_matrix(200, 2).array() + 1.0).matrix()));
  const std::string model = (dir / "g").string();
  const auto fit =
      test::kef_cmd("fit " + (dir / "train.npy").string() + " --model gaussian_fit --quiet --out " + model);
  ASSERT_EQ(fit.status, 0) << fit.output;
  const std::string eval =
      "eval " + model + " --type ksdagg --quiet --set bootstrap_draws=500 --set level_draws=500 --data ";
  const auto held = test::kef_cmd(eval + (dir / "held.npy").string());
  ASSERT_EQ(held.status, 0) << held.output;
  EXPECT_TRUE(test::contains(held.output, "ksdagg_reject = 0")) << held.output;
  const auto shifted = test::kef_cmd(eval + (dir / "shifted.npy").string());
  ASSERT_EQ(shifted.status, 0) << shifted.output;
  EXPECT_TRUE(test::contains(shifted.output, "ksdagg_reject = 1")) << shifted.output;
  const auto few = test::kef_cmd("eval " + model + " --type ksdagg --set bootstrap_draws=100 --data " +
                                 (dir / "held.npy").string());
  EXPECT_EQ(few.status, 2) << few.output;
  EXPECT_TRUE(test::contains(few.output, "bootstrap_draws: ksdagg: `bootstrap_draws` = 100 is too few"))
      << few.output;
}

}  // namespace
}  // namespace kef
