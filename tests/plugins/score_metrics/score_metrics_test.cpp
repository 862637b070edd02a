// The score_metrics evaluators against closed forms: a Gaussian model scored against a Gaussian truth
// (synthetic/gaussian), where J = mean Σ_d [∂²_d log p + ½(∂_d log p)²], the Fisher divergence and
// the truth's log-likelihood are written out from the means and covariances; the split they read; the
// bounded-support mask; the errors naming a row or the missing truth; the thread count; the
// conditional loss; and a pipeline whose gaussian_fit model is scored in standardised coordinates.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>

#include "kef/conditional_model.hpp"
#include "kef/context.hpp"
#include "kef/dataset.hpp"
#include "kef/error.hpp"
#include "kef/evaluator.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
#include "pipeline_text.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace kef::score_metrics_test {

using Json = nlohmann::json;

// The truth: N(m, s² I) in two dimensions.
const Vector& truth_mean() {
  static const Vector v = (Vector(2) << 0.5, -1.0).finished();
  return v;
}
constexpr double kTruthStd = 0.8;

ModelPtr source_truth(const std::string& toml) {
  BuildContext ctx;
  ctx.registry = &test::plugin_registry();
  RandomStream rng(4, "score-metrics-source");
  return test::plugin_registry().make_data_source(test::config_from(toml), ctx)->load(rng).truth;
}

ModelPtr gaussian_truth() {
  return source_truth("type = \"synthetic/gaussian\"\nn = 10\nmean = [0.5, -1.0]\nstd = 0.8\nrotate = false");
}

// The model: N(μ, Σ) with a full covariance.
const Vector& model_mean() {
  static const Vector v = (Vector(2) << 0.2, -0.7).finished();
  return v;
}
Matrix model_cov() { return test::from_rows({{1.1, 0.3}, {0.3, 0.6}}); }
// Σ⁻¹ written out: det Σ = 0.66 − 0.09 = 0.57.
Matrix model_precision() { return test::from_rows({{0.6, -0.3}, {-0.3, 1.1}}) / 0.57; }

std::shared_ptr<test::GaussianModel> gaussian_model() {
  return std::make_shared<test::GaussianModel>(model_mean(), model_cov());
}

EvaluatorPtr make(const std::string& type, const std::string& keys = "") {
  Registry& reg = test::plugin_registry();
  RandomStream init(1, "score-metrics-init");
  return reg.make_evaluator(test::config_from("type = \"" + type + "\"\n" + keys), BuildContext{2, &reg, &init, -1},
                            {"models", "name"});
}

double metric(const EvaluationResult& r, const std::string& name) {
  for (const auto& [k, v] : r.metrics)
    if (k == name) return v;
  ADD_FAILURE() << "no metric " << name;
  return std::numeric_limits<double>::quiet_NaN();
}

bool has_metric(const EvaluationResult& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.first == name) return true;
  return false;
}

EvaluationResult run(Evaluator& e, const Model& model, const Dataset& data, int threads = 1) {
  Context context(9, threads);
  return e.evaluate(EvalInput{model, "m", data, context});
}

Dataset test_data(Index rows, std::uint64_t seed, ModelPtr truth) {
  RandomStream rng(seed, "score-metrics-rows");
  Dataset d;
  d.train = Matrix(0, 2);
  d.validation = Matrix(0, 2);
  d.test = (kTruthStd * rng.normal_matrix(rows, 2)).rowwise() + truth_mean().transpose();
  d.truth = std::move(truth);
  return d;
}

// The closed forms, row by row: the model's score −Σ⁻¹(x − μ) and Hessian diagonal −diag Σ⁻¹; the
// truth's −(x − m)/s² and −1/s².
Vector model_score(const Vector& x) { return -model_precision() * (x - model_mean()); }
Vector truth_score(const Vector& x) { return -(x - truth_mean()) / (kTruthStd * kTruthStd); }

double model_j(const Matrix& X) {
  double sum = 0;
  for (Index n = 0; n < X.rows(); ++n) {
    const Vector s = model_score(X.row(n).transpose());
    for (Index d = 0; d < 2; ++d) sum += -model_precision()(d, d) + 0.5 * s[d] * s[d];
  }
  return sum / static_cast<double>(X.rows());
}

