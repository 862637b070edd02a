// The pipeline's promises about work: every check that depends only on the config and
// the data fails in `kef validate` and before the first fit; a failure after fitting publishes the
// fitted models and the finished metrics with the failed step recorded, and exits non-zero.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::kef_cmd;
using test::read_json;
using test::write_file;
using Result = test::CommandResult;
using Json = nlohmann::json;

// Two lite models on 1000 banana rows (200 test), then the evaluators given.
std::string two_models(const std::string& evaluators) {
  return test::PipelineText()
      .seed(5)
      .banana(1000, 200)
      .lite("a", 40)
      .lite("b", 40, 1.0)
      .plugin_path(KEF_PIPELINE_FIXTURE_DIR)
      .append(evaluators);
}

const char* kFssdJ500 = R"(
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "fssd"
J = 500
)";

TEST(PipelineChecks, ValidateRefusesMoreFssdLocationsThanTestRows) {
  fs::path dir = test::temp_dir("checks-validate");
  fs::path cfg = write_file(dir, "p.toml", two_models(kFssdJ500));
  Result r = kef_cmd("validate " + cfg.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("evaluate[1].J"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("J = 500"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("200 rows"), std::string::npos) << r.output;
}

TEST(PipelineChecks, RunRefusesBeforeTheFirstFit) {
  fs::path dir = test::temp_dir("checks-run");
  fs::path cfg = write_file(dir, "p.toml", two_models(kFssdJ500));
  Result r = kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("evaluate[1].J"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("fitted in"), std::string::npos) << "no model may be fitted: " << r.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// 800 training rows: lite with 801 inducing points fails in validate (kef 0.3.0 found it only in the
// fit), naming the key, and 800 is accepted; the same shared check guards dkef.
TEST(PipelineChecks, LiteRefusesMoreInducingPointsThanTrainingRowsInValidate) {
  fs::path dir = test::temp_dir("checks-inducing");
  std::string text = two_models("");
  const std::string from = "inducing_points = 40\n[model.kernel]\ntype = \"gaussian\"\nsigma = 1.0";
  ASSERT_NE(text.find(from), std::string::npos);
  std::string bad = text, ok = text;
  bad.replace(bad.find(from), 20, "inducing_points = 801");
  ok.replace(ok.find(from), 20, "inducing_points = 800");
  Result r = kef_cmd("validate " + write_file(dir, "bad.toml", bad).string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("model[1].estimator.inducing_points"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("801 inducing points but only 800 training rows"), std::string::npos) << r.output;
  Result r2 = kef_cmd("validate " + write_file(dir, "ok.toml", ok).string());
  EXPECT_EQ(r2.status, 0) << r2.output;
}

TEST(PipelineChecks, OptimizedFssdChecksTheLocationsPartOfTheSplit) {
  // optimized: J locations come from train_fraction (0.2) of the 200 test rows, i.e. 40 rows.
  fs::path dir = test::temp_dir("checks-optimized");
  fs::path cfg = write_file(dir, "p.toml", two_models(R"(
[[evaluate]]
type = "fssd"
locations = "optimized"
J = 41
)"));
  Result r = kef_cmd("validate " + cfg.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("only 40 rows in its training part"), std::string::npos) << r.output;
  fs::path ok = write_file(dir, "ok.toml", two_models(R"(
[[evaluate]]
type = "fssd"
locations = "optimized"
J = 40
)"));
  Result r2 = kef_cmd("validate " + ok.string());
  EXPECT_EQ(r2.status, 0) << r2.output;
}

TEST(PipelineChecks, MmdChecksItsSplitBeforeFitting) {
  fs::path dir = test::temp_dir("checks-mmd");
  // A lite model's q0 (Gaussian) can be sampled, so hmc_init = "base_measure" is accepted ...
  fs::path ok = write_file(dir, "ok.toml", two_models(R"(
[[evaluate]]
type = "mmd"
hmc_init = "base_measure"
)"));
  Result r = kef_cmd("validate " + ok.string());
  EXPECT_EQ(r.status, 0) << r.output;
  // ... and a split of fewer than 2 rows is refused before fitting.
  fs::path bad = write_file(dir, "bad.toml", two_models(R"(
[[evaluate]]
type = "mmd"
split = "validation"
)"));
  Result r2 = kef_cmd("validate " + bad.string());
  EXPECT_EQ(r2.status, 2) << r2.output;
  EXPECT_NE(r2.output.find("evaluate[0].split"), std::string::npos) << r2.output;
}

// One model of the fixture estimator (no sampler, no base measure, at least min_train_rows rows).
std::string fixture_model(Index min_train_rows, const std::string& evaluators) {
  return std::string(R"(schema_version = 1
[data]
type = "synthetic/banana"
n = 300
split = { test = 100 }
[[model]]
name = "g"
[model.estimator]
type = "pipeline_fixture_gaussian"
min_train_rows = )") +
         std::to_string(min_train_rows) + "\n[plugins]\npaths = [\"" + KEF_PIPELINE_FIXTURE_DIR + "\"]\n" +
         evaluators;
}

TEST(PipelineChecks, EmptySplitsFailBeforeFitting) {
  // The validation split of two_models() is empty: every evaluator that reads it says so in validate.
  fs::path dir = test::temp_dir("checks-split");
  for (const char* type : {"score_matching_loss", "ksd", "fssd", "mmd", "log_likelihood"}) {
    fs::path cfg = write_file(
        dir, "p.toml",
        two_models(std::string("[[evaluate]]\ntype = \"") + type + "\"\nsplit = \"validation\"\n"));
    Result r = kef_cmd("validate " + cfg.string());
    EXPECT_EQ(r.status, 2) << type << ": " << r.output;
    EXPECT_NE(r.output.find("evaluate[0].split"), std::string::npos) << type << ": " << r.output;
  }
}

TEST(PipelineChecks, EstimatorChecksRunBeforeFitting) {
  fs::path dir = test::temp_dir("checks-estimator");
  Result ok = kef_cmd("validate " + write_file(dir, "ok.toml", fixture_model(200, "")).string());
  EXPECT_EQ(ok.status, 0) << ok.output;
  Result bad = kef_cmd("validate " + write_file(dir, "bad.toml", fixture_model(201, "")).string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("model[0].estimator.min_train_rows: needs 201 training rows, the data has 200"),
            std::string::npos)
      << bad.output;
}

TEST(PipelineChecks, EvaluatorsCheckTheFacetsTheEstimatorDeclares) {
  // The fixture's model has no sampler and no base measure: mmd may start HMC from the training rows
  // but not from a base measure, and that is known before the fit.
  fs::path dir = test::temp_dir("checks-facets");
  Result ok = kef_cmd(
      "validate " + write_file(dir, "ok.toml", fixture_model(0, "[[evaluate]]\ntype = \"mmd\"\n")).string());
  EXPECT_EQ(ok.status, 0) << ok.output;
  Result bad =
      kef_cmd("run --quiet " +
              write_file(dir, "bad.toml",
                         fixture_model(0, "[[evaluate]]\ntype = \"mmd\"\nhmc_init = \"base_measure\"\n"))
                  .string() +
              " --output " + (dir / "out").string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("evaluate[0].hmc_init: model g has no base measure that can be sampled"),
            std::string::npos)
      << bad.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// Two [[evaluate]] of one type without `name` would report the same metrics: kef run found it only
// after fitting every model, while kef validate passed the file.
TEST(PipelineChecks, TwoEvaluatorsOfOneTypeWithoutNamesFailInValidate) {
  fs::path dir = test::temp_dir("checks-duplicate-evaluate");
  const char* twice = R"(
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "score_matching_loss"
)";
  fs::path cfg = write_file(dir, "p.toml", two_models(twice));
  for (const std::string& command :
       {"validate " + cfg.string(), "run " + cfg.string() + " --quiet --output " + (dir / "out").string()}) {
    Result r = kef_cmd(command);
    EXPECT_EQ(r.status, 2) << command << ": " << r.output;
    EXPECT_NE(r.output.find("evaluate[1]"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("evaluate[0] reports the same metrics"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("fitted in"), std::string::npos) << "no model may be fitted: " << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
  // The same name twice on a model is the same clash; distinct names, or disjoint models, are not.
  const std::string named =
      std::string(twice) + "name = \"x\"\n[[evaluate]]\ntype = \"fssd\"\nname = \"x\"\n";
  Result same_name = kef_cmd("validate " + write_file(dir, "named.toml", two_models(named)).string());
  EXPECT_EQ(same_name.status, 2) << same_name.output;
  EXPECT_NE(same_name.output.find("evaluate[2].name"), std::string::npos) << same_name.output;
  const std::string split =
      "[[evaluate]]\ntype = \"score_matching_loss\"\nmodels = [\"a\"]\n"
      "[[evaluate]]\ntype = \"score_matching_loss\"\nmodels = [\"b\"]\n";
  Result disjoint = kef_cmd("validate " + write_file(dir, "disjoint.toml", two_models(split)).string());
  EXPECT_EQ(disjoint.status, 0) << disjoint.output;
}

TEST(PipelineChecks, AFailureAfterFittingKeepsTheModelsAndFinishedMetrics) {
  fs::path dir = test::temp_dir("checks-keep");
  fs::path cfg = write_file(dir, "p.toml", two_models(R"(
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "pipeline_fixture_fail"
fail_on = "b"
)"));
  const fs::path out = dir / "out";
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + out.string());
  EXPECT_EQ(r.status, 1) << "a numerical error keeps its exit status: " << r.output;
  EXPECT_NE(r.output.find("failing on model b as asked"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kept in"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(out / "results.json")) << r.output;
  const Json j = read_json(out / "results.json");
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["failure"]["step"], "evaluate[1] (pipeline_fixture_fail) on model b");
  EXPECT_EQ(j["failure"]["kind"], "numerical error");
  EXPECT_NE(j["failure"]["error"].get<std::string>().find("failing on model b"), std::string::npos);
  for (const char* m : {"a", "b"}) {
    EXPECT_TRUE(fs::exists(out / "models" / m / "model.toml")) << m;
    EXPECT_TRUE(j["models"][m]["metrics"]["score_matching_loss"].is_number()) << m;
  }
  EXPECT_EQ(j["models"]["a"]["metrics"]["fixture_rows"], 200) << "a finished evaluation is kept";
  EXPECT_FALSE(j["models"]["b"]["metrics"].contains("fixture_rows"));
  std::ifstream log(out / "log.txt");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("run failed at evaluate[1] (pipeline_fixture_fail) on model b"), std::string::npos)
      << text;
  // The kept models reload and score.
  fs::path pts = write_file(dir, "pts.csv", "x0,x1\n0.1,0.2\n");
  Result s = kef_cmd("score " + (out / "models" / "a").string() + " --data " + pts.string() + " --out " +
                     (dir / "scores.npy").string());
  EXPECT_EQ(s.status, 0) << s.output;
}

TEST(PipelineChecks, AKeptFailureKeepsTheErrorsExitStatus) {
  fs::path dir = test::temp_dir("checks-keep-data");
  fs::path cfg = write_file(dir, "p.toml", two_models(R"(
[[evaluate]]
type = "pipeline_fixture_fail"
fail_on = "a"
kind = "data"
)"));
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  EXPECT_EQ(r.status, 2) << r.output;
  const Json j = read_json(dir / "out" / "results.json");
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["failure"]["kind"], "data error");
}

// A plugin whose allocation fails (std::bad_alloc) is out of memory, not a "plugin error": one kind and
// exit status wherever memory runs out, with the step named.
TEST(PipelineChecks, APluginsFailedAllocationIsOutOfMemory) {
  fs::path dir = test::temp_dir("checks-keep-memory");
  fs::path cfg = write_file(dir, "p.toml", two_models(R"(
[[evaluate]]
type = "pipeline_fixture_fail"
fail_on = "a"
kind = "memory"
)"));
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kef: out of memory: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("an allocation failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("plugin error"), std::string::npos) << r.output;
  const Json j = read_json(dir / "out" / "results.json");
  EXPECT_EQ(j["failure"]["kind"], "out of memory");
}

TEST(PipelineChecks, ASuccessfulRunSaysItIsComplete) {
  fs::path dir = test::temp_dir("checks-complete");
  fs::path cfg = write_file(dir, "p.toml", two_models(R"(
[[evaluate]]
type = "pipeline_fixture_fail"
)"));
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Json j = read_json(dir / "out" / "results.json");
  EXPECT_EQ(j["status"], "complete");
  EXPECT_FALSE(j.contains("failure"));
}

TEST(PipelineChecks, ResultsRecordThePreprocessing) {
  fs::path dir = test::temp_dir("checks-preprocessing");
  std::string csv = "a,b,c,quality\n";
  for (int i = 0; i < 200; ++i) {
    const double a = (i * 37) % 101, c = (i * 53) % 89;
    csv += std::to_string(a) + "," + std::to_string(2 * a + (i % 3)) + "," + std::to_string(c) + "," +
           std::to_string(i % 7) + "\n";
  }
  write_file(dir, "data.csv", csv);
  fs::path cfg = write_file(dir, "p.toml", std::string(R"(schema_version = 1
[data]
type = "file"
path = "data.csv"
exclude = ["quality"]
dequantize = true
drop_correlated = 0.98
whiten = true
statistics_rows = 100
split = { rule = "dkef" }
[[model]]
name = "g"
[model.estimator]
type = "pipeline_fixture_gaussian"
[plugins]
paths = [")") + KEF_PIPELINE_FIXTURE_DIR + "\"]\n");
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Json j = read_json(dir / "out" / "results.json");
  const Json& data = j["data"];
  EXPECT_EQ(data["columns"], Json({"b", "c"}));
  EXPECT_EQ(data["test_rows"], 20);
  EXPECT_EQ(data["validation_rows"], 18);
  const Json& p = data["preprocessing"];
  EXPECT_EQ(p["split_rule"], "dkef");
  EXPECT_EQ(p["excluded"], Json({"quality"}));
  EXPECT_EQ(p["dequantized_gaps"]["a"], 1.0);
  EXPECT_EQ(p["dropped_correlated"][0]["column"], "a");
  EXPECT_EQ(p["dropped_correlated"][0]["correlated_with"], "b");
  EXPECT_GT(p["dropped_correlated"][0]["correlation"].get<double>(), 0.98);
  EXPECT_EQ(p["statistics_rows"], 100);
}

}  // namespace
}  // namespace kef
