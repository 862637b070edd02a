// The nystrom plugin through `kef run` and `kef sample`: one pipeline with every score-based evaluator
// (score_matching_loss, fisher_divergence, ksd), HMC samples from a saved model, and bad input that
// exits 2 naming the key with nothing written.
#include <gtest/gtest.h>

#include <cmath>

#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string pipeline(const std::string& models) {
  return R"(schema_version = 1
seed = 4
[data]
type = "synthetic/banana"
n = 700
split = { test = 200, validation = 0 }
)" + models +
         R"(
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "fisher_divergence"
[[evaluate]]
type = "ksd"
bootstrap_draws = 50
)";
}

std::string model(const std::string& name, const std::string& estimator,
                  const std::string& kernel = "type = \"gaussian\"\nsigma = 1.5") {
  return "[[model]]\nname = \"" + name + "\"\n[model.estimator]\n" + estimator + "\n[model.kernel]\n" +
         kernel + "\n[model.base_measure]\ntype = \"gaussian\"\nstd = 4.0\n";
}

TEST(NystromCli, PipelineWithEveryScoreEvaluatorAndHmcSamples) {
  const fs::path dir = test::temp_dir("nystrom-cli");
  const std::string models =
      model("ny", "type = \"nystrom\"\ninducing_points = 40\nlambda = 1e-3") +
      model("ny12", "type = \"nystrom\"\ninducing_points = 30\norders = [1, 2]\nridge = 1e-12") +
      model("full", "type = \"full\"\nlambda = 1e-3");
  const fs::path cfg = test::write_file(dir, "p.toml", pipeline(models));
  auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const Json j = test::read_json(dir / "out" / "results.json");
  for (const char* name : {"ny", "ny12", "full"}) {
    const Json& m = j["models"][name];
    for (const char* metric : {"score_matching_loss", "fisher_divergence", "ksd2", "ksd_pvalue"})
      EXPECT_TRUE(m["metrics"][metric].is_number()) << name << " " << metric << "\n" << m.dump();
    EXPECT_GE(m["metrics"]["fisher_divergence"].get<double>(), 0.0) << name;
    EXPECT_EQ(m["model_dir"], std::string("models/") + name);
  }
  EXPECT_EQ(j["models"]["full"]["fit"]["system_size"], 1000.0);
  // HMC on the saved model (no exact sampler): exit 0, or 3 when the mixing check warns.
  const fs::path out = dir / "samples.npy";
  auto s = test::kef_cmd("sample " + (dir / "out" / "models" / "ny").string() + " -n 400 --out " +
                         out.string() + " --chains 2 --warmup 300 --seed 5 --quiet");
  ASSERT_TRUE(s.status == 0 || s.status == 3) << s.output;
  const Matrix x = read_npy(out);
  EXPECT_EQ(x.rows(), 400);
  EXPECT_EQ(x.cols(), 2);
  EXPECT_TRUE(x.allFinite());
  // Banana: the samples spread like the data (coordinate standard deviations of order one).
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Eigen::RowVectorXd sd = ((x.rowwise() - mean).array().square().colwise().mean()).sqrt();
  EXPECT_GT(sd.minCoeff(), 0.2) << sd;
  EXPECT_LT(sd.maxCoeff(), 10.0) << sd;
}

struct BadCase {
  const char* tag;
  std::string models;
  std::vector<std::string> expect;
};

TEST(NystromCli, BadInputExitsTwoNamingTheKeyAndWritesNothing) {
  const fs::path dir = test::temp_dir("nystrom-bad");
  Matrix dup = Matrix::Zero(3, 2);
  dup << 0.1, 0.2, 0.5, -0.3, 0.1, 0.2;
  write_npy(dir / "dup.npy", dup);
  const std::vector<BadCase> cases = {
      {"m-above-n",
       model("a", "type = \"nystrom\"\ninducing_points = 600"),
       {"inducing_points", "training rows"}},
      {"components", model("a", "type = \"nystrom\"\ninducing_points = 10\ncomponents = 21"), {"components"}},
      {"kernel",
       model("a", "type = \"nystrom\"\ninducing_points = 10",
             "type = \"deep_scalar\"\nlayers = 1\nwidth = 3"),
       {"deep_scalar", "mixed derivatives"}},
      {"singular",
       model("a", "type = \"nystrom\"\ninducing_points_file = \"dup.npy\""),
       {"ridge", "singular"}},
      {"max-system", model("a", "type = \"full\"\nmax_system = 500"), {"max_system", "GB"}},
  };
  for (const BadCase& c : cases) {
    const fs::path cfg = test::write_file(dir, std::string(c.tag) + ".toml", pipeline(c.models));
    const fs::path out = dir / (std::string("out-") + c.tag);
    auto r = test::kef_cmd("run " + cfg.string() + " --output " + out.string() + " --quiet");
    EXPECT_EQ(r.status, 2) << c.tag << "\n" << r.output;
    for (const std::string& part : c.expect)
      EXPECT_TRUE(test::contains(r.output, part)) << c.tag << ": " << r.output;
    EXPECT_FALSE(fs::exists(out)) << c.tag;
  }
}

}  // namespace
}  // namespace kef
