#include "lscde_estimator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <string>

#include "kef/cross_validation.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/number_text.hpp"
#include "lscde_model.hpp"

namespace kef::lscde {

namespace {

constexpr std::int64_t kDefaultBasis = 100;  // Sugiyama et al.'s code: b = min(100, n)

// exp(−‖a_i − c_l‖²/(2σ²)) for every row i of A and centre l of C.
Matrix gaussian_factors(const Matrix& A, const Matrix& C, double sigma) {
  const double c = 0.5 / (sigma * sigma);
  Matrix out(A.rows(), C.rows());
  for (Index i = 0; i < A.rows(); ++i)
    for (Index l = 0; l < C.rows(); ++l) out(i, l) = std::exp(-c * (A.row(i) - C.row(l)).squaredNorm());
  return out;
}

}  // namespace

const OptionsSpec<LscdeKeys>& lscde_options() {
  using O = LscdeKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.integer("basis", &O::basis,
              "b, the number of basis functions, centred at b training pairs drawn without replacement; "
              "absent: min(100, training rows), as Sugiyama et al.'s code. A given b larger than the "
              "training split is an error")
        .optional()
        .at_least(1);
    s.number("sigma", &O::sigma,
             "σ, the basis width in x and y; absent: chosen by cross-validation over `sigma_grid`")
        .optional()
        .positive();
    s.number("lambda", &O::lambda,
             "λ, the ridge penalty; absent: chosen by cross-validation over `lambda_grid`")
        .optional()
        .positive();
    s.numbers("sigma_grid", &O::sigma_grid,
              "candidate σ when `sigma` is absent (default 10^(−1.5 ... 1.5), 9 values)",
              log_grid(-1.5, 1.5, 9))
        .positive();
    s.numbers("lambda_grid", &O::lambda_grid,
              "candidate λ when `lambda` is absent (default 10^(−3 ... 1), 9 values)", log_grid(-3.0, 1.0, 9))
        .positive();
    s.integer("folds", &O::folds, "K of the K-fold cross-validation", 5).at_least(2);
    return s;
  }();
  return spec;
}

LscdeDesign lscde_design(const Matrix& X, const Matrix& Y, const Matrix& U, const Matrix& V, double sigma) {
  const Index n = X.rows(), b = U.rows();
  const double dy = static_cast<double>(Y.cols());
  const Matrix Phi = gaussian_factors(X, U, sigma), Psi = gaussian_factors(Y, V, sigma);
  // ∫ exp(−‖y − v‖²/(2σ²)) exp(−‖y − v'‖²/(2σ²)) dy = (πσ²)^(d_y/2) exp(−‖v − v'‖²/(4σ²)).
  const Matrix overlap =
      gaussian_factors(V, V, std::sqrt(2.0) * sigma) * std::pow(std::numbers::pi * sigma * sigma, 0.5 * dy);
  LscdeDesign d;
  d.H = (Phi.transpose() * Phi / static_cast<double>(n)).cwiseProduct(overlap);
  d.h = Phi.cwiseProduct(Psi).colwise().sum().transpose() / static_cast<double>(n);
  (void)b;
  return d;
}

Vector lscde_coefficients(const LscdeDesign& design, double lambda) {
  const Index b = design.h.size();
  const SpdFactor factor(design.H + lambda * Matrix::Identity(b, b), "lscde: Ĥ + λI");
  return factor.solve(design.h).cwiseMax(0.0);
}

double lscde_criterion(const LscdeDesign& held_out, const Vector& alpha) {
  return 0.5 * alpha.dot(held_out.H * alpha) - held_out.h.dot(alpha);
}

// The grids' values are checked by their key declarations (.positive(): non-empty, every element > 0).
LscdeEstimator::LscdeEstimator(const Config& cfg) : opt_(lscde_options().read(cfg)), sites_(cfg) {}

std::optional<FacetSet> LscdeEstimator::facets() const {
  return FacetSet{Facet::ConditionalDensity, Facet::ConditionalScore, Facet::ConditionalSampler};
}

void LscdeEstimator::check(const DataShape& data) const {
  if (data.train_rows == 0) sites_.fail("", "lscde: the training split is empty");
  if (opt_.basis && *opt_.basis > data.train_rows)
    sites_.fail("basis",
                "b = " + std::to_string(*opt_.basis) + " basis functions, but the training split has " +
                    std::to_string(data.train_rows) +
                    " pairs (expected b <= training rows); lower `basis` or leave it out for min(100, n)");
  // The basis' b x b system and the design of every training pair against it (rows x b), before any is
  // formed.
  const double b = static_cast<double>(opt_.basis ? *opt_.basis : std::min<Index>(100, data.train_rows));
  require_memory(8.0 * (3.0 * b * b + 2.0 * static_cast<double>(data.train_rows) * b), sites_.where("basis"),
                 "the basis' system and design (basis)");
  const bool searching = !opt_.sigma || !opt_.lambda;
  if (searching && opt_.folds > data.train_rows)
    sites_.fail("folds", std::to_string(opt_.folds) + "-fold cross-validation of " +
                             std::to_string(data.train_rows) +
                             " training pairs (expected folds <= training rows)");
}

