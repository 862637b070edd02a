// Saved models in data units and `kef sample`'s sampler flags and mixing check:
// a model fitted with `standardize = true` carries its map, and `kef score`, `kef eval` and
// `kef sample` work on raw rows; columns that do not match are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data_units_model.hpp"
#include "kef/data_io.hpp"
#include "kef/data_transform.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::read_json;
using test::kef_cmd;
using Result = test::CommandResult;
using Json = nlohmann::json;

void write_csv(const fs::path& p, const std::vector<std::string>& names, const Matrix& X) {
  std::ofstream out(p);
  for (std::size_t j = 0; j < names.size(); ++j) out << (j ? "," : "") << "\"" << names[j] << "\"";
  out << "\n";
  out.precision(17);
  for (Index i = 0; i < X.rows(); ++i) {
    for (Index j = 0; j < X.cols(); ++j) out << (j ? "," : "") << X(i, j);
    out << "\n";
  }
}

constexpr Index kTestRows = 40;

std::string csv_pipeline(const fs::path& csv) {
  return test::PipelineText()
      .seed(7)
      .data("type = \"file\"\npath = \"" + csv.string() + "\"\nshuffle = false\nstandardize = true\n" +
            "split = { test = " + std::to_string(kTestRows) + ", validation = 0 }")
      .lite("kef-g", 60, 0.7, 2.0)
      .evaluate("score_matching_loss")
      .evaluate("log_likelihood", "method = \"quadrature\"\ngrid = 128\nextent = [-6.0, 6.0, -6.0, 6.0]");
}

