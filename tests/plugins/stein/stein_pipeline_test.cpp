// The Stein evaluators in a real pipeline: `kef run` with two models, `against`, named evaluations.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SteinPipeline, RunsEveryEvaluatorThroughTheCommand) {
  const auto dir = test::temp_dir("stein-pipeline");
  std::ofstream(dir / "p.toml") << test::PipelineText()
      .seed(5)
      .data("type = \"synthetic/gaussian\"\nn = 900\nsplit = { test = 400, validation = 0 }")
      .lite("good", 50, 1.5, 1.0)
      .lite("wide", 50, 1.5, 3.0, "lambda_alpha = 10.0")
      .evaluate("fssd", "J = 10")
      .evaluate("fssd", "name = \"opt\"\nlocations = \"optimized\"\nJ = 3\noptimization_steps = 20")
      .evaluate("relative_fssd", "against = \"good\"\nJ = 10")
      .evaluate("ksd", "bootstrap_draws = 100")
      .evaluate("ksd", "name = \"kbkl\"\nbandwidth_rule = \"bkl\"\nbootstrap_draws = 100")
      .evaluate("fssd", "name = \"fbkl\"\nJ = 10\nbandwidth_rule = \"bkl\"")
      .evaluate("ksd", "name = \"imq\"\nkernel = \"imq\"\nbootstrap_draws = 100")
      .str();
  std::string out;
  const int status = test::run_command(test::kef_executable() + " run " + (dir / "p.toml").string() +
                                           " --output " + (dir / "out").string() + " --quiet",
                                       &out);
  ASSERT_EQ(status, 0) << out;
  const std::string json = read_file(dir / "out" / "results.json");
  for (const char* key :
       {"\"fssd2\"", "\"fssd_pvalue\"", "\"opt.fssd2\"", "\"relative_fssd_statistic\"",
        "\"relative_fssd_pvalue\"", "\"ksd2\"", "\"ksd_pvalue\"", "\"imq.ksd2\"", "\"imq.ksd_pvalue\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  // relative_fssd runs on every model but the one it compares against. (Counted as metric values:
  // each model's metric_spaces names the metric too, with a string value.)
  std::size_t count = 0;
  const std::string entry = "\"relative_fssd_statistic\": ";
  for (std::size_t pos = json.find(entry); pos != std::string::npos; pos = json.find(entry, pos + 1))
    if (json[pos + entry.size()] != '"') ++count;
  EXPECT_EQ(count, 1u);

  // bandwidth_rule = "bkl": σ by Bayesian kernel learning, recorded with its provenance, and not the
  // median heuristic's σ of the default evaluation on the same split.
  const nlohmann::json j = test::read_json(dir / "out" / "results.json");
  const auto& good = j["models"]["good"];
  const double median_sigma = good["metrics"]["ksd_bandwidth"].get<double>();
  const double bkl_sigma = good["metrics"]["kbkl.ksd_bandwidth"].get<double>();
  EXPECT_GT(bkl_sigma, 0.0);
  EXPECT_NE(bkl_sigma, median_sigma);
  EXPECT_TRUE(good["metrics"]["fbkl.fssd2"].is_number());
  const std::string notes = good.dump();
  EXPECT_NE(notes.find("bandwidth: median heuristic"), std::string::npos) << notes;
  EXPECT_NE(notes.find("bandwidth: Bayesian kernel learning"), std::string::npos) << notes;

  ASSERT_EQ(test::run_command(test::kef_executable() + " plugins --describe evaluator/fssd", &out), 0) << out;
  EXPECT_NE(out.find("null_draws"), std::string::npos) << out;
}

}  // namespace
}  // namespace kef
