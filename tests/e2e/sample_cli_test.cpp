// `kef sample` fails safely: component errors during a trajectory are divergences, the
// sampler's options are flags, and poor mixing warns on stderr and exits 3 unless allowed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kef/npy.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;
using Result = test::CommandResult;

// The mixing warning (from "mix poorly" to the end), or "" when there is none.
std::string warning_of(const std::string& output) {
  const auto at = output.find("mix poorly");
  return at == std::string::npos ? std::string() : output.substr(at);
}

// A lite model on DKEF's banana with the given base measure table, fitted and saved.
fs::path fit_banana(const fs::path& dir, const std::string& base_measure) {
  std::ofstream(dir / "p.toml") << test::PipelineText().lite("m", 60, 1.5, base_measure).str();
  const Result r =
      kef_cmd("run " + (dir / "p.toml").string() + " --quiet --output " + (dir / "out").string());
  EXPECT_EQ(r.status, 0) << r.output;
  return dir / "out" / "models" / "m";
}

TEST(KefSample, PoorMixingWarnsOnStderrAndExitsThreeUnlessAllowed) {
  const fs::path dir = test::temp_dir("sample-mixing");
  const fs::path model = fit_banana(dir, "type = \"gaussian\"\nstd = 4.0\n");
  // Chains that barely move from their distinct starting points: split-R̂ far above 1.05.
  const std::string stuck =
      "sample " + model.string() + " -n 200 --warmup 0 --leapfrog-steps 1 --step-size 0.001 ";
  const Result r = kef_cmd(stuck + "--out " + (dir / "a.npy").string());
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_TRUE(contains(r.output, "mix poorly")) << r.output;
  EXPECT_TRUE(contains(warning_of(r.output), "max split-R^")) << r.output;
  EXPECT_TRUE(contains(r.output, "--allow-poor-mixing")) << r.output;
  EXPECT_EQ(read_npy(dir / "a.npy").rows(), 200) << "the samples are written, with the warning";
  // --quiet silences progress, not the warning.
  const Result quiet = kef_cmd(stuck + "--quiet --out " + (dir / "b.npy").string());
  EXPECT_EQ(quiet.status, 3) << quiet.output;
  EXPECT_TRUE(contains(quiet.output, "mix poorly")) << quiet.output;
  // Opting out: exit 0, still warned.
  const Result allowed = kef_cmd(stuck + "--allow-poor-mixing --out " + (dir / "c.npy").string());
  EXPECT_EQ(allowed.status, 0) << allowed.output;
  EXPECT_TRUE(contains(allowed.output, "mix poorly")) << allowed.output;
  // A stated ESS fraction: with a well-mixing run, demanding ESS >= n fails on the ESS alone. The good
  // run keeps 250 draws per chain: with 50, split-R̂ of a well-mixing chain still lands above 1.05 for
  // some seeds and rounding (1.068 once the products moved from OpenBLAS to Eigen).
  const Result good =
      kef_cmd("sample " + model.string() + " -n 1000 --seed 4 --out " + (dir / "d.npy").string());
  EXPECT_EQ(good.status, 0) << good.output;
  EXPECT_FALSE(contains(good.output, "mix poorly")) << good.output;
  EXPECT_TRUE(contains(good.output, "[kef] HMC: 4 chains")) << good.output;
  EXPECT_FALSE(contains(good.output, "HMC: HMC:")) << good.output;
  const Result strict =
      kef_cmd("sample " + model.string() + " -n 200 --seed 4 --min-ess-fraction 1 --max-rhat 10 --out " +
              (dir / "e.npy").string());
  EXPECT_EQ(strict.status, 3) << strict.output;
  const std::string warning = warning_of(strict.output);
  ASSERT_FALSE(warning.empty()) << strict.output;
  EXPECT_TRUE(contains(warning, "min ESS")) << strict.output;
  EXPECT_FALSE(contains(warning, "split-R^")) << strict.output;
}