double truth_j(const Matrix& X) {
  double sum = 0;
  for (Index n = 0; n < X.rows(); ++n) {
    const Vector s = truth_score(X.row(n).transpose());
    for (Index d = 0; d < 2; ++d) sum += -1.0 / (kTruthStd * kTruthStd) + 0.5 * s[d] * s[d];
  }
  return sum / static_cast<double>(X.rows());
}

double fisher(const Matrix& X) {
  double sum = 0;
  for (Index n = 0; n < X.rows(); ++n)
    sum += 0.5 * (model_score(X.row(n).transpose()) - truth_score(X.row(n).transpose())).squaredNorm();
  return sum / static_cast<double>(X.rows());
}

double truth_log_likelihood(const Matrix& X) {
  const double s2 = kTruthStd * kTruthStd;
  double sum = 0;
  for (Index n = 0; n < X.rows(); ++n)
    sum += -std::log(2 * std::numbers::pi * s2) - (X.row(n).transpose() - truth_mean()).squaredNorm() / (2 * s2);
  return sum / static_cast<double>(X.rows());
}

TEST(ScoreMetrics, ScoreMatchingLossIsTheClosedFormOfTheModelAndOfTheTruth) {
  const Dataset data = test_data(300, 1, gaussian_truth());
  const auto model = gaussian_model();
  auto e = make("score_matching_loss");
  const EvaluationResult r = run(*e, *model, data);
  EXPECT_NEAR(metric(r, "score_matching_loss"), model_j(data.test), 1e-12);
  EXPECT_NEAR(metric(r, "score_matching_loss_truth"), truth_j(data.test), 1e-12);
  EXPECT_TRUE(r.notes.empty());
  // Without a truth, the model's loss alone.
  Dataset no_truth = data;
  no_truth.truth = nullptr;
  const EvaluationResult alone = run(*e, *model, no_truth);
  ASSERT_EQ(alone.metrics.size(), 1u);
  EXPECT_EQ(metric(alone, "score_matching_loss"), metric(r, "score_matching_loss"));
  // J(p~) − J(p0) estimates the Fisher divergence: with the truth as the model, J(p~) = J(p0).
  const EvaluationResult same = run(*e, *data.truth, data);
  EXPECT_EQ(metric(same, "score_matching_loss"), metric(same, "score_matching_loss_truth"));
}

TEST(ScoreMetrics, FisherDivergenceAndTrueLogLikelihoodAreTheirClosedForms) {
  const Dataset data = test_data(300, 2, gaussian_truth());
  const auto model = gaussian_model();
  auto fd = make("fisher_divergence");
  const EvaluationResult r = run(*fd, *model, data);
  ASSERT_EQ(r.metrics.size(), 1u);
  EXPECT_NEAR(metric(r, "fisher_divergence"), fisher(data.test), 1e-12 * fisher(data.test));
  EXPECT_GT(metric(r, "fisher_divergence"), 0.1);
  EXPECT_EQ(metric(run(*fd, *data.truth, data), "fisher_divergence"), 0.0);

  auto ll = make("true_log_likelihood");
  const EvaluationResult t = run(*ll, *model, data);
  ASSERT_EQ(t.metrics.size(), 1u);
  EXPECT_NEAR(metric(t, "true_log_likelihood"), truth_log_likelihood(data.test), 1e-12);
}

TEST(ScoreMetrics, TheSplitKeyChoosesTheRowsAndAnEmptySplitIsRefusedBeforeAnyFit) {
  Dataset data = test_data(200, 3, gaussian_truth());
  data.validation = test_data(150, 4, nullptr).test;
  const auto model = gaussian_model();
  for (const char* type : {"score_matching_loss", "fisher_divergence", "true_log_likelihood"}) {
    auto e = make(type, "split = \"validation\"");
    const EvaluationResult r = run(*e, *model, data);
    const double expected = std::string(type) == "score_matching_loss" ? model_j(data.validation)
                            : std::string(type) == "fisher_divergence" ? fisher(data.validation)
                                                                        : truth_log_likelihood(data.validation);
    EXPECT_NEAR(metric(r, type), expected, 1e-12 * (1 + std::abs(expected))) << type;

    DataShape shape;
    shape.dim = 2;
    shape.test_rows = 200;
    shape.has_truth = true;
    const std::string msg = test::message_of<ConfigError>([&] { e->check(shape); });
    EXPECT_TRUE(test::contains(msg, "split")) << msg;
    EXPECT_TRUE(test::contains(msg, "the validation split is empty")) << msg;
  }
  EXPECT_THROW(make("score_matching_loss", "split = \"holdout\""), ConfigError);
}

