#pragma once
// How a kernel test chooses its Gaussian bandwidth σ: the median heuristic, Bayesian kernel learning
// (kef/kernel_learning.hpp) or a given value; for two-sample tests also the multi-scale extension, a
// Gaussian mixture kernel whose length scales and weights BKL learns (kef/bkl_mixture.hpp). One type
// for the evaluators and `kef test`.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kef/context.hpp"
#include "kef/options.hpp"
#include "kef/types.hpp"

namespace kef {

struct BandwidthRule {
  enum class Kind { Median, Bkl, Given, BklMultiscale };
  Kind kind = Kind::Median;
  double value = 0;            // σ for Kind::Given (> 0)
  std::vector<double> scales{};  // Kind::BklMultiscale: the R starting length scales (> 0, R >= 2)
};

// "median", "bkl", or a positive number, and "bkl_multiscale" when `multiscale` (two-sample tests; the
// scales are set by the caller). ConfigError naming `where` (the option or key) otherwise.
BandwidthRule parse_bandwidth_rule(std::string_view text, std::string_view where, bool multiscale = false);

// "bkl_multiscale" with its starting scales: ConfigError naming `where` unless there are at least 2,
// all positive and finite, and distinct.
BandwidthRule multiscale_rule(const std::vector<double>& scales, std::string_view where);

// The rule of an evaluator's bandwidth keys (mmd, mmd_two_sample, hsic_independence): `given_key` (σ
// given, validated positive by its KeySpec) or `bandwidth_rule` (default "median"), not both; the
// conflict is reported at `bandwidth_rule` through `sites`.
BandwidthRule bandwidth_rule_from_keys(const std::optional<double>& given,
                                       const std::optional<std::string>& rule, const KeySites& sites,
                                       const std::string& given_key = "bandwidth");
// The same for a two-sample evaluator that also takes `bandwidth_rule = "bkl_multiscale"` with its
// starting scales in `bandwidth_scales` (required with that rule, refused with any other).
BandwidthRule bandwidth_rule_from_keys(const std::optional<double>& given,
                                       const std::optional<std::string>& rule,
                                       const std::optional<std::vector<double>>& scales,
                                       const KeySites& sites);

struct ChosenBandwidth {
  double sigma = 0;
  std::string how;  // provenance for reports: "median heuristic on 1000 of 4000 rows", "given"
  // Kind::BklMultiscale: the Gaussian mixture Σ_r ρ_r exp(−‖x − y‖²/(2σ_r²)) chosen, its length scales
  // and weights; `sigma` is then the largest-weight component's σ_r (for one-number reports).
  std::vector<double> sigmas, weights;
  bool mixture() const { return !weights.empty(); }
};

// The kernel table (TOML text) of the chosen kernel for Registry::make_kernel: kernel/gaussian with
// `sigma`, or kernel/gaussian_mixture with `sigma` and `weights` for a multi-scale choice.
std::string kernel_table(const ChosenBandwidth& chosen);

// σ by `rule` for the rows of X. The median heuristic uses at most median_rows rows spread evenly over
// X (see spread_rows) and refuses a zero or non-finite median (repeated points) with a NumericalError
// naming `where`. BKL uses every row, min(100, max(D + 1, n / 10)) of them drawn as landmarks from
// `context`'s random stream, τ² = 1 and the posterior mode (bkl_landmarks gives the count); its
// errors name `where`.
ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, std::string_view where,
                                 const Context& context, Index median_rows = 1000);

// σ for two samples, pooled: the median heuristic on up to median_rows_each rows of each (spread
// evenly), the rule the mmd evaluator has used since 0.2; BKL on all rows of both. BklMultiscale: the
// mixture's length scales and weights by bkl_mixture_kernel on all rows of both (the same landmark
// count and τ² as BKL, started from the rule's scales with equal weights); the one-sample overload
// refuses it (ConfigError naming `where`).
ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, const Matrix& Y,
                                 std::string_view where, const Context& context,
                                 Index median_rows_each = 500);

// The number of landmarks BKL draws for a sample of n rows in D dimensions.
Index bkl_landmarks(Index n, Index dim);

// k rows spread evenly over X (row i·rows/k): a deterministic subsample that, unlike a prefix, is
// not just the first (autocorrelated) draws of a chain.
Matrix spread_rows(const Matrix& X, Index k);

}  // namespace kef
