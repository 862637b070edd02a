// Size-like keys inside their documented range that would need more memory than the machine has are
// refused before any work (`kef validate`, exit 2), with the estimate and the key that sets the size
// (kef/memory_budget.hpp); the pipeline's top-level `memory_limit_gb` replaces the limit. Before this,
// `maf` with layers = 1e12 validated and then allocated layer by layer until the machine ran out.
#include <gtest/gtest.h>

#include <ostream>

#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// A pipeline on 400 synthetic banana rows (80 test, 80 validation) with MODEL as its [[model]] body and
// EXTRA appended (evaluators, top-level keys go in TOP).
std::string pipeline(const std::string& model, const std::string& extra = "", const std::string& top = "",
                     const std::string& data = "n = 400") {
  return "schema_version = 1\nseed = 1\n" + top + "\n[data]\ntype = \"synthetic/banana\"\n" + data +
         "\nsplit = { test = 80, validation = 80 }\n\n[[model]]\nname = \"m\"\n" + model + "\n" + extra;
}

const std::string kLite =
    "[model.estimator]\ntype = \"lite\"\ninducing_points = 20\n[model.kernel]\ntype = \"gaussian\"\nsigma = 1.0\n"
    "[model.base_measure]\ntype = \"gaussian\"\nstd = 3.0\n";

struct Case {
  std::string name, toml, key;
};
// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MemoryEstimate : public ::testing::TestWithParam<Case> {};

TEST_P(MemoryEstimate, IsRefusedBeforeAnyWorkNamingTheKey) {
  const Case& c = GetParam();
  const fs::path dir = test::temp_dir("memory-" + c.name);
  const fs::path file = test::write_file(dir, "p.toml", c.toml);
  const test::CommandResult r = test::kef_cmd("validate " + file.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(c.key + ": needs an estimated "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory_limit_gb"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    EveryKindOfSize, MemoryEstimate,
    ::testing::Values(
        Case{"maf_layers",
             pipeline("[model.estimator]\ntype = \"maf\"\nlayers = 1000000000000\n"), "model[0].estimator.layers"},
        Case{"real_nvp_hidden_units",
             pipeline("[model.estimator]\ntype = \"real_nvp\"\nhidden_units = [1000000, 1000000]\n"),
             "model[0].estimator.hidden_units"},
        Case{"deep_kernel_width",
             pipeline("[model.estimator]\ntype = \"dkef\"\ninducing_points = 20\n[model.kernel]\ntype = \"deep\"\n"
                      "width = 1000000000\n[model.base_measure]\ntype = \"gaussian\"\nstd = 3.0\n"),
             "model[0].kernel.width"},
        Case{"dde_width", pipeline("[model.estimator]\ntype = \"dde\"\nwidth = 10000000\n"), "model[0].estimator.width"},
        Case{"synthetic_n", pipeline(kLite, "", "", "n = 1000000000000"), "data.n"},
        Case{"quadrature_grid",
             pipeline(kLite, "[[evaluate]]\ntype = \"log_likelihood\"\nmethod = \"quadrature\"\ngrid = 1000000\n"),
             "evaluate[0].grid"},
        Case{"mmd_samples", pipeline(kLite, "[[evaluate]]\ntype = \"mmd\"\nsamples = 1000000000000\n"),
             "evaluate[0].samples"},
        Case{"ksd_bootstrap", pipeline(kLite, "[[evaluate]]\ntype = \"ksd\"\nbootstrap_draws = 1000000000000\n"),
             "evaluate[0].bootstrap_draws"},
        Case{"fssd_locations", pipeline(kLite, "[[evaluate]]\ntype = \"fssd\"\nJ = 100000000\n"), "evaluate[0].J"},
        // An ordinary size against a limit set below it: the limit is the key's, and it is named.
        Case{"limit_key", pipeline(kLite, "", "memory_limit_gb = 1e-4"), "model[0].estimator.inducing_points"}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The limit is the pipeline's to raise: a size refused under the machine's memory validates when
// `memory_limit_gb` says the memory will be there (validation allocates none of it).
TEST(MemoryLimit, TheTopLevelKeyRaisesTheLimit) {
  const fs::path dir = test::temp_dir("memory-limit");
  const std::string maf = "[model.estimator]\ntype = \"maf\"\nlayers = 100000000\n";
  const test::CommandResult refused = test::kef_cmd("validate " + test::write_file(dir, "a.toml", pipeline(maf)).string());
  ASSERT_EQ(refused.status, 2) << refused.output;
  const test::CommandResult raised = test::kef_cmd(
      "validate " + test::write_file(dir, "b.toml", pipeline(maf, "", "memory_limit_gb = 1e9")).string());
  EXPECT_EQ(raised.status, 0) << raised.output;
}

}  // namespace
}  // namespace kef
