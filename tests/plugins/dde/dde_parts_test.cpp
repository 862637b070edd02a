// The dde estimators' parts (plugins/dde/dde_parts.hpp; docs/design.md, "Parts"): [model.sampler] and
// [model.dual] describe the two networks one table each, the same fits as the estimator's flat keys; ν
// may have its own width, saved and reloaded; a value set in both places, a misspelt key in a part's
// table and a part an estimator does not take are errors naming the table and key (exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kef/npy.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

const std::string kHead = test::PipelineText()
      .data("type = \"synthetic/two_moons\"\nn = 240\nsplit = { test = 40, validation = 0 }")
      .model("name = \"d\"\n[model.estimator]\ntype = \"dde\"\niterations = 30\nbatch_size = 50\nreport_every = 10\nlearning_rate = 1e-3\ndiagnostic_samples = 0")
      .str();

test::CommandResult run(const fs::path& dir, const std::string& name, const std::string& tables) {
  const fs::path cfg = test::write_file(dir, name + ".toml", std::string(kHead) + tables);
  return test::kef_cmd("run " + cfg.string() + " --output " + (dir / name).string() + " --quiet --threads 1");
}

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(DdeParts, SamplerAndDualTablesAreTheEstimatorsKeys) {
  const fs::path dir = test::temp_dir("dde-parts");
  auto flat = run(dir, "flat", "noise_dim = 6\nwidth = 12\ngenerator_depth = 3\ndual_depth = 2\n");
  ASSERT_EQ(flat.status, 0) << flat.output;
  auto parts = run(dir, "parts",
                   "[model.sampler]\ntype = \"relu\"\nnoise_dim = 6\nwidth = 12\ndepth = 3\n"
                   "[model.dual]\ntype = \"relu\"\nwidth = 12\ndepth = 2\n");
  ASSERT_EQ(parts.status, 0) << parts.output;
  // The same networks and training: every saved array and the manifest, byte for byte.
  for (const char* f :
       {"model.toml", "alpha.npy", "points.npy", "generator_parameters.npy", "dual_parameters.npy"})
    EXPECT_EQ(file_text(dir / "flat" / "models" / "d" / f), file_text(dir / "parts" / "models" / "d" / f))
        << f;
}

TEST(DdeParts, TheDualMayHaveItsOwnWidthAndReloads) {
  const fs::path dir = test::temp_dir("dde-parts-width");
  auto r = run(dir, "own",
               "[model.sampler]\ntype = \"relu\"\nnoise_dim = 6\nwidth = 12\ndepth = 3\n"
               "[model.dual]\ntype = \"relu\"\nwidth = 7\ndepth = 2\n");
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path model = dir / "own" / "models" / "d";
  EXPECT_TRUE(test::contains(file_text(model / "model.toml"), "dual_width = 7"))
      << file_text(model / "model.toml");
  // ν: 2 → 7 → 1 is 2·7 + 7 + 7 + 1 = 29 parameters; g: 6 → 12 → 12 → 2 is 84 + 156 + 26 = 266.
  EXPECT_EQ(read_npy(model / "dual_parameters.npy").size(), 29);
  EXPECT_EQ(read_npy(model / "generator_parameters.npy").size(), 266);
  // The saved model reloads (its networks rebuilt with both widths) and samples.
  auto s =
      test::kef_cmd("sample " + model.string() + " -n 20 --out " + (dir / "s.npy").string() + " --quiet");
  ASSERT_EQ(s.status, 0) << s.output;
  EXPECT_EQ(read_npy(dir / "s.npy").rows(), 20);
}

TEST(DdeParts, ConflictsMisspellingsAndForeignPartsExitTwoNamingThem) {
  const fs::path dir = test::temp_dir("dde-parts-bad");
  auto both = run(dir, "both", "width = 12\n[model.sampler]\ntype = \"relu\"\nwidth = 16\n");
  EXPECT_EQ(both.status, 2) << both.output;
  EXPECT_TRUE(test::contains(both.output, "model[0].sampler.width")) << both.output;
  EXPECT_TRUE(test::contains(both.output, "model[0].estimator.width")) << both.output;
  auto typo = run(dir, "typo", "[model.dual]\ntype = \"relu\"\nwidht = 16\n");
  EXPECT_EQ(typo.status, 2) << typo.output;
  EXPECT_TRUE(test::contains(typo.output, "widht")) << typo.output;
  EXPECT_TRUE(test::contains(typo.output, "did you mean")) << typo.output;
  const fs::path cfg = test::write_file(dir, "lite.toml", test::PipelineText()
      .no_seed()
      .data("type = \"synthetic/two_moons\"\nn = 200")
      .model("name = \"l\"\n[model.estimator]\ntype = \"lite\"\n[model.kernel]\ntype = \"gaussian\"\nsigma = 1.0\n[model.base_measure]\ntype = \"gaussian\"\nstd = 3.0\n[model.dual]\ntype = \"relu\"")
      .str());
  auto foreign = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "lite").string() + " --quiet");
  EXPECT_EQ(foreign.status, 2) << foreign.output;
  EXPECT_TRUE(test::contains(foreign.output, "dual")) << foreign.output;
  EXPECT_FALSE(fs::exists(dir / "lite"));
}

}  // namespace
}  // namespace kef