TEST(ScoreMetrics, MetricsOfTheTruthNeedASourceThatKnowsIt) {
  Dataset data = test_data(50, 5, nullptr);
  const auto model = gaussian_model();
  for (const char* type : {"fisher_divergence", "true_log_likelihood"}) {
    auto e = make(type);
    const std::string msg = test::message_of<ConfigError>([&] { run(*e, *model, data); });
    EXPECT_TRUE(test::contains(msg, "needs the exact density of the data source")) << type << ": " << msg;
    EXPECT_TRUE(test::plugin_registry().find(Evaluator::kInterface, type)->needs_truth) << type;
  }
  EXPECT_FALSE(test::plugin_registry().find(Evaluator::kInterface, "score_matching_loss")->needs_truth);
}

// A score that is not finite is an error naming the row, never averaged away: the boxed normal's score
// is NaN outside |x_d| < 3.
TEST(ScoreMetrics, ANonFiniteScoreIsAnErrorNamingTheDataRow) {
  Dataset data = test_data(40, 6, gaussian_truth());
  data.test = data.test.cwiseMax(-2.9).cwiseMin(2.9);  // every other row inside the box
  data.test.row(17) << 0.0, 3.5;
  const test::BoxedNormal boxed(2, 3.0);
  for (const char* type : {"score_matching_loss", "fisher_divergence"}) {
    auto e = make(type);
    const std::string msg = test::message_of<NumericalError>([&] { run(*e, boxed, data); });
    EXPECT_TRUE(test::contains(msg, "the model's score is not finite at data row 17")) << type << ": " << msg;
  }
  // The truth's log density at a row outside its support: the unrotated square [−3, 3]².
  Dataset square = test_data(40, 7, source_truth("type = \"synthetic/square\"\nn = 10\nrotate = false"));
  square.test = square.test.cwiseMax(-2.9).cwiseMin(2.9);
  square.test.row(23) << 3.2, 0.0;
  auto ll = make("true_log_likelihood");
  const std::string msg = test::message_of<NumericalError>([&] { run(*ll, *gaussian_model(), square); });
  EXPECT_TRUE(test::contains(msg, "log density of the truth is not finite at test row 23")) << msg;
}

// Where the truth has bounded support, the score-based metrics use only the rows inside it and say so.
TEST(ScoreMetrics, WithABoundedTruthOnlyTheRowsInsideItsSupportCount) {
  Dataset data = test_data(60, 8, source_truth("type = \"synthetic/square\"\nn = 10\nrotate = false"));
  data.test = 1.5 * data.test.cwiseMax(-1.9).cwiseMin(1.9);  // inside [−3, 3]²
  std::vector<Index> inside;
  for (Index n = 0; n < data.test.rows(); ++n) {
    if (n % 5 == 2) {
      data.test(n, n % 2) = n % 3 == 0 ? 3.4 : -3.7;  // outside
    } else {
      inside.push_back(n);
    }
  }
  const Matrix kept = data.test(inside, Eigen::all);
  const auto model = gaussian_model();
  const EvaluationResult j = run(*make("score_matching_loss"), *model, data);
  EXPECT_NEAR(metric(j, "score_matching_loss"), model_j(kept), 1e-12);
  // The uniform density's score and Hessian are zero inside: J(p0) = 0 and the divergence is ½‖s~‖².
  EXPECT_EQ(metric(j, "score_matching_loss_truth"), 0.0);
  ASSERT_EQ(j.notes.size(), 1u);
  EXPECT_TRUE(test::contains(j.notes[0], "computed on the 48 of 60 test rows where it is positive")) << j.notes[0];
  double half_norm = 0;
  for (Index n = 0; n < kept.rows(); ++n) half_norm += 0.5 * model_score(kept.row(n).transpose()).squaredNorm();
  const EvaluationResult f = run(*make("fisher_divergence"), *model, data);
  EXPECT_NEAR(metric(f, "fisher_divergence"), half_norm / static_cast<double>(kept.rows()), 1e-12);
  ASSERT_EQ(f.notes.size(), 1u);
}

