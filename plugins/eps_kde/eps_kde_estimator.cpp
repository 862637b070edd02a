#include "eps_kde_estimator.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "eps_kde_model.hpp"
#include "kef/cross_validation.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef::eps_kde {

namespace {}  // namespace

const OptionsSpec<EpsKdeKeys>& eps_kde_options() {
  using O = EpsKdeKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.number(
         "epsilon", &O::epsilon,
         "ε, the radius of the neighbourhood of x (Euclidean, in the model's coordinates); absent: chosen by "
         "cross-validation over `epsilon_grid`")
        .optional()
        .positive();
    s.number("bandwidth", &O::bandwidth,
             "σ, the Gaussian kernel's width in y; absent: chosen by cross-validation over `bandwidth_grid`")
        .optional()
        .positive();
    s.numbers(
         "epsilon_grid", &O::epsilon_grid,
         "candidate ε when `epsilon` is absent, as multiples of the median distance between training inputs",
         std::vector<double>{0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5})
        .positive();
    s.numbers("bandwidth_grid", &O::bandwidth_grid,
              "candidate σ when `bandwidth` is absent (default 10^(−1.5 ... 1.5), 9 values)",
              log_grid(-1.5, 1.5, 9))
        .positive();
    s.integer("folds", &O::folds, "K of the K-fold cross-validation", 5).at_least(2);
    return s;
  }();
  return spec;
}

// The grids' values are checked by their key declarations (.positive(): non-empty, every element > 0).
EpsKdeEstimator::EpsKdeEstimator(const Config& cfg) : opt_(eps_kde_options().read(cfg)), sites_(cfg) {}

std::optional<FacetSet> EpsKdeEstimator::facets() const {
  return FacetSet{Facet::ConditionalDensity, Facet::ConditionalScore, Facet::ConditionalSampler};
}

void EpsKdeEstimator::check(const DataShape& data) const {
  if (data.train_rows == 0) sites_.fail("", "eps_kde: the training split is empty");
  const bool searching = !opt_.epsilon || !opt_.bandwidth;
  if (searching && opt_.folds > data.train_rows)
    sites_.fail("folds", std::to_string(opt_.folds) + "-fold cross-validation of " +
                             std::to_string(data.train_rows) +
                             " training pairs (expected folds <= training rows)");
}

ModelPtr EpsKdeEstimator::fit(const FitInput& in) {
  if (!in.roles.conditional())
    sites_.fail("",
                "eps_kde fits a conditional density p(y | x) and the data have no target columns; set [data] "
                "targets");
  check(DataShape{in.train.cols(), in.train.rows(), in.validation.rows(), 0, false,
                  static_cast<Index>(in.roles.targets.size())});
  const Matrix X = in.roles.inputs_of(in.train), Y = in.roles.targets_of(in.train);
  const Index n = X.rows();
  std::vector<double> epsilons;
  if (opt_.epsilon) {
    epsilons = {*opt_.epsilon};
  } else {
    const double median = median_pairwise_distance(X);
    if (!(median > 0))
      sites_.fail("epsilon_grid", "the training inputs are all equal (median distance 0); give `epsilon`");
    in.report.values["median_input_distance"] = median;
    for (double g : opt_.epsilon_grid) epsilons.push_back(g * median);
  }
  const std::vector<double> sigmas =
      opt_.bandwidth ? std::vector<double>{*opt_.bandwidth} : opt_.bandwidth_grid;
  double epsilon = epsilons.front(), sigma = sigmas.front();
  if (epsilons.size() > 1 || sigmas.size() > 1) {
    RandomStream fold_rng = in.context.rng().derive("folds");
    const Index K = static_cast<Index>(opt_.folds);
    const std::vector<Index> folds = random_folds(n, K, fold_rng);
    Matrix total = Matrix::Zero(static_cast<Index>(epsilons.size()), static_cast<Index>(sigmas.size()));
    Matrix lonely = Matrix::Zero(static_cast<Index>(epsilons.size()), 1);
    for (Index k = 0; k < K; ++k) {  // fold order
      const std::vector<Index> tr = rows_outside_fold(folds, k), te = rows_in_fold(folds, k);
      const Matrix Xtr = gather_rows(X, tr), Ytr = gather_rows(Y, tr), Xte = gather_rows(X, te),
                   Yte = gather_rows(Y, te);
      for (std::size_t e = 0; e < epsilons.size(); ++e) {
        const auto hoods = neighbourhoods(Xtr, Xte, epsilons[e]);
        for (const auto& h : hoods) lonely(static_cast<Index>(e), 0) += h.empty() ? 1.0 : 0.0;
        for (std::size_t s = 0; s < sigmas.size(); ++s)
          total(static_cast<Index>(e), static_cast<Index>(s)) +=
              eps_kde_log_density(Ytr, hoods, Yte, sigmas[s]).sum();
      }
    }
    Index best_e = 0, best_s = 0;
    for (Index e = 0; e < total.rows(); ++e)
      for (Index s = 0; s < total.cols(); ++s) {
        if (std::isnan(total(e, s)))
          throw NumericalError("eps_kde: the cross-validated log-likelihood is NaN for ε = " +
                               number_text(epsilons[static_cast<std::size_t>(e)]) +
                               ", σ = " + number_text(sigmas[static_cast<std::size_t>(s)]));
        if (total(e, s) > total(best_e, best_s)) {  // ties: the first in grid order
          best_e = e;
          best_s = s;
        }
      }
    epsilon = epsilons[static_cast<std::size_t>(best_e)];
    sigma = sigmas[static_cast<std::size_t>(best_s)];
    in.report.values["cv_log_likelihood"] = total(best_e, best_s) / static_cast<double>(n);
    in.report.values["cv_rows_without_neighbour"] = lonely(best_e, 0);
    for (auto [size, index, key] :
         {std::tuple{epsilons.size(), static_cast<std::size_t>(best_e), "epsilon_grid"},
          std::tuple{sigmas.size(), static_cast<std::size_t>(best_s), "bandwidth_grid"}})
      if (size > 1 && (index == 0 || index + 1 == size))
        in.report.notes.push_back(std::string("the chosen value is at the ") +
                                  (index == 0 ? "lower" : "upper") + " end of `" + key +
                                  "`; extend the grid");
  }
  in.report.iterations = 1;
  in.report.values["epsilon"] = epsilon;
  in.report.values["bandwidth"] = sigma;
  const auto own = neighbourhoods(X, X, epsilon);
  double mean_size = 0.0;
  for (const auto& h : own) mean_size += static_cast<double>(h.size());
  in.report.values["mean_neighbours"] = mean_size / static_cast<double>(n);
  in.report.notes.push_back("ε = " + number_text(epsilon) + ", σ = " + number_text(sigma) + ", " +
                            number_text(mean_size / static_cast<double>(n)) +
                            " training neighbours per training input on average");
  return std::make_shared<EpsKdeModel>(X, Y, epsilon, sigma);
}

}  // namespace kef::eps_kde
