#include "kef/bandwidth_rule.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "bkl_mixture.hpp"
#include "kef/error.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef {
namespace {

ChosenBandwidth single(double sigma, std::string how) {
  ChosenBandwidth c;
  c.sigma = sigma;
  c.how = std::move(how);
  return c;
}

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
  return single(r.sigma, r.provenance);
}

ChosenBandwidth bkl_multiscale(const BandwidthRule& rule, const Matrix& rows, std::string_view where,
                               const Context& context) {
  BklMixtureOptions options;
  options.landmarks = bkl_landmarks(rows.rows(), rows.cols());
  options.sigma = rule.scales;
  options.context = std::string(where);
  // The scales are the user's; BKL learns the weights. Learning the scales too is not well posed here:
  // a wide component runs to the upper bound of its box (docs/math.md §9.6, measured).
  options.learn_sigma = false;
  const BklMixtureResult r = bkl_mixture_kernel(rows, options, context);
  ChosenBandwidth c;
  c.sigmas = r.sigma;
  c.weights = r.weights;
  c.sigma = r.sigma[static_cast<std::size_t>(std::max_element(r.weights.begin(), r.weights.end()) -
                                             r.weights.begin())];
  c.how = r.provenance;
  return c;
}

std::string list_text(const std::vector<double>& v) {
  std::string out = "[";
  char text[40];
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::snprintf(text, sizeof text, "%s%.17g", i ? ", " : "", v[i]);
    out += text;
  }
  return out + "]";
}

}  // namespace

std::string kernel_table(const ChosenBandwidth& chosen) {
  if (chosen.mixture())
    return "type = \"gaussian_mixture\"\nsigma = " + list_text(chosen.sigmas) +
           "\nweights = " + list_text(chosen.weights);
  char text[96];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", chosen.sigma);
  return text;
}

BandwidthRule multiscale_rule(const std::vector<double>& scales, std::string_view where) {
  if (scales.size() < 2)
    throw ConfigError(std::string(where) + ": bkl_multiscale needs at least 2 starting length scales, got " +
                      std::to_string(scales.size()));
  for (std::size_t r = 0; r < scales.size(); ++r) {
    if (!(scales[r] > 0.0) || !std::isfinite(scales[r]))
      throw ConfigError(std::string(where) + ": length scale " + number_text(scales[r]) +
                        " (expected positive numbers)");
    for (std::size_t q = 0; q < r; ++q)
      if (scales[q] == scales[r])
        throw ConfigError(
            std::string(where) + ": the length scale " + number_text(scales[r]) +
            " is given twice (two equal components are one, and their weights are not identified)");
  }
  BandwidthRule rule;
  rule.kind = BandwidthRule::Kind::BklMultiscale;
  rule.scales = scales;
  return rule;
}

Index bkl_landmarks(Index n, Index dim) { return std::min<Index>(100, std::max<Index>(dim + 1, n / 10)); }

BandwidthRule parse_bandwidth_rule(std::string_view text, std::string_view where, bool multiscale) {
  BandwidthRule rule;
  if (text == "median") return rule;
  if (text == "bkl") {
    rule.kind = BandwidthRule::Kind::Bkl;
    return rule;
  }
  if (text == "bkl_multiscale") {
    if (!multiscale)
      throw ConfigError(
          std::string(where) +
          ": `bkl_multiscale` (a Gaussian mixture kernel learned by BKL) is for two-sample tests; "
          "expected `median`, `bkl` or a positive number");
    rule.kind = BandwidthRule::Kind::BklMultiscale;
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

BandwidthRule bandwidth_rule_from_keys(const std::optional<double>& given,
                                       const std::optional<std::string>& rule, const KeySites& sites,
                                       const std::string& given_key) {
  if (given && rule)
    sites.fail("bandwidth_rule", "give either `" + given_key + "` (a fixed σ) or `bandwidth_rule`, not both");
  if (given) return BandwidthRule{BandwidthRule::Kind::Given, *given, {}};
  return parse_bandwidth_rule(rule.value_or("median"), sites.where("bandwidth_rule"));
}

BandwidthRule bandwidth_rule_from_keys(const std::optional<double>& given,
                                       const std::optional<std::string>& rule,
                                       const std::optional<std::vector<double>>& scales,
                                       const KeySites& sites) {
  const bool multiscale = rule && *rule == "bkl_multiscale";
  if (scales && !multiscale)
    sites.fail("bandwidth_scales", "applies to bandwidth_rule = \"bkl_multiscale\" only");
  if (!multiscale) return bandwidth_rule_from_keys(given, rule, sites, "bandwidth");
  if (given)
    sites.fail("bandwidth_rule", "give either `bandwidth` (a fixed σ) or `bandwidth_rule`, not both");
  if (!scales)
    sites.fail("bandwidth_scales",
               "bandwidth_rule = \"bkl_multiscale\" needs the mixture's starting length scales, e.g. "
               "bandwidth_scales = [0.5, 2.0, 8.0]");
  return multiscale_rule(*scales, sites.where("bandwidth_scales"));
}

Matrix spread_rows(const Matrix& X, Index k) {
  k = std::min(k, X.rows());
  Matrix out(k, X.cols());
  for (Index i = 0; i < k; ++i) out.row(i) = X.row(i * X.rows() / k);
  return out;
}

ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, std::string_view where,
                                 const Context& context, Index median_rows) {
  if (rule.kind == BandwidthRule::Kind::BklMultiscale)
    throw ConfigError(std::string(where) +
                      ": `bkl_multiscale` chooses a two-sample test's kernel, not one σ here");
  if (rule.kind == BandwidthRule::Kind::Given) return single(rule.value, "given");
  if (rule.kind == BandwidthRule::Kind::Bkl) return bkl_sigma(X, where, context);
  const Matrix rows = spread_rows(X, median_rows);
  return single(median_sigma(rows, where), "median heuristic on " + std::to_string(rows.rows()) + " of " +
                                               std::to_string(X.rows()) + " rows");
}

ChosenBandwidth choose_bandwidth(const BandwidthRule& rule, const Matrix& X, const Matrix& Y,
                                 std::string_view where, const Context& context, Index median_rows_each) {
  if (X.cols() != Y.cols())
    throw DataError(std::string(where) + ": samples of dimension " + std::to_string(X.cols()) + " and " +
                    std::to_string(Y.cols()) + "; a two-sample test needs the same columns in both");
  if (rule.kind == BandwidthRule::Kind::Given) return single(rule.value, "given");
  if (rule.kind == BandwidthRule::Kind::Bkl || rule.kind == BandwidthRule::Kind::BklMultiscale) {
    Matrix pooled(X.rows() + Y.rows(), X.cols());
    pooled << X, Y;
    ChosenBandwidth c = rule.kind == BandwidthRule::Kind::Bkl ? bkl_sigma(pooled, where, context)
                                                              : bkl_multiscale(rule, pooled, where, context);
    c.how += " (on the pooled sample)";
    return c;
  }
  const Matrix Xs = spread_rows(X, median_rows_each), Ys = spread_rows(Y, median_rows_each);
  Matrix pooled(Xs.rows() + Ys.rows(), X.cols());
  pooled << Xs, Ys;
  return single(median_sigma(pooled, where),
                "median heuristic on the pooled sample (" + std::to_string(Xs.rows()) + " + " +
                    std::to_string(Ys.rows()) + " of " + std::to_string(X.rows()) + " + " +
                    std::to_string(Y.rows()) + " rows)");
}

}  // namespace kef
