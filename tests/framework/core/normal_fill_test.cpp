// fill_normal (ziggurat) against the exact normal law and against RandomStream::normal(), its
// brute-force twin (the polar method). Kolmogorov–Smirnov thresholds are the asymptotic 0.001
// quantiles: one sample of n, D > 1.949/√n; two samples of n each, D > 1.949·√(2/n). Fixed seeds, so
// the test is deterministic; a correct sampler fails one check with probability 0.001.
#include "kef/normal_fill.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kef/error.hpp"
#include "kef/random.hpp"

namespace kef {
namespace {

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// sup |F_n − F| for a sorted sample.
template <class Cdf>
double ks_one_sample(const std::vector<double>& sorted, Cdf&& cdf) {
  const double n = static_cast<double>(sorted.size());
  double d = 0.0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const double F = cdf(sorted[i]);
    d = std::max({d, (static_cast<double>(i) + 1.0) / n - F, F - static_cast<double>(i) / n});
  }
  return d;
}

std::vector<double> draws(RandomStream rng, Index n) {
  std::vector<double> x(static_cast<std::size_t>(n));
  fill_normal(rng, x.data(), n);
  return x;
}

TEST(NormalFill, FollowsTheNormalLaw) {
  constexpr Index n = 1000000;
  std::vector<double> x = draws(RandomStream(3, "zig"), n);
  // Moments at 5 standard errors: mean (1/√n), variance (√(2/n)), kurtosis 3 (√(24/n)).
  double m = 0, v = 0, m4 = 0;
  for (double t : x) m += t;
  m /= double(n);
  for (double t : x) {
    v += (t - m) * (t - m);
    m4 += std::pow(t - m, 4);
  }
  v /= double(n);
  m4 /= double(n);
  EXPECT_LT(std::abs(m), 5.0 / std::sqrt(double(n)));
  EXPECT_LT(std::abs(v - 1.0), 5.0 * std::sqrt(2.0 / double(n)));
  EXPECT_LT(std::abs(m4 / (v * v) - 3.0), 5.0 * std::sqrt(24.0 / double(n)));
  std::sort(x.begin(), x.end());
  EXPECT_LT(ks_one_sample(x, normal_cdf), 1.949 / std::sqrt(double(n)));
}

// The tail beyond r = 3.654 (~0.026% of draws) comes from a separate rejection sampler: its draws
// must follow the conditional law P(|Z| ≤ t | |Z| > r), and their share must be 2(1 − Φ(r)) within 5
// binomial standard errors.
TEST(NormalFill, TailFollowsTheConditionalLaw) {
  constexpr Index n = 4000000;
  const double r = 3.6541528853610088;
  const std::vector<double> x = draws(RandomStream(5, "zig-tail"), n);
  std::vector<double> tail;
  for (double t : x)
    if (std::abs(t) > r) tail.push_back(std::abs(t));
  const double p = std::erfc(r / std::sqrt(2.0));
  EXPECT_LT(std::abs(double(tail.size()) - p * double(n)), 5.0 * std::sqrt(double(n) * p * (1.0 - p)));
  std::sort(tail.begin(), tail.end());
  const double upper_r = std::erfc(r / std::sqrt(2.0));
  EXPECT_LT(ks_one_sample(tail, [&](double t) { return 1.0 - std::erfc(t / std::sqrt(2.0)) / upper_r; }),
            1.949 / std::sqrt(double(tail.size())));
}

TEST(NormalFill, MatchesThePolarMethodInLaw) {
  constexpr Index n = 200000;
  std::vector<double> a = draws(RandomStream(7, "zig"), n), b(static_cast<std::size_t>(n));
  RandomStream polar(7, "polar");
  for (auto& t : b) t = polar.normal();
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  double d = 0.0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] <= b[j])
      ++i;
    else
      ++j;
    d = std::max(d, std::abs(double(i) - double(j)) / double(n));
  }
  EXPECT_LT(d, 1.949 * std::sqrt(2.0 / double(n)));
}

TEST(NormalFill, IsDeterministicAndContinuesTheStream) {
  RandomStream one(11, "zig-det"), two(11, "zig-det");
  std::vector<double> a(1000), b(1000);
  fill_normal(one, a.data(), 1000);
  fill_normal(two, b.data(), 400);  // two calls draw the same sequence as one
  fill_normal(two, b.data() + 400, 600);
  EXPECT_EQ(a, b);
  EXPECT_EQ(one(), two());
  fill_normal(one, nullptr, 0);
  EXPECT_THROW(fill_normal(one, a.data(), -1), Error);
}

// normal_rows is fill_normal laid out row by row: row i holds draws i·cols .. i·cols + cols − 1, so a
// smaller draw from the same stream is the first rows of a larger one.
TEST(NormalFill, NormalRowsFillsRowByRowAndSmallerDrawsArePrefixes) {
  RandomStream a(9, "rows"), b(9, "rows"), c(9, "rows");
  const Matrix big = normal_rows(a, 7, 5);
  std::vector<double> flat(35);
  fill_normal(b, flat.data(), 35);
  for (Index i = 0; i < 7; ++i)
    for (Index j = 0; j < 5; ++j) EXPECT_EQ(big(i, j), flat[static_cast<std::size_t>(i * 5 + j)]);
  const Matrix small = normal_rows(c, 3, 5);
  EXPECT_EQ(small, big.topRows(3));
  EXPECT_EQ(normal_rows(c, 0, 5).rows(), 0);
  EXPECT_THROW(normal_rows(c, -1, 5), Error);
}

}  // namespace
}  // namespace kef