// 5000 rows are three of the evaluators' 2048-row chunks: the sums are folded in chunk order whatever
// the thread count.
TEST(ScoreMetrics, ResultsAreBitwiseTheSameForOneAndTwoThreads) {
  const Dataset data = test_data(5000, 9, gaussian_truth());
  const auto model = gaussian_model();
  for (const char* type : {"score_matching_loss", "fisher_divergence", "true_log_likelihood"}) {
    auto e = make(type);
    const EvaluationResult one = run(*e, *model, data, 1), two = run(*e, *model, data, 2);
    EXPECT_EQ(one.metrics, two.metrics) << type;
  }
  EXPECT_NEAR(metric(run(*make("score_matching_loss"), *model, data, 2), "score_matching_loss"), model_j(data.test),
              1e-11);
  EXPECT_NEAR(metric(run(*make("fisher_divergence"), *model, data, 2), "fisher_divergence"), fisher(data.test),
              1e-11);
}

// p(y | x) = N(y; 0.7 x0 − 0.4 x1, 0.5²) for the conditional loss: columns (x0, x1, y), y the target.
class LinearConditional final : public ConditionalModel {
 public:
  Index input_dim() const override { return 2; }
  Index target_dim() const override { return 1; }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override {
    return -0.5 * residual(X, Y).array().square() / 0.25;
  }
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override {
    score = -residual(X, Y) / 0.25;
    laplacian = Matrix::Constant(X.rows(), 1, -1.0 / 0.25);
  }

 private:
  static Vector residual(const Matrix& X, const Matrix& Y) { return Y.col(0) - 0.7 * X.col(0) + 0.4 * X.col(1); }
};

class ConditionalOnly final : public Model {
 public:
  Index dim() const override { return 3; }
  std::string type_name() const override { return "test/conditional"; }
  FacetSet facets() const override { return {Facet::ConditionalDensity, Facet::ConditionalScore}; }
  Vector log_unnormalized(const Matrix& Z) const override {
    return conditional_.log_unnormalized(Z.leftCols(2), Z.rightCols(1));
  }
  const ConditionalModel* conditional() const override { return &conditional_; }
  std::string describe() const override { return "test conditional"; }

 private:
  LinearConditional conditional_;
};

TEST(ScoreMetrics, TheConditionalLossIsTheClosedFormInTheTargets) {
  RandomStream rng(10, "score-metrics-conditional");
  Dataset data;
  data.train = Matrix(0, 3);
  data.validation = Matrix(0, 3);
  data.test = rng.normal_matrix(120, 3);
  // The target as the middle column: the evaluator must take the roles' columns, not the last one.
  data.roles = make_column_roles({1}, 3);
  const ConditionalOnly model;
  auto e = make("conditional_score_matching_loss");
  // With y the middle column, the model's x are columns 0 and 2.
  double sum = 0;
  for (Index n = 0; n < data.test.rows(); ++n) {
    const double r = data.test(n, 1) - 0.7 * data.test(n, 0) + 0.4 * data.test(n, 2);
    sum += -4.0 + 0.5 * (r / 0.25) * (r / 0.25);
  }
  const EvaluationResult r = run(*e, model, data);
  ASSERT_EQ(r.metrics.size(), 1u);
  EXPECT_NEAR(metric(r, "conditional_score_matching_loss"), sum / 120.0, 1e-12);
  EXPECT_EQ(run(*e, model, data, 2).metrics, r.metrics);

  // An unconditional model, and data without targets (refused before any fit).
  const std::string msg = test::message_of<ConfigError>([&] { run(*e, *gaussian_model(), test_data(10, 11, nullptr)); });
  EXPECT_TRUE(test::contains(msg, "is not a conditional density")) << msg;
  DataShape shape;
  shape.dim = 3;
  shape.test_rows = 10;
  const std::string check = test::message_of<ConfigError>([&] { e->check(shape); });
  EXPECT_TRUE(test::contains(check, "the data have no target columns")) << check;
  EXPECT_FALSE(has_metric(r, "score_matching_loss"));
}

