#pragma once
// What the conditional DDE tests share: data from a linear-Gaussian p(y | x) and a fit of
// dde_conditional on them.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dde_estimator.hpp"
#include "kef/context.hpp"
#include "test_support.hpp"

namespace kef::test {

struct Fitted {
  ModelPtr model;
  FitReport report;
};

// A dde_conditional fit of `train` whose target columns are `targets` (the others the inputs).
inline Fitted fit_dde_conditional(const std::string& keys, const Matrix& train, std::uint64_t seed, int threads,
                                  std::vector<Index> targets = {0}) {
  dde::DdeConditionalEstimator est(config_from(keys));
  Context context = Context(seed, threads).child("fit");
  Fitted f;
  const Matrix none(0, train.cols());
  FitInput in{train, none, context, f.report, ColumnRoles{std::move(targets)}};
  f.model = est.fit(in);
  return f;
}

// y = 0.8 x1 − 0.3 x2 + 0.5 ε as the first column, (x1, x2) ~ N(0, I) the next two.
inline Matrix linear_gaussian(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "dde-conditional-linear");
  Matrix R(n, 3);
  for (Index i = 0; i < n; ++i) {
    R(i, 1) = rng.normal();
    R(i, 2) = rng.normal();
    R(i, 0) = 0.8 * R(i, 1) - 0.3 * R(i, 2) + 0.5 * rng.normal();
  }
  return R;
}

}  // namespace kef::test
