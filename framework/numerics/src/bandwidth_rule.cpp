#include "kef/bandwidth_rule.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "kef/error.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef {
namespace {

double median_sigma(const Matrix& rows, std::string_view where) {
  const double sigma = median_pairwise_distance(rows, rows.rows());
  if (!(sigma > 0) || !std::isfinite(sigma))
    throw NumericalError(std::string(where) + ": median-heuristic bandwidth is " + number_text(sigma, 4) +
                         " (the sample has repeated points); give a bandwidth");
  return sigma;
}

ChosenBandwidth bkl_sigma(const Matrix& rows, std::string_view where, const Context& context) {
  BklOptions options;
  options.landmarks = bkl_landmarks(rows.rows(), rows.cols());
  options.context = std::string(where);
  const BklResult r = bkl_bandwidth(rows, options, context);
  return {r.sigma, r.provenance};
}

}  // namespace

Index bkl_landmarks(Index n, Index dim) { return std::min<Index>(100, std::max<Index>(dim + 1, n / 10)); }

BandwidthRule parse_bandwidth_rule(std::string_view text, std::string_view where) {
  BandwidthRule rule;
  if (text == "median") return rule;
  if (text == "bkl") {
    rule.kind = BandwidthRule::Kind::Bkl;
    return rule;
  }
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v))
    throw ConfigError(std::string(where) + ": expected `median`, `bkl` or a positive number, got `" +
                      std::string(text) + "`");
  if (!(v > 0))
    throw ConfigError(std::string(where) + ": the bandwidth must be positive, got " + std::string(text));
  rule.kind = BandwidthRule::Kind::Given;
  rule.value = v;
  return rule;
}

Matrix spread_rows(const Matrix& X, Index k) {
  k = std::min(k, X.rows());
  Matrix out(k, X.cols());
  for (Index i = 0; i < k; ++i) out.row(i) = X.row(i * X.rows() / k);
  return out;
}

ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, std::string_view where,
                                 const Context& context, Index median_rows) {
  if (rule.kind == BandwidthRule::Kind::Given) return {rule.value, "given"};
  if (rule.kind == BandwidthRule::Kind::Bkl) return bkl_sigma(X, where, context);
  const Matrix rows = spread_rows(X, median_rows);
  return {median_sigma(rows, where),
          "median heuristic on " + std::to_string(rows.rows()) + " of " + std::to_string(X.rows()) + " rows"};
}

ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, const Matrix& Y,
                                 std::string_view where, const Context& context, Index median_rows_each) {
  if (X.cols() != Y.cols())
    throw DataError(std::string(where) + ": samples of dimension " + std::to_string(X.cols()) + " and " +
                    std::to_string(Y.cols()) + "; a two-sample test needs the same columns in both");
  if (rule.kind == BandwidthRule::Kind::Given) return {rule.value, "given"};
  if (rule.kind == BandwidthRule::Kind::Bkl) {
    Matrix pooled(X.rows() + Y.rows(), X.cols());
    pooled << X, Y;
    ChosenBandwidth c = bkl_sigma(pooled, where, context);
    c.how += " (on the pooled sample)";
    return c;
  }
  const Matrix Xs = spread_rows(X, median_rows_each), Ys = spread_rows(Y, median_rows_each);
  Matrix pooled(Xs.rows() + Ys.rows(), X.cols());
  pooled << Xs, Ys;
  return {median_sigma(pooled, where), "median heuristic on the pooled sample (" + std::to_string(Xs.rows()) +
                                           " + " + std::to_string(Ys.rows()) + " of " +
                                           std::to_string(X.rows()) + " + " + std::to_string(Y.rows()) +
                                           " rows)"};
}

}  // namespace kef