double json_metric(const Json& results, const std::string& model, const std::string& name) {
  const Json& metrics = results.at("models").at(model).at("metrics");
  if (metrics.contains(name)) return metrics.at(name).get<double>();
  ADD_FAILURE() << "no metric " << name << " for " << model << ": " << metrics.dump();
  return std::numeric_limits<double>::quiet_NaN();
}

// Through a pipeline on standardised data: the metrics are those of gaussian_fit's maximum-likelihood
// Gaussian (mean and covariance with divisor N of the prepared training split) and of the truth carried
// into standardised coordinates, N(A m + offset, s² A²); the true log-likelihood is also reported in
// data units, where it is the mean log N(x; m, s² I) of the test rows mapped back.
TEST(ScoreMetrics, APipelineReportsTheClosedFormsOfAGaussianFitInStandardisedCoordinates) {
  const std::string toml = test::PipelineText()
                               .data("type = \"synthetic/gaussian\"\nn = 700\nmean = [0.5, -1.0]\nstd = 0.8\n"
                                     "rotate = false\nsplit = { test = 300, validation = 0 }\nstandardize = true")
                               .model("name = \"g\"\n[model.estimator]\ntype = \"gaussian_fit\"")
                               .evaluate("score_matching_loss")
                               .evaluate("fisher_divergence")
                               .evaluate("true_log_likelihood")
                               .str();
  RunOptions options;
  options.quiet = true;
  const RunResult r = run_pipeline(Config::parse_string(toml, "p.toml"), options);
  const Json results = Json::parse(r.results_json);
  const Matrix& train = r.data.train;
  const Matrix& Z = r.data.test;
  ASSERT_EQ(Z.rows(), 300);
  const Matrix& A = r.data.transform.matrix;
  ASSERT_TRUE(A.isDiagonal());
  // gaussian_fit's parameters and the truth's, in standardised coordinates.
  const Vector mu = train.colwise().mean().transpose();
  const Matrix centred = train.rowwise() - mu.transpose();
  const Matrix P = (centred.transpose() * centred / static_cast<double>(train.rows())).inverse();
  const Vector m = A * truth_mean() + r.data.transform.offset;
  const Vector var = (kTruthStd * A.diagonal()).array().square();
  double j = 0, j0 = 0, fd = 0, ll = 0, ll_data = 0;
  for (Index n = 0; n < Z.rows(); ++n) {
    const Vector z = Z.row(n).transpose();
    const Vector s = -P * (z - mu);
    const Vector t = -(z - m).cwiseQuotient(var);
    for (Index d = 0; d < 2; ++d) {
      j += -P(d, d) + 0.5 * s[d] * s[d];
      j0 += -1.0 / var[d] + 0.5 * t[d] * t[d];
      ll += -0.5 * std::log(2 * std::numbers::pi * var[d]) - 0.5 * (z[d] - m[d]) * (z[d] - m[d]) / var[d];
    }
    fd += 0.5 * (s - t).squaredNorm();
    const Vector x = (z - r.data.transform.offset).cwiseQuotient(A.diagonal());
    ll_data += -std::log(2 * std::numbers::pi * kTruthStd * kTruthStd) -
               (x - truth_mean()).squaredNorm() / (2 * kTruthStd * kTruthStd);
  }
  const double N = static_cast<double>(Z.rows());
  EXPECT_NEAR(json_metric(results, "g", "score_matching_loss"), j / N, 1e-10);
  EXPECT_NEAR(json_metric(results, "g", "score_matching_loss_truth"), j0 / N, 1e-10);
  // The fitted Gaussian is close to the truth: the divergence is small, so it is compared relatively.
  ASSERT_GT(fd / N, 1e-4);
  EXPECT_NEAR(json_metric(results, "g", "fisher_divergence"), fd / N, 1e-10 * fd / N);
  EXPECT_NEAR(json_metric(results, "g", "true_log_likelihood_standardized"), ll / N, 1e-10);
  EXPECT_NEAR(json_metric(results, "g", "true_log_likelihood"), ll_data / N, 1e-10);
}

}  // namespace kef::score_metrics_test
