// A test-only plugin for the pipeline tests: the evaluator `pipeline_fixture_fail` reports one metric
// for every model except `fail_on`, where it throws the error kind `kind` at run time, after the fits
// (the case a check before fitting cannot catch); the estimator `pipeline_fixture_gaussian` fits a unit
// Gaussian at the training mean, declares that its model has no sampler and no base measure, and
// checks `min_train_rows` against the data's shape; the estimator `pipeline_fixture_linear_gaussian`
// is a real conditional model for the column-roles tests: p(y | x) = N(A x + b, Σ) fitted by least
// squares on the roles of [data] targets (exact log p(y | x), ∇_y, Laplacian and sampling; saved and
// reloaded). It is a test fixture, not a kef method.
#include <cmath>
#include <new>
#include <numbers>
#include <string>

#include "kef/conditional_model.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/model_archive.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

class FailingEvaluator final : public kef::Clonable<FailingEvaluator, kef::Evaluator> {
 public:
  FailingEvaluator(std::string fail_on, std::string kind)
      : fail_on_(std::move(fail_on)), kind_(std::move(kind)) {}
  kef::EvaluationResult evaluate(const kef::EvalInput& in) override {
    if (in.model_name == fail_on_) {
      const std::string message = "pipeline_fixture_fail: failing on model " + in.model_name + " as asked";
      if (kind_ == "data") throw kef::DataError(message);
      if (kind_ == "memory") throw std::bad_alloc();  // as a failed allocation in plugin code throws
      throw kef::NumericalError(message);
    }
    kef::EvaluationResult r;
    r.metrics.emplace_back("fixture_rows", static_cast<double>(in.data.test.rows()));
    return r;
  }

 private:
  std::string fail_on_, kind_;
};

class UnitGaussian final : public kef::Model {
 public:
  explicit UnitGaussian(kef::Vector mean) : mean_(std::move(mean)) {}
  kef::Index dim() const override { return mean_.size(); }
  std::string type_name() const override { return "pipeline_fixture_gaussian"; }
  kef::Vector log_unnormalized(const kef::Matrix& X) const override {
    return -0.5 * (X.rowwise() - mean_.transpose()).rowwise().squaredNorm();
  }
  kef::Matrix score(const kef::Matrix& X) const override { return -(X.rowwise() - mean_.transpose()); }
  void score_and_laplacian(const kef::Matrix& X, kef::Matrix& s, kef::Matrix& laplacian) const override {
    s = score(X);
    laplacian = kef::Matrix::Constant(X.rows(), X.cols(), -1.0);
  }
  std::string describe() const override { return "pipeline fixture: unit Gaussian at the training mean"; }

 private:
  kef::Vector mean_;
};

class GaussianEstimator final : public kef::Clonable<GaussianEstimator, kef::Estimator> {
 public:
  explicit GaussianEstimator(kef::Config cfg) : cfg_(std::move(cfg)) {}
  kef::ModelPtr fit(const kef::FitInput& in) override {
    return std::make_shared<UnitGaussian>(in.train.colwise().mean().transpose());
  }
  void check(const kef::DataShape& data) const override {
    if (data.train_rows < cfg_.integer("min_train_rows"))
      cfg_.fail("min_train_rows", "needs " + std::to_string(cfg_.integer("min_train_rows")) +
                                      " training rows, the data has " + std::to_string(data.train_rows));
  }
  std::optional<kef::FacetSet> facets() const override {
    return kef::FacetSet{kef::Facet::LogDensity, kef::Facet::Score, kef::Facet::Laplacian};
  }

 private:
  kef::Config cfg_;
};

// p(y | x) = N(B [x; 1], Σ): B = [A b] (target_dim x (input_dim + 1)), Σ = L Lᵀ.
class LinearGaussian final : public kef::Model, public kef::ConditionalModel {
 public:
  LinearGaussian(kef::Matrix B, kef::Matrix sigma) : B_(std::move(B)), sigma_(std::move(sigma)) {
    const Eigen::LLT<kef::Matrix> llt(sigma_);
    if (llt.info() != Eigen::Success)
      throw kef::NumericalError("linear Gaussian: Σ is not positive definite");
    L_ = llt.matrixL();
    precision_ = llt.solve(kef::Matrix::Identity(sigma_.rows(), sigma_.cols()));
    log_norm_ = 0.5 * static_cast<double>(target_dim()) * std::log(2.0 * std::numbers::pi) +
                L_.diagonal().array().log().sum();
  }

  kef::Index dim() const override { return input_dim() + target_dim(); }
  std::string type_name() const override { return "pipeline_fixture_linear_gaussian"; }
  kef::FacetSet facets() const override {
    return {kef::Facet::ConditionalDensity, kef::Facet::ConditionalScore, kef::Facet::ConditionalSampler};
  }
  kef::Vector log_unnormalized(const kef::Matrix&) const override {
    throw kef::ConfigError(
        "model pipeline_fixture_linear_gaussian is a conditional density and has no log "
        "density of whole rows");
  }
  const kef::ConditionalModel* conditional() const override { return this; }

