// A test-only plugin for the pipeline tests: the evaluator `pipeline_fixture_fail` reports one metric
// for every model except `fail_on`, where it throws the error kind `kind` at run time, after the fits
// (the case a check before fitting cannot catch); the estimator `pipeline_fixture_gaussian` fits a unit
// Gaussian at the training mean, declares that its model has no sampler and no base measure, and
// checks `min_train_rows` against the data's shape.
#include <string>

#include "kef/error.hpp"
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

void register_components(kef::PluginRegistrar& r) {
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
               kef::KeySpec::string("kind", "error kind: numerical or data", std::string("numerical"))
                   .one_of({"numerical", "data"})};
  r.add_evaluator(info,
                  [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Evaluator> {
                    return std::make_unique<FailingEvaluator>(cfg.string("fail_on"), cfg.string("kind"));
                  });
}

}  // namespace

KEF_PLUGIN("pipeline_fixture", "0.0.1", "pipeline test fixture", register_components)
