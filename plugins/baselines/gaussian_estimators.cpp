#include "gaussian_estimators.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>

#include "gaussian_estimation.hpp"
#include "gaussian_mixture_model.hpp"
#include "kef/error.hpp"
#include "kef/memory_budget.hpp"
#include "kef/number_text.hpp"

namespace kef::baselines {

FacetSet baseline_facets() {
  return {Facet::LogDensity, Facet::NormalizedDensity, Facet::Score,
          Facet::Laplacian,  Facet::Hessian,           Facet::Sampler};
}

// ------------------------------------------------------------------------------------------------
// gaussian_fit

const OptionsSpec<GaussianFitKeys>& gaussian_fit_options() {
  using O = GaussianFitKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.number(
         "covariance_floor", &O::covariance_floor,
         "ε: the covariance's eigenvalues are kept >= ε (the constrained maximum likelihood); 0: none, and a "
         "singular covariance is an error",
         0.0)
        .non_negative();
    return s;
  }();
  return spec;
}

GaussianFitEstimator::GaussianFitEstimator(const Config& cfg)
    : opt_(gaussian_fit_options().read(cfg)), sites_(cfg) {}

void GaussianFitEstimator::check(const DataShape& data) const {
  if (data.train_rows == 0) sites_.fail("", "gaussian_fit: the training split is empty");
}

ModelPtr GaussianFitEstimator::fit(const FitInput& in) {
  const Matrix& X = in.train;
  if (X.rows() == 0) sites_.fail("", "gaussian_fit: the training split is empty");
  GaussianFitOptions fo;
  fo.floor = opt_.covariance_floor;
  Index clipped = 0;
  MixtureParameters p =
      weighted_gaussians(X, Matrix::Ones(X.rows(), 1), fo, sites_, "gaussian_fit", in.context, &clipped);
  auto model = std::make_shared<GaussianMixtureModel>("gaussian_fit", std::move(p));
  const double ll = total_log_likelihood(*model, X, in.context) / static_cast<double>(X.rows());
  in.report.iterations = 1;
  in.report.values["train_log_likelihood"] = ll;
  in.report.values["clipped_eigenvalues"] = static_cast<double>(clipped);
  if (clipped > 0)
    in.report.notes.push_back("covariance_floor raised " + std::to_string(clipped) + " eigenvalue(s) to " +
                              number_text(opt_.covariance_floor));
  return model;
}

// ------------------------------------------------------------------------------------------------
// gmm

const OptionsSpec<GmmKeys>& gmm_options() {
  using O = GmmKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.numbers("components", &O::components,
              "K, the number of components; a list of several K: the one chosen by `select`")
        .mandatory();
    s.string(
         "select", &O::select,
         "how K is chosen when `components` lists several: held-out log-likelihood on the validation split "
         "(highest wins) or BIC on the training split (lowest wins)",
         std::string("validation"))
        .one_of({"validation", "bic"});
    s.string("covariance", &O::covariance, "full or diagonal component covariances", std::string("full"))
        .one_of({"full", "diagonal"});
    s.number(
         "covariance_floor", &O::covariance_floor,
         "ε: every component covariance keeps its eigenvalues (variances) >= ε in each M-step; 0: none, and "
         "a singular component is an error",
         1e-6)
        .non_negative();
    s.integer("restarts", &O::restarts,
              "EM runs from independent k-means++ starts per K; the highest "
              "training log-likelihood wins",
              3)
        .at_least(1);
    s.integer("max_iterations", &O::max_iterations, "EM iterations (M-steps) per run at most", 500)
        .at_least(1);
    s.number("tolerance", &O::tolerance,
             "EM stops when the mean training log-likelihood per row rises by less than this", 1e-6)
        .positive();
    s.integer("kmeans_max_iterations", &O::kmeans_max_iterations, "Lloyd iterations of each k-means start",
              100)
        .at_least(1);
    return s;
  }();
  return spec;
}

GmmEstimator::GmmEstimator(const Config& cfg) : opt_(gmm_options().read(cfg)), sites_(cfg) {
  if (opt_.components.empty()) sites_.fail("components", "give at least one number of components");
  for (double k : opt_.components) {
    if (!(k >= 1) || k != std::floor(k) || k > 1e6)
      sites_.fail("components", "every K must be an integer >= 1 (got " + number_text(k) + ")");
    const auto K = static_cast<Index>(k);
    if (std::find(candidates_.begin(), candidates_.end(), K) != candidates_.end())
      sites_.fail("components", "K = " + std::to_string(K) + " is listed twice");
    candidates_.push_back(K);
  }
}

