// The flows plugin through `kef run` and `kef sample`: a pipeline fitting MAF-MoG to the banana with
// the exact log-likelihood and the score-matching loss (score and Laplacian facets), the validation
// curve in results.json, exact samples from the saved model, and a bad key refused by name (exit 2).
#include <gtest/gtest.h>

#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string pipeline(const std::string& evaluators) {
  return test::PipelineText()
      .seed(4)
      .banana(1200, 200, 200)
      .model("name = \"mafmog\"\n[model.estimator]\ntype = \"maf_mog\"\nhidden_units = [16, 16]\nlayers = 2\ncomponents = 3\nmax_epochs = 8\nlearning_rate = 1e-3")
      .str() + evaluators;
}

TEST(FlowCli, PipelineReportsTheCurveAndTheSavedModelSamples) {
  const fs::path dir = test::temp_dir("flows-cli");
  const fs::path cfg = test::write_file(dir, "p.toml",
                                        pipeline("[[evaluate]]\ntype = \"log_likelihood\"\n"
                                                 "[[evaluate]]\ntype = \"true_log_likelihood\"\n"
                                                 "[[evaluate]]\ntype = \"score_matching_loss\"\n"));
  auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const Json j = test::read_json(dir / "out" / "results.json");
  const Json& m = j["models"]["mafmog"];
  ASSERT_TRUE(m["fit"]["curve"].is_array()) << m.dump();
  EXPECT_EQ(m["fit"]["curve"].size(), m["fit"]["iterations"].get<std::size_t>());
  EXPECT_EQ(m["fit"]["curve"][0][0], 1);
  EXPECT_TRUE(m["fit"]["best_epoch"].is_number());
  EXPECT_TRUE(m["metrics"].dump().find("log_likelihood") != std::string::npos) << m.dump();
  EXPECT_TRUE(m["metrics"]["score_matching_loss"].is_number()) << m.dump();
  const fs::path out = dir / "samples.npy";
  auto s = test::kef_cmd("sample " + (dir / "out" / "models" / "mafmog").string() + " -n 300 --out " +
                         out.string() + " --seed 5 --quiet");
  ASSERT_TRUE(s.status == 0) << s.output;
  const Matrix x = read_npy(out);
  EXPECT_EQ(x.rows(), 300);
  EXPECT_EQ(x.cols(), 2);
  EXPECT_TRUE(x.allFinite());
}

// A nonpositive key stops the run before any fit: exit 2, the message naming the key.
TEST(FlowCli, BadKeyExitsTwoNamingIt) {
  const fs::path dir = test::temp_dir("flows-cli-bad");
  std::string text = pipeline("[[evaluate]]\ntype = \"log_likelihood\"\n");
  text.replace(text.find("layers = 2"), 10, "layers = 0");
  const fs::path cfg = test::write_file(dir, "p.toml", text);
  auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "layers")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.json"));
}

// Without a validation split the run stops before any fit (the estimator's check), naming what to set.
TEST(FlowCli, NoValidationSplitExitsTwoBeforeFitting) {
  const fs::path dir = test::temp_dir("flows-cli-noval");
  std::string text = pipeline("[[evaluate]]\ntype = \"log_likelihood\"\n");
  text.replace(text.find("validation = 200"), 16, "validation = 0");
  const fs::path cfg = test::write_file(dir, "p.toml", text);
  auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "validation")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.json"));
}

// A facet the flows lack: target columns ask for a conditional density p(y | x), which no flow fits;
// the run stops before any fit, exit 2, naming `targets`.
TEST(FlowCli, TargetColumnsAskForAFacetTheFlowsLackExitTwo) {
  const fs::path dir = test::temp_dir("flows-cli-targets");
  RandomStream rng(6, "csv");
  std::string csv = "a,b,c\n";
  for (int i = 0; i < 300; ++i)
    csv += std::to_string(rng.normal()) + "," + std::to_string(rng.normal()) + "," +
           std::to_string(rng.normal()) + "\n";
  test::write_file(dir, "data.csv", csv);
  for (const char* kind : {"made", "made_mog", "maf", "maf_mog", "real_nvp"}) {
    const std::string text = std::string(R"(schema_version = 1
seed = 4
[data]
type = "file"
path = "data.csv"
split = { test = 50, validation = 50 }
targets = ["c"]
[[model]]
name = "m"
[model.estimator]
type = ")") + kind + R"("
hidden_units = [8]
max_epochs = 2
[[evaluate]]
type = "log_likelihood"
)";
    const fs::path cfg = test::write_file(dir, "p.toml", text);
    auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
    EXPECT_EQ(r.status, 2) << kind << ": " << r.output;
    EXPECT_TRUE(test::contains(r.output, "data.targets")) << kind << ": " << r.output;
    EXPECT_TRUE(test::contains(r.output, "conditional density")) << kind << ": " << r.output;
    EXPECT_FALSE(fs::exists(dir / "out" / "results.json")) << kind;
  }
}

}  // namespace
}  // namespace kef