  kef::Index input_dim() const override { return B_.cols() - 1; }
  kef::Index target_dim() const override { return B_.rows(); }
  // Normalised: log N(y; B [x; 1], Σ).
  kef::Vector log_unnormalized(const kef::Matrix& X, const kef::Matrix& Y) const override {
    const kef::Matrix R = residuals(X, Y);
    return -0.5 * (R * precision_).cwiseProduct(R).rowwise().sum().array() - log_norm_;
  }
  // Model's unconditional functions of the same names stay visible beside these overrides.
  using kef::Model::log_normalizer;
  using kef::Model::sample;
  using kef::Model::score;
  using kef::Model::score_and_laplacian;
  kef::Matrix score(const kef::Matrix& X, const kef::Matrix& Y) const override {
    return -residuals(X, Y) * precision_;
  }
  void score_and_laplacian(const kef::Matrix& X, const kef::Matrix& Y, kef::Matrix& s,
                           kef::Matrix& laplacian) const override {
    s = score(X, Y);
    laplacian = (-precision_.diagonal()).transpose().replicate(X.rows(), 1);
  }
  kef::Matrix sample(const kef::Matrix& X, kef::RandomStream& rng) const override {
    return mean(X) + rng.normal_matrix(X.rows(), target_dim()) * L_.transpose();
  }
  std::optional<kef::Vector> log_normalizer(const kef::Matrix& X) const override {
    return kef::Vector::Zero(X.rows());
  }
  std::string describe() const override { return "pipeline fixture: linear Gaussian p(y | x)"; }
  bool can_save() const override { return true; }
  void save(kef::ModelWriter& w) const override {
    w.manifest().set("dim", static_cast<std::int64_t>(dim()));
    w.write_array("coefficients", B_);
    w.write_array("covariance", sigma_);
  }
  static kef::ModelPtr load(const kef::ModelReader& r, kef::Registry&) {
    return std::make_shared<LinearGaussian>(r.read_array("coefficients"), r.read_array("covariance"));
  }
  kef::Matrix mean(const kef::Matrix& X) const {
    return (X * B_.leftCols(input_dim()).transpose()).rowwise() + B_.col(input_dim()).transpose();
  }

 private:
  kef::Matrix residuals(const kef::Matrix& X, const kef::Matrix& Y) const { return Y - mean(X); }
  kef::Matrix B_, sigma_, L_, precision_;
  double log_norm_ = 0;
};

class LinearGaussianEstimator final : public kef::Clonable<LinearGaussianEstimator, kef::Estimator> {
 public:
  kef::ModelPtr fit(const kef::FitInput& in) override {
    if (!in.roles.conditional())
      throw kef::ConfigError("pipeline_fixture_linear_gaussian: the data have no targets");
    const kef::Matrix X = in.roles.inputs_of(in.train), Y = in.roles.targets_of(in.train);
    kef::Matrix design(X.rows(), X.cols() + 1);
    design << X, kef::Matrix::Ones(X.rows(), 1);
    // Least squares by the normal equations: B = Yᵀ D (DᵀD)⁻¹.
    const kef::SpdFactor gram(design.transpose() * design, "pipeline_fixture_linear_gaussian");
    const kef::Matrix B = gram.solve(kef::Matrix(design.transpose() * Y)).transpose();
    const kef::Matrix R = Y - design * B.transpose();
    const kef::Matrix sigma = R.transpose() * R / static_cast<double>(X.rows());  // maximum likelihood
    return std::make_shared<LinearGaussian>(B, sigma);
  }
  std::optional<kef::FacetSet> facets() const override {
    return kef::FacetSet{kef::Facet::ConditionalDensity, kef::Facet::ConditionalScore,
                         kef::Facet::ConditionalSampler};
  }
};

void register_components(kef::PluginRegistrar& r) {
  kef::ComponentInfo linear;
  linear.type = "pipeline_fixture_linear_gaussian";
  linear.summary = "test fixture: p(y | x) = N(A x + b, Σ) by least squares on [data] targets";
  r.add_estimator(linear,
                  [](const kef::Config&, const kef::EstimatorParts&,
                     const kef::BuildContext&) -> std::unique_ptr<kef::Estimator> {
                    return std::make_unique<LinearGaussianEstimator>();
                  });
  r.add_model_loader(linear, &LinearGaussian::load);

  kef::ComponentInfo gauss;
  gauss.type = "pipeline_fixture_gaussian";
  gauss.summary = "test fixture: unit Gaussian at the training mean, no sampler, no base measure";
  gauss.keys = {kef::KeySpec::integer("min_train_rows", "refuse data with fewer training rows", 0)};
  r.add_estimator(gauss,
                  [](const kef::Config& cfg, const kef::EstimatorParts&,
                     const kef::BuildContext&) -> std::unique_ptr<kef::Estimator> {
                    return std::make_unique<GaussianEstimator>(cfg);
                  });

  kef::ComponentInfo info;
  info.type = "pipeline_fixture_fail";
  info.summary = "test fixture: reports the test rows, or fails at run time on model `fail_on`";
  info.keys = {kef::KeySpec::string("fail_on", "the model to fail on", std::string("")),
               kef::KeySpec::string("kind", "error kind: numerical, data or memory (std::bad_alloc)",
                                    std::string("numerical"))
                   .one_of({"numerical", "data", "memory"})};
  r.add_evaluator(info,
                  [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Evaluator> {
                    return std::make_unique<FailingEvaluator>(cfg.string("fail_on"), cfg.string("kind"));
                  });
}

}  // namespace

KEF_PLUGIN("pipeline_fixture", "0.0.1", "pipeline test fixture", register_components)
