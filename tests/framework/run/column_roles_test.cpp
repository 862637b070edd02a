// Column roles ([data] targets: inputs x, targets y) through splits, standardisation, whitening and
// saving, the checks that refuse a mismatch of data and estimator, and a conditional estimator fitted
// end to end (the fixture pipeline_fixture_linear_gaussian, a real linear-Gaussian p(y | x)); and the
// in-memory entry point against the file run of the same data.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "data_units_model.hpp"
#include "kef/conditional_model.hpp"
#include "kef/config.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef::column_roles_test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// y = 0.7 a − 0.3 b + 0.5 + 0.4 ξ, with a and b correlated inputs on different scales.
Matrix conditional_rows(Index n) {
  RandomStream rng(21, "roles");
  const Matrix Z = rng.normal_matrix(n, 3);
  Matrix X(n, 3);
  X.col(0) = 2.0 * Z.col(0).array() + 1.0;
  X.col(1) = 0.6 * Z.col(0) + 0.5 * Z.col(1);
  X.col(2) = (0.7 * X.col(0) - 0.3 * X.col(1)).array() + 0.5 + 0.4 * Z.col(2).array();
  return X;
}

std::string csv_text(const std::vector<std::string>& header, const Matrix& X) {
  std::ostringstream csv;
  csv.precision(17);
  for (std::size_t c = 0; c < header.size(); ++c) csv << (c ? "," : "") << header[c];
  csv << "\n";
  for (Index n = 0; n < X.rows(); ++n) {
    for (Index d = 0; d < X.cols(); ++d) csv << (d ? "," : "") << X(n, d);
    csv << "\n";
  }
  return csv.str();
}

const std::vector<std::string> kColumns = {"a", "b", "y"};

// A [data] table reading `X` (columns a, b, y) from a CSV, with `keys`.
Config data_table(const fs::path& dir, const Matrix& X, const std::string& keys,
                  const std::vector<std::string>& header = kColumns) {
  test::write_file(dir, "data.csv", csv_text(header, X));
  const fs::path toml =
      test::write_file(dir, "p.toml", "[data]\ntype = \"file\"\npath = \"data.csv\"\n" + keys + "\n");
  return Config::parse_file(toml.string()).table("data");
}

Dataset prepare(const Config& data) { return prepare_dataset(test::plugin_registry(), data, 3); }

// The symmetric whitening map of the population covariance of the rows of X, from the definition.
Matrix whitening_of(const Matrix& X) {
  const Matrix centred = X.rowwise() - X.colwise().mean();
  const Matrix cov = centred.transpose() * centred / static_cast<double>(X.rows());
  Eigen::SelfAdjointEigenSolver<Matrix> es(cov);
  return es.eigenvectors() * es.eigenvalues().cwiseInverse().cwiseSqrt().asDiagonal() *
         es.eigenvectors().transpose();
}

TEST(ColumnRoles, BlocksAndJoinAreInverse) {
  const ColumnRoles roles = make_column_roles({3, 1}, 5);
  EXPECT_EQ(roles.targets, (std::vector<Index>{1, 3}));
  EXPECT_EQ(roles.inputs(5), (std::vector<Index>{0, 2, 4}));
  RandomStream rng(1, "join");
  const Matrix R = rng.normal_matrix(4, 5);
  const Matrix X = roles.inputs_of(R), Y = roles.targets_of(R);
  EXPECT_EQ(X.col(1), R.col(2));
  EXPECT_EQ(Y.col(1), R.col(3));
  EXPECT_EQ(roles.join(X, Y), R);
  EXPECT_EQ(roles.without_column(2).targets, (std::vector<Index>{1, 2}));
  EXPECT_THROW(make_column_roles({0, 1}, 2), Error);  // no inputs left
  EXPECT_THROW(make_column_roles({1, 1}, 3), Error);
  EXPECT_THROW(make_column_roles({3}, 3), Error);
}