ModelPtr LscdeEstimator::fit(const FitInput& in) {
  if (!in.roles.conditional())
    sites_.fail(
        "",
        "lscde fits a conditional density p(y | x) and the data have no target columns; set [data] targets");
  check(DataShape{in.train.cols(), in.train.rows(), in.validation.rows(), 0, false,
                  static_cast<Index>(in.roles.targets.size())});
  const Matrix X = in.roles.inputs_of(in.train), Y = in.roles.targets_of(in.train);
  const Index n = X.rows();
  const Index b = opt_.basis ? static_cast<Index>(*opt_.basis) : std::min<Index>(kDefaultBasis, n);
  RandomStream centre_rng = in.context.rng().derive("centres");
  const std::vector<Index> centres = sample_without_replacement(n, b, centre_rng);
  const Matrix U = gather_rows(X, centres), V = gather_rows(Y, centres);

  const std::vector<double> sigmas = opt_.sigma ? std::vector<double>{*opt_.sigma} : opt_.sigma_grid;
  const std::vector<double> lambdas = opt_.lambda ? std::vector<double>{*opt_.lambda} : opt_.lambda_grid;
  double sigma = sigmas.front(), lambda = lambdas.front();
  if (sigmas.size() > 1 || lambdas.size() > 1) {
    RandomStream fold_rng = in.context.rng().derive("folds");
    const Index K = static_cast<Index>(opt_.folds);
    const std::vector<Index> folds = random_folds(n, K, fold_rng);
    in.context.progress().update("lscde", 0.0,
                                 std::to_string(K) + "-fold cross-validation of " +
                                     std::to_string(sigmas.size()) + " σ x " +
                                     std::to_string(lambdas.size()) + " λ");
    double best = std::numeric_limits<double>::infinity();
    std::size_t best_s = 0, best_l = 0;
    for (std::size_t s = 0; s < sigmas.size(); ++s) {
      std::vector<LscdeDesign> train_designs, test_designs;
      for (Index k = 0; k < K; ++k) {
        const std::vector<Index> tr = rows_outside_fold(folds, k), te = rows_in_fold(folds, k);
        train_designs.push_back(lscde_design(gather_rows(X, tr), gather_rows(Y, tr), U, V, sigmas[s]));
        test_designs.push_back(lscde_design(gather_rows(X, te), gather_rows(Y, te), U, V, sigmas[s]));
      }
      for (std::size_t l = 0; l < lambdas.size(); ++l) {
        double total = 0.0;  // fold order
        for (Index k = 0; k < K; ++k) {
          const auto kk = static_cast<std::size_t>(k);
          total += lscde_criterion(test_designs[kk], lscde_coefficients(train_designs[kk], lambdas[l]));
        }
        const double score = total / static_cast<double>(K);
        if (std::isnan(score))
          throw NumericalError("lscde: the cross-validation criterion is NaN for σ = " +
                               number_text(sigmas[s]) + ", λ = " + number_text(lambdas[l]));
        if (score < best) {  // ties: the first in grid order
          best = score;
          best_s = s;
          best_l = l;
        }
      }
    }
    sigma = sigmas[best_s];
    lambda = lambdas[best_l];
    in.report.values["cv_criterion"] = best;
    for (auto [grid, index, key] :
         {std::tuple{&sigmas, best_s, "sigma_grid"}, std::tuple{&lambdas, best_l, "lambda_grid"}})
      if (grid->size() > 1 && (index == 0 || index + 1 == grid->size()))
        in.report.notes.push_back(std::string("the chosen value ") + number_text((*grid)[index]) +
                                  " is at the " + (index == 0 ? "lower" : "upper") + " end of `" + key +
                                  "`; extend the grid");
    in.context.progress().done("lscde", "σ = " + number_text(sigma) + ", λ = " + number_text(lambda));
  }
  const Vector alpha = lscde_coefficients(lscde_design(X, Y, U, V, sigma), lambda);
  Index positive = 0;
  for (Index l = 0; l < alpha.size(); ++l) positive += alpha[l] > 0 ? 1 : 0;
  in.report.iterations = 1;
  in.report.values["sigma"] = sigma;
  in.report.values["lambda"] = lambda;
  in.report.values["basis"] = static_cast<double>(b);
  in.report.values["positive_coefficients"] = static_cast<double>(positive);
  in.report.notes.push_back("σ = " + number_text(sigma) + ", λ = " + number_text(lambda) + ", " +
                            std::to_string(positive) + " of " + std::to_string(b) + " coefficients > 0");
  return std::make_shared<LscdeModel>(U, V, alpha, sigma);
}

}  // namespace kef::lscde
