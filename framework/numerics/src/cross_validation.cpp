#include "kef/cross_validation.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "kef/error.hpp"

namespace kef {

std::vector<Index> random_folds(Index n, Index K, RandomStream& rng) {
  if (K < 2 || K > n)
    throw Error("random_folds: " + std::to_string(K) + " folds of " + std::to_string(n) +
                " rows (expected 2 <= folds <= rows)");
  std::vector<Index> perm(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
  for (Index i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(rng.uniform_int(static_cast<std::uint64_t>(i) + 1));
    std::swap(perm[static_cast<std::size_t>(i)], perm[j]);
  }
  std::vector<Index> fold(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) fold[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i % K;
  return fold;
}

std::vector<Index> rows_in_fold(const std::vector<Index>& folds, Index k) {
  std::vector<Index> out;
  for (std::size_t i = 0; i < folds.size(); ++i)
    if (folds[i] == k) out.push_back(static_cast<Index>(i));
  return out;
}

std::vector<Index> rows_outside_fold(const std::vector<Index>& folds, Index k) {
  std::vector<Index> out;
  for (std::size_t i = 0; i < folds.size(); ++i)
    if (folds[i] != k) out.push_back(static_cast<Index>(i));
  return out;
}

std::vector<double> log_grid(double lo, double hi, int points) {
  if (points < 2) throw Error("log_grid: at least 2 points (got " + std::to_string(points) + ")");
  std::vector<double> g;
  for (int k = 0; k < points; ++k) g.push_back(std::pow(10.0, lo + (hi - lo) * k / (points - 1)));
  return g;
}

}  // namespace kef