void GmmEstimator::check(const DataShape& data) const {
  const Index top = *std::max_element(candidates_.begin(), candidates_.end());
  if (top > data.train_rows)
    sites_.fail("components", "a mixture of " + std::to_string(top) + " components but only " +
                                  std::to_string(data.train_rows) + " training rows");
  // EM's memory for the largest K, before any is allocated: each component's covariance and factor
  // (D x D) and the responsibilities and log densities of every training row (rows x K).
  const double K = static_cast<double>(top), D = static_cast<double>(std::max<Index>(data.dim, 1));
  require_memory(8.0 * (3.0 * K * D * D + 3.0 * static_cast<double>(data.train_rows) * K),
                 sites_.where("components"), "EM's covariances and responsibilities (components)");
  if (candidates_.size() > 1 && opt_.select == "validation" && data.validation_rows == 0)
    sites_.fail("select",
                "choosing K by held-out log-likelihood needs a validation split, and it is empty; add "
                "`validation` to [data] split, or use select = \"bic\"");
}

ModelPtr GmmEstimator::fit(const FitInput& in) {
  const Matrix& X = in.train;
  const Index N = X.rows(), D = X.cols();
  check(DataShape{D, N, in.validation.rows(), 0});
  const bool by_validation = opt_.select == "validation" && in.validation.rows() > 0;
  EmOptions eo;
  eo.fit.floor = opt_.covariance_floor;
  eo.fit.diagonal = opt_.covariance == "diagonal";
  eo.max_iterations = static_cast<int>(opt_.max_iterations);
  eo.tolerance = opt_.tolerance;
  eo.kmeans_max_iterations = static_cast<int>(opt_.kmeans_max_iterations);

  std::shared_ptr<GaussianMixtureModel> best;
  double best_score = 0.0;
  EmResult best_run;
  int best_restart = 0;
  const auto total_runs = static_cast<double>(candidates_.size() * static_cast<std::size_t>(opt_.restarts));
  int runs_done = 0;
  for (const Index K : candidates_) {
    eo.components = K;
    // Streams: fit stream / "components" / K / restart, so a K's runs do not depend on the list.
    const RandomStream stream = in.context.rng().derive("components").derive(static_cast<std::uint64_t>(K));
    std::exception_ptr first_error;
    EmResult chosen;
    int chosen_restart = -1;
    for (int r = 0; r < opt_.restarts; ++r) {
      in.context.progress().update("gmm", runs_done++ / total_runs,
                                   "K = " + std::to_string(K) + ", EM run " + std::to_string(r + 1) + " of " +
                                       std::to_string(opt_.restarts));
      const std::string where = "gmm (K = " + std::to_string(K) + ", restart " + std::to_string(r) + ")";
      try {
        EmResult run = run_em(X, eo, stream.derive(static_cast<std::uint64_t>(r)), sites_, where, in.context);
        if (chosen_restart < 0 || run.trace.back() > chosen.trace.back()) {
          chosen = std::move(run);
          chosen_restart = r;
        }
      } catch (const Error& e) {
        if (!first_error) first_error = std::current_exception();
        in.report.notes.push_back(where + " failed: " + e.what());
      }
    }
    if (chosen_restart < 0) std::rethrow_exception(first_error);
    auto model = std::make_shared<GaussianMixtureModel>("gmm", chosen.parameters);
    const std::string key = "K" + std::to_string(K) + ".";
    const double train_ll = chosen.trace.back();
    in.report.values[key + "train_log_likelihood"] = train_ll;
    in.report.values[key + "iterations"] = chosen.iterations;
    in.report.values[key + "restart"] = chosen_restart;
    double score = train_ll;  // higher is better
    if (candidates_.size() > 1 && by_validation) {
      score =
          total_log_likelihood(*model, in.validation, in.context) / static_cast<double>(in.validation.rows());
      in.report.values[key + "validation_log_likelihood"] = score;
    } else if (candidates_.size() > 1) {
      const double bic = -2.0 * static_cast<double>(N) * train_ll +
                         free_parameters(K, D, eo.fit.diagonal) * std::log(static_cast<double>(N));
      in.report.values[key + "bic"] = bic;
      score = -bic;
    }
    if (!best || score > best_score) {  // ties: the first K listed
      best = model;
      best_score = score;
      best_run = std::move(chosen);
      best_restart = chosen_restart;
    }
  }
  const Index K = best->parameters().components();
  in.report.iterations = best_run.iterations;
  in.report.values["components"] = static_cast<double>(K);
  in.report.values["restart"] = best_restart;
  in.report.values["converged"] = best_run.converged ? 1.0 : 0.0;
  in.report.values["train_log_likelihood"] = best_run.trace.back();
  in.report.values["clipped_eigenvalues"] = static_cast<double>(best_run.clipped);
  if (!best_run.converged)
    in.report.notes.push_back("EM stopped at max_iterations = " + std::to_string(opt_.max_iterations) +
                              " before the log-likelihood gain fell below tolerance");
  if (candidates_.size() > 1)
    in.report.notes.push_back("K = " + std::to_string(K) + " chosen by " +
                              (by_validation ? "held-out log-likelihood" : "BIC") + " among " +
                              std::to_string(candidates_.size()) + " candidates");
  in.context.progress().done(
      "gmm", "K = " + std::to_string(K) + ", " + std::to_string(best_run.iterations) + " EM iterations");
  return best;
}

}  // namespace kef::baselines
