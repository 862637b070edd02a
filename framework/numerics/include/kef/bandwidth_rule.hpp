#pragma once
// How a kernel test chooses its Gaussian bandwidth σ: the median heuristic, Bayesian kernel learning
// (kef/kernel_learning.hpp) or a given value. One type for the evaluators and `kef test`.
#include <string>
#include <string_view>

#include "kef/context.hpp"
#include "kef/types.hpp"

namespace kef {

struct BandwidthRule {
  enum class Kind { Median, Bkl, Given };
  Kind kind = Kind::Median;
  double value = 0;  // σ for Kind::Given (> 0)
};

// "median", "bkl", or a positive number. ConfigError naming `where` (the option or key) otherwise.
BandwidthRule parse_bandwidth_rule(std::string_view text, std::string_view where);

struct ChosenBandwidth {
  double sigma = 0;
  std::string how;  // provenance for reports: "median heuristic on 1000 of 4000 rows", "given"
};

// σ by `rule` for the rows of X. The median heuristic uses at most median_rows rows spread evenly over
// X (see spread_rows) and refuses a zero or non-finite median (repeated points) with a NumericalError
// naming `where`. BKL uses every row, min(100, max(D + 1, n / 10)) of them drawn as landmarks from
// `context`'s random stream, τ² = 1 and the posterior mode (bkl_landmarks gives the count); its
// errors name `where`.
ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, std::string_view where,
                                 const Context& context, Index median_rows = 1000);

// σ for two samples, pooled: the median heuristic on up to median_rows_each rows of each (spread
// evenly), the rule the mmd evaluator has used since 0.2; BKL on all rows of both.
ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, const Matrix& Y,
                                 std::string_view where, const Context& context,
                                 Index median_rows_each = 500);

// The number of landmarks BKL draws for a sample of n rows in D dimensions.
Index bkl_landmarks(Index n, Index dim);

// k rows spread evenly over X (row i·rows/k): a deterministic subsample that, unlike a prefix, is
// not just the first (autocorrelated) draws of a chain.
Matrix spread_rows(const Matrix& X, Index k);

}  // namespace kef