TEST(KefSample, TakesTheSamplersOptionsAsFlags) {
  const fs::path dir = test::temp_dir("sample-flags");
  const fs::path model = fit_banana(dir, "type = \"gaussian\"\nstd = 4.0\n");
  const Result r =
      kef_cmd("sample " + model.string() + " -n 30 --chains 3 --warmup 40 --leapfrog-steps 7 " +
              "--step-size 0.3 --thinning 2 --allow-poor-mixing --out " + (dir / "s.npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "3 chains x (40 warm-up + 10 kept draws)")) << r.output;
  EXPECT_EQ(read_npy(dir / "s.npy").rows(), 30);
  // Different leapfrog settings give different chains.
  ASSERT_EQ(kef_cmd("sample " + model.string() +
                    " -n 30 --chains 3 --warmup 40 --leapfrog-steps 3 --step-size 0.3 " +
                    "--thinning 2 --allow-poor-mixing --quiet --out " + (dir / "t.npy").string())
                .status,
            0);
  EXPECT_NE(read_npy(dir / "s.npy"), read_npy(dir / "t.npy"));
  for (const char* bad :
       {"--chains 0", "--thinning 0", "--leapfrog-steps 0", "--step-size -1", "--warmup -3", "--max-rhat 0.5",
        "--min-ess-fraction 2", "--thinning 4611686018427387904", "-n 9223372036854775807 --chains 1"}) {
    const Result e =
        kef_cmd("sample " + model.string() + " -n 10 " + bad + " --out " + (dir / "x.npy").string());
    EXPECT_EQ(e.status, 2) << bad << ": " << e.output;
    EXPECT_FALSE(fs::exists(dir / "x.npy")) << bad;
  }
}

TEST(KefSample, GeneralizedNormalErrorsDuringATrajectoryAreDivergences) {
  // kef 0.2: "base_measure/generalized_normal: first derivatives: non-finite value inf", exit 1, no
  // samples. Huge fixed steps overflow the generalised normal's derivatives on the first trajectory.
  const fs::path dir = test::temp_dir("sample-gn");
  const fs::path model = fit_banana(dir, "type = \"generalized_normal\"\nstd = 3.0\nbeta = 4.0\n");
  const Result r =
      kef_cmd("sample " + model.string() + " -n 100 --warmup 0 --step-size 1e30 --leapfrog-steps 5 " +
              "--allow-poor-mixing --out " + (dir / "s.npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "where the model threw")) << r.output;
  EXPECT_TRUE(contains(r.output, "generalized_normal")) << r.output;
  EXPECT_TRUE(read_npy(dir / "s.npy").allFinite());
  // With the default options and the seeds of the reported failure: never the fatal error of kef 0.2.
  for (int seed : {1, 2, 3}) {
    const Result d = kef_cmd("sample " + model.string() + " -n 200 --seed " + std::to_string(seed) +
                             " --out " + (dir / "d.npy").string());
    EXPECT_TRUE(d.status == 0 || d.status == 3) << d.output;
    EXPECT_FALSE(contains(d.output, "numerical error")) << d.output;
  }
}

TEST(KefSample, MmdInAPipelineSurvivesTheGeneralizedNormalsErrors) {
  // kef 0.2: adding `mmd` to such a pipeline killed the run (exit 1) after the fits. Now the errors
  // are divergences: the run finishes and the evaluator's notes report them.
  const fs::path dir = test::temp_dir("sample-gn-mmd");
  std::ofstream(dir / "p.toml") << test::PipelineText()
                                       .lite("m", 60, 1.5, "type = \"generalized_normal\"\nstd = 3.0\nbeta = 4.0\n")
                                       .evaluate("mmd", "samples = 200")
                                       .str();
  const Result r =
      kef_cmd("run " + (dir / "p.toml").string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(dir / "out" / "results.json");
  std::stringstream json;
  json << in.rdbuf();
  EXPECT_TRUE(contains(json.str(), "where the model threw")) << json.str();
  EXPECT_TRUE(contains(json.str(), "\"mmd2\"")) << json.str();
}

}  // namespace
}  // namespace kef
