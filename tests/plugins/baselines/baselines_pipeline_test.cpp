// The classical baselines through the kef command: a pipeline with gaussian_fit, gmm and kde on a
// synthetic two-Gaussian mixture (exact likelihoods, score-based metrics, MMD of exact samples, `kef
// score` on the saved models), and bad input (exit status 2, the message naming the key).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

int run_kef(const std::string& text, const fs::path& dir, std::string* out) {
  const fs::path cfg = test::write_file(dir, "p.toml", text);
  return test::run_command(
      test::kef_executable() + " run " + cfg.string() + " --quiet --output " + (dir / "out").string(), out);
}

const std::string kPipeline = test::PipelineText()
      .data("type = \"synthetic/mog\"\nn = 1400\nsplit = { test = 200, validation = 200 }")
      .model("name = \"gauss\"\n[model.estimator]\ntype = \"gaussian_fit\"")
      .model("name = \"mix\"\n[model.estimator]\ntype = \"gmm\"\ncomponents = [1, 2, 4]")
      .model("name = \"kde\"\n[model.estimator]\ntype = \"kde\"\nrule = \"validation\"")
      .evaluate("log_likelihood")
      .evaluate("true_log_likelihood")
      .evaluate("score_matching_loss")
      .evaluate("fisher_divergence")
      .evaluate("mmd", "permutations = 100")
      .str();

TEST(BaselinesPipeline, FitsEvaluatesSavesAndScoresEveryBaseline) {
  const fs::path dir = test::temp_dir("baselines-pipeline");
  std::string out;
  ASSERT_EQ(run_kef(kPipeline, dir, &out), 0) << out;
  const auto j = test::read_json(dir / "out" / "results.json");
  for (const char* name : {"gauss", "mix", "kde"}) {
    const auto& metrics = j["models"][name]["metrics"];
    // The normaliser is exact: no sampling, reliable.
    EXPECT_EQ(metrics["log_normalizer"].get<double>(), 0.0) << name;
    EXPECT_EQ(metrics["reliable"].get<double>(), 1.0) << name;
    EXPECT_TRUE(std::isfinite(metrics["score_matching_loss"].get<double>())) << name;
    EXPECT_TRUE(std::isfinite(metrics["fisher_divergence"].get<double>())) << name;
    EXPECT_TRUE(metrics.contains("mmd2")) << metrics.dump();
  }
  // The data are a mixture of two Gaussians: the mixture chosen by held-out likelihood has two
  // components or more and comes within 0.05 nats of the truth's mean log-likelihood on the same 200
  // test rows (a paired comparison: the gap is the fit's own error, of order p/(2N) = 11/2000 nats
  // for K = 2, p free parameters, N = 1000 training rows); the single Gaussian is clearly worse.
  const auto& mix = j["models"]["mix"];
  EXPECT_GE(mix["fit"]["components"].get<double>(), 2.0) << mix["fit"].dump();
  const double truth = mix["metrics"]["true_log_likelihood"].get<double>();
  EXPECT_NEAR(mix["metrics"]["log_likelihood"].get<double>(), truth, 0.05);
  EXPECT_LT(j["models"]["gauss"]["metrics"]["log_likelihood"].get<double>(),
            mix["metrics"]["log_likelihood"].get<double>() - 0.1);

  // `kef score` on each saved model gives bitwise the in-process reload's log density and score.
  RandomStream rng(4, "probe");
  const Matrix P = 2.0 * rng.normal_matrix(40, 2);
  write_npy(dir / "probe.npy", P);
  for (const char* name : {"gauss", "mix", "kde"}) {
    const fs::path model_dir = dir / "out" / "models" / name;
    const ModelPtr m = load_model(model_dir, test::plugin_registry());
    const fs::path scores = dir / (std::string(name) + "-scores.npy");
    ASSERT_EQ(test::run_command(test::kef_executable() + " score " + model_dir.string() + " --data " +
                                    (dir / "probe.npy").string() + " --out " + scores.string(),
                                &out),
              0)
        << out;
    const Matrix S = read_npy(scores);
    ASSERT_EQ(S.rows(), 40);
    EXPECT_EQ(Vector(S.col(0)), m->log_unnormalized(P)) << name;
    EXPECT_EQ(Matrix(S.rightCols(2)), m->score(P)) << name;
  }
}

// Three columns; the third is independent (kind 0), a copy of the first (1: a singular covariance)
// or constant (2: a zero variance, singular for diagonal covariances too).
std::string data_csv(int kind) {
  RandomStream rng(5, "csv");
  std::string text = "a,b,c\n";
  char line[128];
  for (int i = 0; i < 200; ++i) {
    const double a = rng.normal(), b = rng.normal(), r = rng.normal();
    const double c = kind == 1 ? a : kind == 2 ? 1.5 : r;
    std::snprintf(line, sizeof line, "%.17g,%.17g,%.17g\n", a, b, c);
    text += line;
  }
  return text;
}

TEST(BaselinesPipeline, BadInputIsExitStatus2NamingTheKey) {
  struct Case {
    std::string estimator, expect;
    int data = 0;  // data_csv's kind
    std::string split = "{ test = 20, validation = 20 }", extra_data = "";
  } cases[] = {
      {"type = \"gaussian_fit\"", "model[0].estimator.covariance_floor", 1},
      {"type = \"gmm\"\ncomponents = 2\ncovariance_floor = 0.0\ncovariance = \"diagonal\"",
       "model[0].estimator.covariance_floor", 2},
      {"type = \"kde\"", "model[0].estimator.covariance_floor", 1},
      {"type = \"gmm\"\ncomponents = 500", "model[0].estimator.components"},
      {"type = \"gmm\"\ncomponents = [2, 0]", "model[0].estimator.components"},
      {"type = \"gmm\"\ncomponents = [1, 2]", "model[0].estimator.select", 0,
       "{ test = 20, validation = 0 }"},
      {"type = \"kde\"\nbandwidth = 0.0", "model[0].estimator.bandwidth"},
      {"type = \"kde\"\nbandwidth = -0.5", "model[0].estimator.bandwidth"},
      {"type = \"kde\"\nrule = \"validation\"", "model[0].estimator.rule", 0,
       "{ test = 20, validation = 0 }"},
      {"type = \"kde\"\nrule = \"validation\"\ngrid = [0.5, 0.0]", "model[0].estimator.grid"},
      // A facet the baselines lack: a conditional density p(y | x).
      {"type = \"gmm\"\ncomponents = 2", "targets", 0, "{ test = 20, validation = 20 }",
       "targets = [\"c\"]\n"},
  };
  for (const auto& c : cases) {
    const fs::path dir = test::temp_dir("baselines-bad");
    test::write_file(dir, "data.csv", data_csv(c.data));
    const std::string text =
        "schema_version = 1\nseed = 1\n[data]\ntype = \"file\"\npath = \"data.csv\"\nsplit = " + c.split +
        "\n" + c.extra_data + "[[model]]\nname = \"m\"\n[model.estimator]\n" + c.estimator +
        "\n[[evaluate]]\ntype = \"log_likelihood\"\n";
    std::string out;
    EXPECT_EQ(run_kef(text, dir, &out), 2) << c.estimator << ": " << out;
    EXPECT_TRUE(test::contains(out, c.expect)) << c.estimator << ": " << out;
  }
}

}  // namespace
}  // namespace kef