TEST(ColumnRoles, SplitsMoveWholeRowsAndKeepTheRoles) {
  const fs::path dir = test::temp_dir("roles-split");
  const Matrix X = conditional_rows(200);
  const Dataset d = prepare(data_table(dir, X, "targets = [\"y\"]\nsplit = { test = 40, validation = 20 }"));
  EXPECT_EQ(d.roles.targets, (std::vector<Index>{2}));
  EXPECT_EQ(d.preprocessing.targets, (std::vector<std::string>{"y"}));
  EXPECT_EQ(d.transform.roles, d.roles);
  ASSERT_EQ(d.train.rows() + d.validation.rows() + d.test.rows(), 200);
  // Shuffled, but every split row is a whole row of the data: its y is the y of the same x.
  for (const Matrix* split : {&d.train, &d.validation, &d.test}) {
    EXPECT_EQ(d.inputs(*split).cols(), 2);
    EXPECT_EQ(d.targets(*split).col(0), split->col(2));
    for (Index n = 0; n < split->rows(); ++n) {
      bool found = false;
      for (Index m = 0; m < X.rows() && !found; ++m) found = X.row(m) == split->row(n);
      EXPECT_TRUE(found) << "split row " << n << " is not a row of the data";
    }
  }
}

TEST(ColumnRoles, StandardisationIsPerColumnWhateverTheRoles) {
  const fs::path dir = test::temp_dir("roles-standardize");
  const Matrix X = conditional_rows(300);
  const Dataset with = prepare(data_table(dir, X, "targets = [\"y\"]\nstandardize = true"));
  const Dataset without = prepare(data_table(dir, X, "standardize = true"));
  EXPECT_TRUE(with.transform.matrix.isDiagonal());
  EXPECT_EQ(with.transform.matrix, without.transform.matrix);
  EXPECT_EQ(with.train, without.train);
  EXPECT_EQ(with.transform.target_map()(0, 0), with.transform.matrix(2, 2));
}

