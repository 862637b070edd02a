#include "kde_estimator.hpp"

#include <cmath>
#include <memory>

#include "gaussian_estimation.hpp"
#include "gaussian_estimators.hpp"
#include "kde_model.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"

namespace kef::baselines {

namespace {
constexpr Index kQueryChunk = 64;  // validation rows per work item of the bandwidth search

std::vector<double> default_grid() {
  std::vector<double> g;
  for (int k = -10; k <= 3; ++k) g.push_back(std::pow(2.0, k / 3.0));  // 0.0992 ... 2
  return g;
}
}  // namespace

double scott_factor(Index n, Index D) {
  return std::pow(static_cast<double>(n), -1.0 / (static_cast<double>(D) + 4.0));
}

double silverman_factor(Index n, Index D) {
  const double d = static_cast<double>(D);
  return std::pow(static_cast<double>(n) * (d + 2.0) / 4.0, -1.0 / (d + 4.0));
}

const OptionsSpec<KdeKeys>& kde_options() {
  using O = KdeKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.number("bandwidth", &O::bandwidth,
             "h, the kernel's scale: the kernel is N(0, h² Σ̂); absent: chosen by `rule`")
        .optional()
        .positive();
    s.string(
         "rule", &O::rule,
         "how h is chosen when `bandwidth` is absent: Scott's factor n^(−1/(D+4)), Silverman's "
         "(n(D+2)/4)^(−1/(D+4)), or the highest mean log-likelihood of the validation split over `grid`; "
         "absent: scott (no default is written, so that a table with `bandwidth` stays valid once resolved)")
        .optional()
        .one_of({"scott", "silverman", "validation"});
    s.numbers("grid", &O::grid, "rule = \"validation\": the candidate h, as multiples of Scott's factor",
              default_grid());
    s.number("covariance_floor", &O::covariance_floor,
             "ε: Σ̂ keeps its eigenvalues >= ε; 0: none, and a singular Σ̂ (a constant or collinear column) "
             "is an error",
             0.0)
        .non_negative();
    return s;
  }();
  return spec;
}

KdeEstimator::KdeEstimator(const Config& cfg) : opt_(kde_options().read(cfg)), sites_(cfg) {
  if (opt_.bandwidth && opt_.rule)
    sites_.fail("rule", "give either `bandwidth` (a fixed h) or `rule` (how to choose h), not both");
  rule_ = opt_.bandwidth ? "given" : opt_.rule.value_or("scott");
  if (rule_ == "validation") {
    if (opt_.grid.empty()) sites_.fail("grid", "the bandwidth grid is empty");
    for (double g : opt_.grid)
      if (!(g > 0) || !std::isfinite(g))
        sites_.fail("grid", "every multiple of Scott's factor must be positive and finite (got " +
                                number_text(g) + ")");
  }
}

std::optional<FacetSet> KdeEstimator::facets() const { return baseline_facets(); }

void KdeEstimator::check(const DataShape& data) const {
  if (data.train_rows == 0) sites_.fail("", "kde: the training split is empty");
  if (rule_ == "validation" && data.validation_rows == 0)
    sites_.fail("rule",
                "rule = \"validation\" chooses h by the validation split's log-likelihood, and that split is "
                "empty; add `validation` to [data] split, or use rule = \"scott\" or \"silverman\"");
}

ModelPtr KdeEstimator::fit(const FitInput& in) {
  const Matrix& X = in.train;
  const Index n = X.rows(), D = X.cols();
  check(DataShape{D, n, in.validation.rows(), 0});
  GaussianFitOptions fo;
  fo.floor = opt_.covariance_floor;
  Index clipped = 0;
  const MixtureParameters moments = weighted_gaussians(
      X, Matrix::Ones(n, 1), fo, sites_, "kde (the training rows' covariance)", in.context, &clipped);
  const Matrix& covariance = moments.covariances.front();
  const double scott = scott_factor(n, D);
  in.report.values["scott_bandwidth"] = scott;
  in.report.values["silverman_bandwidth"] = silverman_factor(n, D);
  in.report.values["clipped_eigenvalues"] = static_cast<double>(clipped);
  double h = 0.0;
  if (rule_ == "given") {
    h = *opt_.bandwidth;
  } else if (rule_ == "scott") {
    h = scott;
  } else if (rule_ == "silverman") {
    h = silverman_factor(n, D);
  } else {
    const KdeGeometry geometry(X, covariance);
    std::vector<double> hs;
    for (double g : opt_.grid) hs.push_back(g * scott);
    const Matrix& V = in.validation;
    const Index G = static_cast<Index>(hs.size());
    Matrix L(V.rows(), G);
    in.context.progress().update("kde", 0.0,
                                 "held-out log-likelihood of " + std::to_string(G) + " bandwidths on " +
                                     std::to_string(V.rows()) + " validation rows");
    parallel_for_chunks(V.rows(), kQueryChunk, in.context.threads(), [&](Index begin, Index len) {
      L.middleRows(begin, len) = geometry.log_density_grid(V.middleRows(begin, len), hs);
    });
    Index best = -1;
    double best_ll = 0.0;
    for (Index g = 0; g < G; ++g) {
      double total = 0.0;  // row order
      for (Index i = 0; i < V.rows(); ++i) total += L(i, g);
      const double mean = total / static_cast<double>(V.rows());
      in.report.values["grid" + std::to_string(g) + ".bandwidth"] = hs[static_cast<std::size_t>(g)];
      in.report.values["grid" + std::to_string(g) + ".validation_log_likelihood"] = mean;
      if (std::isnan(mean))
        throw NumericalError("kde: the validation log-likelihood is NaN for h = " +
                             number_text(hs[static_cast<std::size_t>(g)]));
      if (best < 0 || mean > best_ll) {  // ties: the smaller h (grid order)
        best = g;
        best_ll = mean;
      }
    }
    if (!std::isfinite(best_ll))
      throw NumericalError(
          "kde: every bandwidth of the grid gives a validation row density 0 (log-likelihood −inf); "
          "widen `grid`");
    h = hs[static_cast<std::size_t>(best)];
    in.report.values["validation_log_likelihood"] = best_ll;
    if (G > 1 && (best == 0 || best == G - 1))
      in.report.notes.push_back("the chosen bandwidth " + number_text(h) + " is at the " +
                                (best == 0 ? "lower" : "upper") + " end of `grid`; extend the grid");
    in.context.progress().done("kde", "h = " + number_text(h));
  }
  in.report.iterations = 1;
  in.report.values["bandwidth"] = h;
  in.report.notes.push_back("bandwidth h = " + number_text(h) + " (" + rule_ + ")");
  return std::make_shared<KdeModel>(X, covariance, h, rule_);
}

}  // namespace kef::baselines