// The whole §1 story on one CSV with two named columns of very different scales.
void check_data_units(const fs::path& csv, const std::string& tag) {
  SCOPED_TRACE(tag);
  const fs::path dir = test::temp_dir("data-units-" + tag);
  const TableData raw = read_csv(csv);
  ASSERT_EQ(raw.columns.size(), 2u);
  const Index n = raw.values.rows(), n_train = n - kTestRows;
  const Matrix train = raw.values.topRows(n_train), test_rows = raw.values.bottomRows(kTestRows);

  // Independent standardisation of the training rows (population standard deviation).
  const Vector mean = train.colwise().mean().transpose();
  const Vector sd =
      ((train.rowwise() - mean.transpose()).array().square().colwise().sum() / static_cast<double>(n_train))
          .sqrt()
          .transpose();
  const double log_det = -(sd.array().log().sum());  // log|det A|, A = diag(1/sd): data -> model
  auto to_model = [&](const Matrix& X) -> Matrix {
    return ((X.rowwise() - mean.transpose()).array().rowwise() / sd.transpose().array()).matrix();
  };

  { std::ofstream(dir / "p.toml") << csv_pipeline(csv); }
  const Result run =
      kef_cmd("run " + (dir / "p.toml").string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const Json results = read_json(dir / "out" / "results.json");
  const Json& prep = results["data"]["preprocessing"];
  EXPECT_EQ(prep["kind"], "standardize");
  EXPECT_EQ(prep["columns"], Json(raw.columns));
  EXPECT_EQ(prep["model_space"], "standardized");
  EXPECT_NEAR(prep["log_abs_det"].get<double>(), log_det, 1e-12 * std::abs(log_det));
  const Json& m = results["models"]["kef-g"];
  const double ll = m["metrics"]["log_likelihood"].get<double>();
  const double ll_std = m["metrics"]["log_likelihood_standardized"].get<double>();
  EXPECT_NEAR(ll - ll_std, prep["log_abs_det"].get<double>(), 1e-12);
  EXPECT_EQ(m["metric_spaces"]["log_likelihood"], "data");
  EXPECT_EQ(m["metric_spaces"]["log_likelihood_standardized"], "standardized");
  EXPECT_EQ(m["metric_spaces"]["score_matching_loss"], "standardized");
  EXPECT_EQ(m["metric_spaces"]["log_normalizer"], "standardized");

  // The saved model records the map; it reloads bitwise, and saving it again changes nothing.
  const fs::path model_dir = dir / "out" / "models" / "kef-g";
  const SavedModel saved = load_saved_model(model_dir, test::plugin_registry());
  EXPECT_EQ(saved.transform.kind, "standardize");
  EXPECT_EQ(saved.transform.columns, raw.columns);
  EXPECT_EQ(saved.transform.log_abs_det, prep["log_abs_det"].get<double>());
  save_model(*saved.model, dir / "resaved", saved.transform);
  const SavedModel again = load_saved_model(dir / "resaved", test::plugin_registry());
  EXPECT_EQ(again.transform.matrix, saved.transform.matrix);
  EXPECT_EQ(again.transform.offset, saved.transform.offset);
  EXPECT_EQ(again.transform.log_abs_det, saved.transform.log_abs_det);
  EXPECT_EQ(again.transform.columns, saved.transform.columns);
  EXPECT_EQ(again.model->log_unnormalized(test_rows), saved.model->log_unnormalized(test_rows));
  // A record that disagrees with its arrays is refused, naming the file.
  {
    std::ifstream in(dir / "resaved" / "model.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    const auto at = toml.find("log_abs_det = ");
    ASSERT_NE(at, std::string::npos) << toml;
    toml.replace(at, toml.find('\n', at) - at, "log_abs_det = 1.5");
    std::ofstream(dir / "resaved" / "model.toml") << toml;
    try {
      load_saved_model(dir / "resaved", test::plugin_registry());
      ADD_FAILURE() << "expected ModelFileError";
    } catch (const ModelFileError& e) {
      EXPECT_NE(std::string(e.what()).find("log_abs_det"), std::string::npos) << e.what();
    }
  }

  // kef score on raw rows: log p~ in data units = standardised-space log p~ + log|det A|, and the
  // score by the chain rule (∇_x = ∇_z / sd).
  Matrix probe(3, 2);
  probe << mean[0], mean[1], mean[0] + sd[0], mean[1] - 0.5 * sd[1], test_rows(0, 0), test_rows(0, 1);
  write_csv(dir / "probe.csv", raw.columns, probe);
  const Result sc = kef_cmd("score " + model_dir.string() + " --data " + (dir / "probe.csv").string() +
                            " --out " + (dir / "probe.npy").string());
  ASSERT_EQ(sc.status, 0) << sc.output;
  const Matrix out = read_npy(dir / "probe.npy");
  ASSERT_EQ(out.rows(), 3);
  ASSERT_EQ(out.cols(), 3);
  const Matrix Z = to_model(probe);
  const Vector expected = saved.model->log_unnormalized(Z).array() + log_det;
  const Matrix expected_score = (saved.model->score(Z).array().rowwise() / sd.transpose().array()).matrix();
  for (Index i = 0; i < 3; ++i) {
    EXPECT_NEAR(out(i, 0), expected[i], 1e-9 * (1 + std::abs(expected[i]))) << "row " << i;
    for (Index d = 0; d < 2; ++d)
      EXPECT_NEAR(out(i, 1 + d), expected_score(i, d), 1e-9 * (1 + std::abs(expected_score(i, d))));
  }
  // The score column is the gradient of the log-density column, in data units.
  const ModelPtr data_model = make_data_units_model(saved.model, saved.transform);
  for (Index i = 0; i < 3; ++i) {
    const Vector g = test::numerical_gradient(
        [&](const Vector& x) { return data_model->log_unnormalized(x.transpose())[0]; },
        probe.row(i).transpose(), 1e-4 * sd.minCoeff());
    for (Index d = 0; d < 2; ++d)
      EXPECT_NEAR(g[d], out(i, 1 + d), 1e-6 * (1 + std::abs(out(i, 1 + d)))) << "row " << i << " dim " << d;
  }
  // Bitwise the library's own evaluation of the reloaded model.
  EXPECT_EQ(out, score_saved_model(saved, probe, false, model_dir.string()));

  // Columns swapped in the file: refused, naming the columns; --columns puts them back in order.
  const Matrix swapped = (Matrix(probe.rows(), 2) << probe.col(1), probe.col(0)).finished();
  write_csv(dir / "swapped.csv", {raw.columns[1], raw.columns[0]}, swapped);
  const Result bad = kef_cmd("score " + model_dir.string() + " --data " + (dir / "swapped.csv").string() +
                             " --out " + (dir / "bad.npy").string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("[" + raw.columns[1] + ", " + raw.columns[0] + "]"), std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("[" + raw.columns[0] + ", " + raw.columns[1] + "]"), std::string::npos)
      << bad.output;
  EXPECT_FALSE(fs::exists(dir / "bad.npy"));
  const Result reordered =
      kef_cmd("score " + model_dir.string() + " --data " + (dir / "swapped.csv").string() + " --columns " +
              raw.columns[0] + " --columns " + raw.columns[1] + " --out " + (dir / "reordered.npy").string());
  ASSERT_EQ(reordered.status, 0) << reordered.output;
  EXPECT_EQ(read_npy(dir / "reordered.npy"), out);
  // .npy input is checked by count.
  write_npy(dir / "three.npy", Matrix(Matrix::Zero(2, 3)));
  const Result wide = kef_cmd("score " + model_dir.string() + " --data " + (dir / "three.npy").string() +
                              " --out " + (dir / "wide.npy").string());
  EXPECT_EQ(wide.status, 2) << wide.output;
  EXPECT_NE(wide.output.find(raw.columns[0]), std::string::npos) << wide.output;
  write_npy(dir / "probe_in.npy", probe);
  ASSERT_EQ(kef_cmd("score " + model_dir.string() + " --data " + (dir / "probe_in.npy").string() + " --out " +
                    (dir / "from_npy.npy").string())
                .status,
            0);
  EXPECT_EQ(read_npy(dir / "from_npy.npy"), out);
  // --normalize needs a known normaliser, which a lite model does not have: refused, saying why.
  const Result norm = kef_cmd("score " + model_dir.string() + " --normalize --data " +
                              (dir / "probe.csv").string() + " --out " + (dir / "norm.npy").string());
  EXPECT_EQ(norm.status, 2) << norm.output;
  EXPECT_NE(norm.output.find("normalising constant"), std::string::npos) << norm.output;
  EXPECT_FALSE(fs::exists(dir / "norm.npy"));

  // kef eval on the raw test rows reproduces the pipeline's log-likelihoods in both spaces, and
  // they differ by exactly log|det A|.
  write_csv(dir / "test.csv", raw.columns, test_rows);
  const Result ev = kef_cmd("eval " + model_dir.string() + " --data " + (dir / "test.csv").string() +
                            " --type log_likelihood --set method=quadrature --set grid=128 "
                            "--set extent=[-6.0,6.0,-6.0,6.0] --quiet --out " +
                            (dir / "eval.json").string());
  ASSERT_EQ(ev.status, 0) << ev.output;
  const Json ej = read_json(dir / "eval.json");
  const double ev_ll = ej["metrics"]["log_likelihood"].get<double>();
  const double ev_std = ej["metrics"]["log_likelihood_standardized"].get<double>();
  EXPECT_NEAR(ev_ll, ll, 1e-9 * std::abs(ll));
  EXPECT_NEAR(ev_std, ll_std, 1e-9 * std::abs(ll_std));
  EXPECT_NEAR(ev_ll - ev_std, saved.transform.log_abs_det, 1e-12);
  EXPECT_EQ(ej["metric_spaces"]["log_likelihood"], "data");
  EXPECT_EQ(ej["metric_spaces"]["log_likelihood_standardized"], "standardized");
  EXPECT_EQ(ej["preprocessing"]["kind"], "standardize");
  const Result ev_bad = kef_cmd("eval " + model_dir.string() + " --data " + (dir / "swapped.csv").string() +
                                " --type score_matching_loss --quiet");
  EXPECT_EQ(ev_bad.status, 2) << ev_bad.output;

  // kef sample returns draws in data units: each column's mean lies within the data's range (a
  // standardised draw's would be near 0, outside it for a column like waiting times), and mapped
  // to model coordinates independently the draws sit where the standardised data do. (Bimodal
  // data: the chains need not visit both modes in proportion, so no tighter check.)
  const Result smp =
      kef_cmd("sample " + model_dir.string() + " -n 400 --seed 3 --quiet --allow-poor-mixing --out " +
              (dir / "samples.npy").string());
  ASSERT_EQ(smp.status, 0) << smp.output;
  const Matrix S = read_npy(dir / "samples.npy");
  ASSERT_EQ(S.rows(), 400);
  const Matrix SZ = to_model(S);
  for (Index d = 0; d < 2; ++d) {
    EXPECT_GT(S.col(d).mean(), raw.values.col(d).minCoeff()) << "column " << d;
    EXPECT_LT(S.col(d).mean(), raw.values.col(d).maxCoeff()) << "column " << d;
    EXPECT_LT(std::abs(SZ.col(d).mean()), 1.5) << "column " << d;
    EXPECT_LT(SZ.col(d).cwiseAbs().maxCoeff(), 6.0) << "column " << d;
  }
}

TEST(DataUnits, GeyserStandardizedModelScoresEvaluatesAndSamplesInDataUnits) {
  // A reported case: Old Faithful (waiting, duration), shipped in data/ (data/README.md).
  const fs::path geyser = test::source_dir() / "data" / "geyser.csv";
  ASSERT_TRUE(fs::exists(geyser)) << geyser << " is missing: the repository ships it";
  check_data_units(geyser, "geyser");
}

TEST(DataUnits, TwoScaleCsvScoresEvaluatesAndSamplesInDataUnits) {
  // A stand-in with geyser's scales (minutes and a few units), two clusters, always available.
  RandomStream rng(11, "two-scale");
  Matrix X(300, 2);
  for (Index i = 0; i < X.rows(); ++i) {
    const bool long_wait = rng.uniform() < 0.65;
    X(i, 0) = (long_wait ? 80.0 : 55.0) + 6.0 * rng.normal();
    X(i, 1) = (long_wait ? 4.2 : 2.0) + 0.4 * rng.normal();
  }
  const fs::path dir = test::temp_dir("two-scale-data");
  write_csv(dir / "two_scale.csv", {"wait", "dur"}, X);
  check_data_units(dir / "two_scale.csv", "two-scale");
}

TEST(DataUnits, TrueLogLikelihoodInDataUnitsDoesNotDependOnThePreprocessing) {
  // The exact density of a synthetic source, evaluated on the same raw test rows: whitening or
  // standardising changes the model-space value by log|det A|, and the reported data-units value
  // must come back to the unpreprocessed one. (A sign error in the Jacobian would show as 2 log|det A|.)
  const fs::path dir = test::temp_dir("true-ll-units");
  auto run = [&](const std::string& name, const std::string& extra) {
    std::ofstream(dir / (name + ".toml")) << test::PipelineText()
                                                 .seed(5)
                                                 .banana(600, 100)
                                                 .data_keys(extra)
                                                 .lite("m", 30, 1.0, 3.0)
                                                 .evaluate("true_log_likelihood")
                                                 .str();
    const Result r =
        kef_cmd("run " + (dir / (name + ".toml")).string() + " --quiet --output " + (dir / name).string());
    EXPECT_EQ(r.status, 0) << r.output;
    return read_json(dir / name / "results.json");
  };
  const Json plain = run("plain", "");
  const double reference = plain["models"]["m"]["metrics"]["true_log_likelihood"].get<double>();
  EXPECT_EQ(plain["models"]["m"]["metric_spaces"]["true_log_likelihood"], "data");
  EXPECT_FALSE(plain["models"]["m"]["metrics"].contains("true_log_likelihood_standardized"));
  for (const char* kind : {"standardize", "whiten"}) {
    SCOPED_TRACE(kind);
    const Json j = run(kind, std::string(kind) + " = true\n");
    const Json& m = j["models"]["m"];
    const std::string space = std::string(kind) == "whiten" ? "whitened" : "standardized";
    const double log_det = j["data"]["preprocessing"]["log_abs_det"].get<double>();
    EXPECT_GT(std::abs(log_det), 0.1);
    EXPECT_NEAR(m["metrics"]["true_log_likelihood"].get<double>(), reference, 1e-9 * std::abs(reference));
    EXPECT_NEAR(m["metrics"]["true_log_likelihood_" + space].get<double>(), reference - log_det,
                1e-9 * std::abs(reference));
    EXPECT_EQ(m["metric_spaces"]["true_log_likelihood_" + space], space);
  }
  // A comparison needs both models in the same coordinates: refused, naming the model.
  write_npy(dir / "rows.npy", Matrix(Matrix::Zero(5, 2)));
  const Result cmp = kef_cmd("eval " + (dir / "standardize" / "models" / "m").string() + " --against " +
                             (dir / "plain" / "models" / "m").string() + " --data " +
                             (dir / "rows.npy").string() + " --type relative_fssd --quiet");
  EXPECT_EQ(cmp.status, 2) << cmp.output;
  EXPECT_NE(cmp.output.find("other coordinates"), std::string::npos) << cmp.output;
}

TEST(DataUnits, LogLikelihoodMetricsMoveByTheLogDeterminantOthersStay) {
  DataTransform t = make_data_transform("standardize", Vector(Vector::Constant(2, 0.5)).asDiagonal(),
                                        Vector::Zero(2), {"a", "b"});
  EXPECT_DOUBLE_EQ(t.log_abs_det, 2 * std::log(0.5));
  std::vector<std::pair<std::string, std::string>> spaces;
  const auto m = metrics_in_data_units({{"log_likelihood", -1.0},
                                        {"is.log_likelihood", -2.0},
                                        {"true_log_likelihood", -3.0},
                                        {"fisher_divergence", 4.0},
                                        {"log_likelihood_stderr_like", 5.0}},
                                       t, &spaces);
  ASSERT_EQ(m.size(), 8u);
  EXPECT_EQ(m[0].first, "log_likelihood");
  EXPECT_DOUBLE_EQ(m[0].second, -1.0 + t.log_abs_det);
  EXPECT_EQ(m[1].first, "log_likelihood_standardized");
  EXPECT_EQ(m[1].second, -1.0);
  EXPECT_EQ(m[2].first, "is.log_likelihood");
  EXPECT_EQ(m[3].first, "is.log_likelihood_standardized");
  EXPECT_EQ(m[4].first, "true_log_likelihood");
  EXPECT_EQ(m[6].first, "fisher_divergence");
  EXPECT_EQ(m[6].second, 4.0);
  EXPECT_EQ(spaces[6].second, "standardized");
  EXPECT_EQ(m[7].first, "log_likelihood_stderr_like");
  EXPECT_EQ(spaces[0].second, "data");
  // The identity changes nothing and calls everything data.
  const auto same = metrics_in_data_units({{"log_likelihood", -1.0}}, DataTransform{}, &spaces);
  EXPECT_EQ(same.size(), 1u);
  EXPECT_EQ(spaces[0].second, "data");
}

// N(0, I) in model coordinates, normalised, with an exact sampler.
class StandardNormal final : public Model {
 public:
  explicit StandardNormal(Index dim) : dim_(dim) {}
  Index dim() const override { return dim_; }
  std::string type_name() const override { return "test/standard_normal"; }
  Vector log_unnormalized(const Matrix& Z) const override { return -0.5 * Z.rowwise().squaredNorm(); }
  Matrix score(const Matrix& Z) const override { return -Z; }
  void score_and_laplacian(const Matrix& Z, Matrix& s, Matrix& l) const override {
    s = -Z;
    l = Matrix::Constant(Z.rows(), dim_, -1.0);
  }
  bool has_hessian() const override { return true; }
  Matrix hessian(const Vector&) const override { return -Matrix::Identity(dim_, dim_); }
  std::optional<double> log_normalizer() const override {
    return 0.5 * static_cast<double>(dim_) * std::log(2 * M_PI);
  }
  bool can_sample() const override { return true; }
  Matrix sample(Index n, RandomStream& rng) const override { return rng.normal_matrix(n, dim_); }
  std::string describe() const override { return "N(0, I)"; }

 private:
  Index dim_;
};

TEST(DataUnits, WhitenedModelInDataUnitsIsTheExactChangeOfVariables) {
  // z = A x + c with z ~ N(0, I) means x ~ N(−A⁻¹c, (AᵀA)⁻¹): the normalised data-units density
  // (kef score --normalize's path), the score, the Laplacian and the samples against that Gaussian.
  Matrix A(2, 2);
  A << 2.0, 0.5, 0.5, 1.0;
  Vector c(2);
  c << 0.3, -1.0;
  const DataTransform t = make_data_transform("whiten", A, c, {"u", "v"});
  EXPECT_NEAR(t.log_abs_det, std::log(2.0 - 0.25), 1e-15);
  EXPECT_EQ(t.model_space(), "whitened");
  Matrix X(3, 2);
  X << 0.1, 0.2, -1.0, 3.0, 5.0, -2.0;
  EXPECT_LT((t.to_data(t.to_model(X)) - X).cwiseAbs().maxCoeff(), 1e-14);

  const SavedModel saved{std::make_shared<StandardNormal>(2), t};
  const Matrix out = score_saved_model(saved, X, true, "test");
  const Matrix cov = (A.transpose() * A).inverse();
  const Vector mu = -A.inverse() * c;
  const Matrix prec = A.transpose() * A;
  for (Index i = 0; i < X.rows(); ++i) {
    const Vector d = X.row(i).transpose() - mu;
    const double exact = -0.5 * d.dot(prec * d) - std::log(2 * M_PI) - 0.5 * std::log(cov.determinant());
    EXPECT_NEAR(out(i, 0), exact, 1e-12 * (1 + std::abs(exact))) << "row " << i;
    const Vector score = -prec * d;
    EXPECT_NEAR(out(i, 1), score[0], 1e-12 * (1 + std::abs(score[0])));
    EXPECT_NEAR(out(i, 2), score[1], 1e-12 * (1 + std::abs(score[1])));
  }
  const ModelPtr m = make_data_units_model(saved.model, saved.transform);
  Matrix s, lap;
  m->score_and_laplacian(X, s, lap);
  for (Index i = 0; i < X.rows(); ++i) EXPECT_NEAR(lap(i, 1), -prec(1, 1), 1e-12);
  RandomStream rng(2, "whitened-samples");
  const Matrix draws = m->sample(20000, rng);
  EXPECT_LT((draws.colwise().mean().transpose() - mu).cwiseAbs().maxCoeff(), 0.03);

  // Without a known normaliser, --normalize is refused naming the model.
  class NoNormaliser final : public Model {
   public:
    Index dim() const override { return 2; }
    std::string type_name() const override { return "test/unnormalised"; }
    Vector log_unnormalized(const Matrix& Z) const override { return Vector::Zero(Z.rows()); }
    Matrix score(const Matrix& Z) const override { return Matrix::Zero(Z.rows(), 2); }
    void score_and_laplacian(const Matrix& Z, Matrix& sc, Matrix& l) const override {
      sc = score(Z);
      l = sc;
    }
    std::string describe() const override { return "flat"; }
  };
  try {
    score_saved_model(SavedModel{std::make_shared<NoNormaliser>(), t}, X, true, "models/flat");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("models/flat"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kef