TEST(ColumnRoles, WhiteningIsBlockDiagonalAndItsInputBlockWhitensTheInputsAlone) {
  const fs::path dir = test::temp_dir("roles-whiten");
  const Matrix X = conditional_rows(400);
  const Dataset d = prepare(data_table(dir, X, "targets = [\"y\"]\nwhiten = true\nshuffle = false"));
  const Matrix& A = d.transform.matrix;
  // No mixing of x and y, exactly.
  for (Index i : {0, 1}) {
    EXPECT_EQ(A(i, 2), 0.0);
    EXPECT_EQ(A(2, i), 0.0);
  }
  const Index n_train = d.train.rows();
  const Matrix raw_train = X.topRows(n_train);
  // The x block is the whitening map of x alone; the y block that of y alone (definitions above).
  const Matrix Wx = whitening_of(raw_train.leftCols(2));
  const Matrix Wy = whitening_of(raw_train.rightCols(1));
  EXPECT_LT((d.transform.input_map() - Wx).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT(std::abs(d.transform.target_map()(0, 0) - Wy(0, 0)), 1e-12);
  // ... and equals what the pipeline computes when y is not in the data at all.
  const Dataset x_only = prepare(data_table(dir, X, "exclude = [\"y\"]\nwhiten = true\nshuffle = false"));
  EXPECT_LT((d.transform.input_map() - x_only.transform.matrix).cwiseAbs().maxCoeff(), 1e-12);
  // Each block of the whitened training split has identity covariance, and the blocks stay correlated
  // (y depends on x: whitening them jointly would have removed that).
  const Matrix centred = d.train.rowwise() - d.train.colwise().mean();
  const Matrix cov = centred.transpose() * centred / static_cast<double>(n_train);
  EXPECT_LT((cov.topLeftCorner(2, 2) - Matrix::Identity(2, 2)).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_NEAR(cov(2, 2), 1.0, 1e-10);
  EXPECT_GT(std::abs(cov(0, 2)) + std::abs(cov(1, 2)), 0.3);
  EXPECT_NEAR(d.transform.log_abs_det, std::log(std::abs(Wx.determinant())) + std::log(std::abs(Wy(0, 0))),
              1e-10);
  EXPECT_NEAR(d.transform.target_log_abs_det(), std::log(std::abs(Wy(0, 0))), 1e-12);
}

TEST(ColumnRoles, DropCorrelatedShiftsTheRolesOrRefusesToDropATarget) {
  const fs::path dir = test::temp_dir("roles-drop");
  Matrix X = conditional_rows(200);
  // c duplicates a (correlation 1): a is the first column of the pair and is dropped; y moves to index 2.
  Matrix with_copy(X.rows(), 4);
  with_copy << X.col(0), X.col(1), X.col(0) * 2.0, X.col(2);
  const Dataset d =
      prepare(data_table(dir, with_copy, "targets = [\"y\"]\ndrop_correlated = 0.99", {"a", "b", "c", "y"}));
  EXPECT_EQ(d.columns, (std::vector<std::string>{"b", "c", "y"}));
  EXPECT_EQ(d.roles.targets, (std::vector<Index>{2}));
  EXPECT_EQ(d.targets(d.train).col(0), d.train.col(2));
  // y first and a copy of it after: dropping would remove the target.
  Matrix target_first(X.rows(), 3);
  target_first << X.col(2), X.col(0), X.col(2) * 3.0;
  const std::string msg = test::message_of<ConfigError>([&] {
    prepare(data_table(dir, target_first, "targets = [\"y\"]\ndrop_correlated = 0.99", {"y", "a", "ycopy"}));
  });
  EXPECT_NE(msg.find("drop_correlated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("would drop target column y"), std::string::npos) << msg;
}

TEST(ColumnRoles, BadTargetsAreRefusedNamingTheKey) {
  const fs::path dir = test::temp_dir("roles-bad");
  const Matrix X = conditional_rows(50);
  auto refused = [&](const std::string& keys) {
    return test::message_of<ConfigError>([&] { prepare(data_table(dir, X, keys)); });
  };
  std::string msg = refused("targets = [\"z\"]");
  EXPECT_NE(msg.find("data.targets"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no column \"z\" in the data (its columns: a, b, y)"), std::string::npos) << msg;
  msg = refused("targets = [\"a\", \"b\", \"y\"]");
  EXPECT_NE(msg.find("names every column of the data"), std::string::npos) << msg;
  msg = refused("targets = [\"y\"]\nexclude = [\"y\"]");
  EXPECT_NE(msg.find("column \"y\" is removed by `exclude`"), std::string::npos) << msg;
  msg = refused("targets = [\"y\", \"y\"]");
  EXPECT_NE(msg.find("listed twice"), std::string::npos) << msg;
  msg = refused("targets = []");
  EXPECT_NE(msg.find("lists no column"), std::string::npos) << msg;
  msg = refused("targets = [2]");
  EXPECT_NE(msg.find("data.targets"), std::string::npos) << msg;
}

TEST(ColumnRoles, UnnamedDataNameTargetsByPosition) {
  const fs::path dir = test::temp_dir("roles-npy");
  RandomStream rng(2, "npy");
  InMemoryData in{rng.normal_matrix(60, 3), {}};
  const Dataset d = prepare_dataset(test::plugin_registry(), test::config_from("targets = [\"x1\"]"), in, 3);
  EXPECT_EQ(d.roles.targets, (std::vector<Index>{1}));
  EXPECT_EQ(d.columns, (std::vector<std::string>{"x0", "x1", "x2"}));
}

// ---- pipelines ----------------------------------------------------------------------------------

std::string plugins_table() {
  return "[plugins]\npaths = [\"" + test::plugin_dir().string() + "\", \"" + KEF_PIPELINE_FIXTURE_DIR +
         "\"]\n";
}

std::string linear_gaussian_pipeline(const std::string& data_keys) {
  return "schema_version = 1\nseed = 4\n[data]\n" + data_keys +
         "\n[[model]]\nname = \"lg\"\n[model.estimator]\ntype = \"pipeline_fixture_linear_gaussian\"\n" +
         plugins_table();
}

// p(y | x) = N(B [x; 1], Σ) by least squares on the raw training rows: the direct formula.
double direct_log_density(const Matrix& train, const Vector& row) {
  const Index n = train.rows();
  Matrix design(n, 3);
  design << train.leftCols(2), Matrix::Ones(n, 1);
  const Vector beta = (design.transpose() * design).ldlt().solve(design.transpose() * train.col(2));
  const Vector r = train.col(2) - design * beta;
  const double var = r.squaredNorm() / static_cast<double>(n);
  const double mean = beta[0] * row[0] + beta[1] * row[1] + beta[2];
  return -0.5 * (row[2] - mean) * (row[2] - mean) / var - 0.5 * std::log(2.0 * std::numbers::pi * var);
}

TEST(ColumnRoles, AConditionalEstimatorFitsOnTheRolesAndItsModelIsTheDirectFormula) {
  const Matrix X = conditional_rows(500);
  const Config pipeline = Config::parse_string(
      linear_gaussian_pipeline("targets = [\"y\"]\nwhiten = true\nshuffle = false\nsplit = { test = 100 }"),
      "lg.toml");
  RunOptions options;
  options.quiet = true;
  const RunResult r = run_pipeline(pipeline, InMemoryData{X, kColumns}, options);
  ASSERT_EQ(r.models.size(), 1u);
  const Model& model = *r.models[0].second;
  const ConditionalModel* c = model.conditional();
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(model.has(Facet::ConditionalDensity));
  EXPECT_FALSE(model.has(Facet::LogDensity));
  const Matrix train = X.topRows(400), test = X.bottomRows(100);
  // In data units, through the block-diagonal whitening: the least-squares fit is equivariant under
  // affine maps of x and of y, so the fit in whitened coordinates seen in data units is the direct
  // fit on the raw rows.
  const Vector lp = c->log_unnormalized(test.leftCols(2), test.rightCols(1));
  for (Index n = 0; n < test.rows(); ++n)
    EXPECT_NEAR(lp[n], direct_log_density(train, test.row(n).transpose()), 1e-9) << "row " << n;
  // ∇_y against central differences of log p(y | x).
  const Matrix s = c->score(test.leftCols(2), test.rightCols(1));
  for (Index n = 0; n < 5; ++n) {
    const double h = 1e-5;
    Matrix yp = test.row(n).tail(1), ym = yp;
    yp(0, 0) += h;
    ym(0, 0) -= h;
    const Matrix x = test.row(n).head(2);
    const double fd = (c->log_unnormalized(x, yp)[0] - c->log_unnormalized(x, ym)[0]) / (2 * h);
    EXPECT_NEAR(s(n, 0), fd, 1e-6);
  }
  // Draws given one x: their mean and variance are the model's (5 standard errors).
  const Index m = 20000;
  const Matrix x0 = Matrix::Constant(m, 2, 0.5);
  RandomStream rng(9, "draws");
  const Matrix y = c->sample(x0, rng);
  const double mean = y.mean();
  const double var = (y.array() - mean).square().mean();
  // The model's mean and variance at x0, from its density: the maximiser and the curvature.
  Matrix probe(1, 1);
  probe(0, 0) = 0.0;
  const double s0 = c->score(x0.topRows(1), probe)(0, 0);
  probe(0, 0) = 1.0;
  const double s1 = c->score(x0.topRows(1), probe)(0, 0);
  const double model_var = -1.0 / (s1 - s0);
  const double model_mean = s0 * model_var;
  EXPECT_NEAR(mean, model_mean, 5.0 * std::sqrt(model_var / m));
  EXPECT_NEAR(var, model_var, 5.0 * model_var * std::sqrt(2.0 / m));
  const Json results = Json::parse(r.results_json);
  EXPECT_EQ(results["data"]["preprocessing"]["targets"], Json::array({"y"}));
}

// The build's plugins and the pipeline fixture (whose loader reads the linear-Gaussian model).
Registry& fixture_registry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    register_core_components(*r);
    r->load_plugins(plugin_search_path({test::plugin_dir().string(), KEF_PIPELINE_FIXTURE_DIR}));
    return r;
  }();
  return *registry;
}

TEST(ColumnRoles, SavedConditionalModelsKeepTheirRolesAndBlockMaps) {
  const fs::path dir = test::temp_dir("roles-save");
  const Matrix X = conditional_rows(300);
  const Config pipeline = Config::parse_string(
      linear_gaussian_pipeline("targets = [\"y\"]\nwhiten = true\nshuffle = false\nsplit = { test = 30 }"), "lg.toml");
  RunOptions options;
  options.quiet = true;
  options.output_dir = (dir / "run").string();
  const RunResult r = run_pipeline(pipeline, InMemoryData{X, kColumns}, options, true);
  ASSERT_TRUE(r.output_dir);
  const SavedModel saved = load_saved_model(dir / "run" / "models" / "lg", fixture_registry());
  EXPECT_EQ(saved.transform.roles, r.data.roles);
  EXPECT_EQ(saved.transform.matrix, r.data.transform.matrix);
  EXPECT_EQ(saved.transform.input_map(), r.data.transform.input_map());
  EXPECT_EQ(saved.transform.target_map(), r.data.transform.target_map());
  EXPECT_EQ(saved.transform.columns, kColumns);
  // Reloaded in data units, bitwise the model the run returned.
  const ModelPtr reloaded = make_data_units_model(saved.model, saved.transform);
  const Matrix test = X.bottomRows(30);
  EXPECT_EQ(reloaded->conditional()->log_unnormalized(test.leftCols(2), test.rightCols(1)),
            r.models[0].second->conditional()->log_unnormalized(test.leftCols(2), test.rightCols(1)));
  // `kef score` on whole rows (a, b, y): log p(y | x) and ∂_y, in data units. The fixture's density is
  // normalised (log Z(x) = 0), so --normalize changes nothing, and the values are the direct formula
  // on the raw training rows (the fit is equivariant under the whitening: see the test above).
  const std::string model_dir = (dir / "run" / "models" / "lg").string();
  const Matrix scored = score_saved_model(saved, test, true, model_dir);
  ASSERT_EQ(scored.rows(), test.rows());
  ASSERT_EQ(scored.cols(), 2);
  EXPECT_EQ(scored, score_saved_model(saved, test, false, model_dir));
  EXPECT_EQ(scored.col(0), reloaded->conditional()->log_unnormalized(test.leftCols(2), test.rightCols(1)));
  EXPECT_EQ(scored.col(1), reloaded->conditional()->score(test.leftCols(2), test.rightCols(1)));
  for (Index n = 0; n < test.rows(); ++n)
    EXPECT_NEAR(scored(n, 0), direct_log_density(X.topRows(270), test.row(n).transpose()), 1e-9) << "row " << n;
  // The columns the roles name, wherever they are: x and y are read from each row by the saved roles.
  EXPECT_EQ(saved.transform.roles.targets, std::vector<Index>{2});
  // A saved record whose map mixes the two roles is refused on load.
  const fs::path toml = dir / "run" / "models" / "lg" / "model.toml";
  std::stringstream text;
  text << std::ifstream(toml).rdbuf();
  std::string edited = text.str();
  const auto at = edited.find("target_columns = [ 2 ]");
  ASSERT_NE(at, std::string::npos) << edited;
  edited.replace(at, std::string("target_columns = [ 2 ]").size(), "target_columns = [1]");
  std::ofstream(toml) << edited;
  const std::string bad = test::message_of<ModelFileError>(
      [&] { load_saved_model(dir / "run" / "models" / "lg", fixture_registry()); });
  EXPECT_NE(bad.find("mixes an input and a target"), std::string::npos) << bad;
}

TEST(ColumnRoles, ValidateRefusesTargetsWithAnUnconditionalEstimatorAndTheReverse) {
  const Matrix X = conditional_rows(100);
  const std::string lite =
      "[[model]]\nname = \"m\"\n[model.estimator]\ntype = \"lite\"\ninducing_points = 10\n"
      "[model.kernel]\ntype = \"gaussian\"\nsigma = 1.0\n[model.base_measure]\ntype = "
      "\"gaussian\"\nstd = 3.0\n";
  const Config with_targets = Config::parse_string(
      "schema_version = 1\n[data]\ntargets = [\"y\"]\n" + lite + plugins_table(), "lite.toml");
  std::string msg = test::message_of<ConfigError>([&] {
    validate_pipeline(with_targets, InMemoryData{X, kColumns}, RunOptions{});
  });
  EXPECT_NE(msg.find("data.targets"), std::string::npos) << msg;
  EXPECT_NE(msg.find("estimator `lite` of model `m` fits no conditional density"), std::string::npos) << msg;
  const Config no_targets = Config::parse_string(linear_gaussian_pipeline(""), "lg.toml");
  msg = test::message_of<ConfigError>([&] {
    validate_pipeline(no_targets, InMemoryData{X, kColumns}, RunOptions{});
  });
  EXPECT_NE(msg.find("estimator `pipeline_fixture_linear_gaussian` fits a conditional density p(y | x), and "
                     "the data have no target columns"),
            std::string::npos)
      << msg;
}

TEST(ColumnRoles, TheCommandRunsAConditionalPipelineAndScoresAndEvaluatesItsModel) {
  const fs::path dir = test::temp_dir("roles-cli");
  test::write_file(dir, "data.csv", csv_text(kColumns, conditional_rows(200)));
  const fs::path cfg = test::write_file(
      dir, "p.toml", linear_gaussian_pipeline("type = \"file\"\npath = \"data.csv\"\ntargets = [\"y\"]\nstandardize = true"));
  test::CommandResult r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Json results = test::read_json(dir / "out" / "results.json");
  EXPECT_EQ(results["data"]["preprocessing"]["targets"], Json::array({"y"}));
  const std::string model = (dir / "out" / "models" / "lg").string();
  const std::string env = std::string("KEF_PLUGIN_PATH=") + KEF_PIPELINE_FIXTURE_DIR;  // the model's loader
  r = test::kef_cmd("sample " + model + " -n 10 --out " + (dir / "s.npy").string(), env);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kef sample: the model at " + model + " is a conditional density p(y | x)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("inputs x [a, b], targets y [y]"), std::string::npos) << r.output;
  // kef score: log p(y | x) and ∂_y per row, in data units: what the reloaded model gives.
  const std::string data = (dir / "data.csv").string();
  r = test::kef_cmd("score " + model + " --data " + data + " --normalize --quiet --out " +
                    (dir / "score.npy").string(), env);
  ASSERT_EQ(r.status, 0) << r.output;
  const Matrix scored = read_npy(dir / "score.npy");
  const Matrix rows = conditional_rows(200);
  Registry registry;
  register_core_components(registry);
  registry.load_plugins(plugin_search_path({test::plugin_dir().string(), KEF_PIPELINE_FIXTURE_DIR}));
  const SavedModel saved = load_saved_model(model, registry);
  ASSERT_EQ(scored.rows(), 200);
  ASSERT_EQ(scored.cols(), 2);
  const ModelPtr in_data_units = make_data_units_model(saved.model, saved.transform);
  for (Index n = 0; n < 200; ++n) {
    const Matrix x = rows.row(n).head(2), y = rows.row(n).tail(1);
    EXPECT_NEAR(scored(n, 0), in_data_units->conditional()->log_unnormalized(x, y)[0], 1e-12) << n;
    EXPECT_NEAR(scored(n, 1), in_data_units->conditional()->score(x, y)(0, 0), 1e-12) << n;
  }
  // kef eval with the conditional evaluators: the log-likelihood is the mean of the scored log densities
  // (the fixture's Z(x) is exact), the score-matching loss the direct mean in the model's coordinates.
  r = test::kef_cmd("eval " + model + " --data " + data +
                        " --type conditional_log_likelihood --quiet --out " + (dir / "ll.json").string(),
                    env);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NEAR(test::read_json(dir / "ll.json")["metrics"]["conditional_log_likelihood"].get<double>(),
              scored.col(0).mean(), 1e-12);
  r = test::kef_cmd("eval " + model + " --data " + data +
                        " --type conditional_score_matching_loss --quiet --out " + (dir / "sm.json").string(),
                    env);
  ASSERT_EQ(r.status, 0) << r.output;
  const Matrix z = saved.transform.to_model(rows);
  Matrix sz, lz;
  saved.model->conditional()->score_and_laplacian(z.leftCols(2), z.rightCols(1), sz, lz);
  const Json sm = test::read_json(dir / "sm.json");
  EXPECT_NEAR(sm["metrics"]["conditional_score_matching_loss"].get<double>(),
              (lz.array() + 0.5 * sz.array().square()).rowwise().sum().mean(), 1e-12);
  EXPECT_EQ(sm["metric_spaces"]["conditional_score_matching_loss"], "standardized");
  // An evaluator of densities of whole rows is refused, naming what the model lacks.
  r = test::kef_cmd("eval " + model + " --data " + data + " --type score_matching_loss", env);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kef eval: evaluator score_matching_loss: model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Laplacian"), std::string::npos) << r.output;
  // validate with an unconditional estimator names `targets` and the estimator, exit 2.
  const fs::path bad = test::write_file(
      dir, "bad.toml",
      "schema_version = 1\n[data]\ntype = \"file\"\npath = \"data.csv\"\ntargets = [\"y\"]\n[[model]]\nname = "
      "\"m\"\n[model.estimator]\ntype = \"pipeline_fixture_gaussian\"\n" +
          plugins_table());
  r = test::kef_cmd("validate " + bad.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("data.targets"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("estimator `pipeline_fixture_gaussian` of model `m`"), std::string::npos) << r.output;
}

// ---- the in-memory entry point --------------------------------------------------------------------

std::string lite_pipeline(const std::string& data_source) {
  return "schema_version = 1\nseed = 8\n[data]\n" + data_source +
         "standardize = true\nsplit = { test = 60, validation = 20 }\n"
         "[[model]]\nname = \"lite\"\n[model.estimator]\ntype = \"lite\"\ninducing_points = 30\n"
         "[model.kernel]\ntype = \"gaussian\"\nsigma = \"median\"\n[model.base_measure]\ntype = "
         "\"gaussian\"\n"
         "std = 3.0\n[[evaluate]]\ntype = \"score_matching_loss\"\n[[evaluate]]\ntype = \"fssd\"\nJ = 5\n" +
         plugins_table();
}

TEST(InMemoryRun, EqualsTheFileRunOfTheSameDataBitwise) {
  const fs::path dir = test::temp_dir("in-memory");
  const Matrix X = conditional_rows(400);
  test::write_file(dir, "data.csv", csv_text(kColumns, X));
  const fs::path toml =
      test::write_file(dir, "p.toml", lite_pipeline("type = \"file\"\npath = \"data.csv\"\n"));
  RunOptions options;
  options.quiet = true;
  options.output_dir = (dir / "file-run").string();
  run_pipeline(toml.string(), options);
  const Json file_results = test::read_json(dir / "file-run" / "results.json");

  // The same pipeline file, its [data] source replaced by the matrix; nothing written.
  RunOptions memory_options;
  memory_options.quiet = true;
  const RunResult r =
      run_pipeline(Config::parse_file(toml.string()), InMemoryData{X, kColumns}, memory_options);
  const Json results = Json::parse(r.results_json);
  EXPECT_FALSE(r.output_dir);
  EXPECT_EQ(results["models"]["lite"]["metrics"], file_results["models"]["lite"]["metrics"]);
  EXPECT_EQ(results["models"]["lite"]["chosen"], file_results["models"]["lite"]["chosen"]);
  EXPECT_TRUE(results["models"]["lite"]["model_dir"].is_null());
  EXPECT_NE(
      results["data"]["provenance"].get<std::string>().find("in-memory matrix (400 x 3), replacing [data] "
                                                            "type = \"file\""),
      std::string::npos);
  EXPECT_EQ(results["data"]["columns"], file_results["data"]["columns"]);
  // The models: the file run's saved model in data units against the in-memory one, bitwise.
  const SavedModel saved = load_saved_model(dir / "file-run" / "models" / "lite", test::plugin_registry());
  const ModelPtr from_file = make_data_units_model(saved.model, saved.transform);
  ASSERT_EQ(r.models.size(), 1u);
  EXPECT_EQ(r.models[0].first, "lite");
  EXPECT_EQ(r.models[0].second->log_unnormalized(X), from_file->log_unnormalized(X));
  EXPECT_EQ(r.models[0].second->score(X), from_file->score(X));
  // The fitted model is in standardized coordinates: the data-units one adds log|det A|.
  EXPECT_EQ(r.fitted[0].second->log_unnormalized(r.data.test), saved.model->log_unnormalized(r.data.test));
  EXPECT_EQ(r.data.test.rows(), 60);
}

TEST(InMemoryRun, WritesTheOutputDirectoryWhenAsked) {
  const fs::path dir = test::temp_dir("in-memory-write");
  const Matrix X = conditional_rows(300);
  RunOptions options;
  options.quiet = true;
  options.output_dir = (dir / "out").string();
  options.overrides = {"output.save_splits=true"};
  const RunResult r =
      run_pipeline(Config::parse_string(lite_pipeline(""), "lite.toml"), InMemoryData{X, {}}, options, true);
  ASSERT_TRUE(r.output_dir);
  const Json on_disk = test::read_json(dir / "out" / "results.json");
  EXPECT_EQ(on_disk, Json::parse(r.results_json));
  EXPECT_EQ(on_disk["models"]["lite"]["model_dir"], "models/lite");
  EXPECT_TRUE(fs::exists(dir / "out" / "models" / "lite" / "model.toml"));
  EXPECT_EQ(on_disk["data"]["columns"], Json::array({"x0", "x1", "x2"}));
  // save_splits: the shuffled splits in data units (standardize undone); together they are the rows.
  const Matrix train = read_npy(dir / "out" / "data" / "train.npy"),
               validation = read_npy(dir / "out" / "data" / "validation.npy"),
               test = read_npy(dir / "out" / "data" / "test.npy");
  ASSERT_EQ(train.rows(), 220);
  ASSERT_EQ(validation.rows(), 20);
  ASSERT_EQ(test.rows(), 60);
  Matrix all(300, 3);
  all << train, validation, test;
  std::vector<bool> matched(300, false);
  for (Index i = 0; i < 300; ++i) {
    Index found = -1;
    for (Index j = 0; j < 300 && found < 0; ++j)
      if (!matched[static_cast<std::size_t>(j)] &&
          (all.row(i) - X.row(j)).cwiseAbs().maxCoeff() <= 1e-12 * (1 + X.row(j).cwiseAbs().maxCoeff()))
        found = j;
    ASSERT_GE(found, 0) << "saved row " << i << " is no row of the data";
    matched[static_cast<std::size_t>(found)] = true;
  }
  EXPECT_NE(Matrix(all.topRows(5)), Matrix(X.topRows(5)));  // shuffled: not the source order
}

TEST(InMemoryRun, BadMatricesAreDataErrorsNamingTheRowAndColumn) {
  const Config pipeline = Config::parse_string(lite_pipeline(""), "lite.toml");
  Matrix X = conditional_rows(100);
  X(17, 1) = std::numeric_limits<double>::quiet_NaN();
  std::string msg = test::message_of<DataError>([&] {
    validate_pipeline(pipeline, InMemoryData{X, kColumns}, RunOptions{});
  });
  EXPECT_NE(msg.find("in-memory data: row 17 (0-based), column b: non-finite value"), std::string::npos)
      << msg;
  X(17, 1) = 0.0;
  X(3, 0) = std::numeric_limits<double>::infinity();
  msg = test::message_of<DataError>([&] { validate_pipeline(pipeline, InMemoryData{X, {}}, RunOptions{}); });
  EXPECT_NE(msg.find("row 3 (0-based), column x0"), std::string::npos) << msg;
  X(3, 0) = 0.0;
  msg = test::message_of<DataError>([&] {
    validate_pipeline(pipeline, InMemoryData{X, {"a", "b"}}, RunOptions{});
  });
  EXPECT_NE(msg.find("2 column names (a, b) for a matrix of 3 columns"), std::string::npos) << msg;
  msg = test::message_of<DataError>([&] {
    validate_pipeline(pipeline, InMemoryData{X, {"a", "b", "a"}}, RunOptions{});
  });
  EXPECT_NE(msg.find("column name \"a\" appears twice"), std::string::npos) << msg;
  msg = test::message_of<DataError>([&] {
    validate_pipeline(pipeline, InMemoryData{Matrix(0, 3), {}}, RunOptions{});
  });
  EXPECT_NE(msg.find("the matrix is 0 x 3"), std::string::npos) << msg;
  // A typo in [data] is still an error when the source is replaced.
  const Config typo = Config::parse_string(
      "schema_version = 1\n[data]\nstandardise = true\n[[model]]\n"
      "[model.estimator]\ntype = \"lite\"\n" +
          plugins_table(),
      "t.toml");
  msg = test::message_of<ConfigError>([&] { validate_pipeline(typo, InMemoryData{X, {}}, RunOptions{}); });
  EXPECT_NE(msg.find("standardise"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kef::column_roles_test
