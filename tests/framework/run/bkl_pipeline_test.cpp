// `sigma = "bkl"` in a pipeline's Gaussian kernel table: the host chooses the length scale by Bayesian
// kernel learning before the fit, writes it into the config, and records it with its provenance and
// the profile of log L in ℓ in results.json; bad uses fail kef validate with exit 2 naming the key.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kef/context.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// 400 rows of a 2-D mixture of 6 tight clusters (the anchor's two-scale shape), written exactly.
Matrix write_mixture(const fs::path& dir) {
  RandomStream rng(9, "bkl-pipeline");
  const Matrix centres = 4.0 * rng.normal_matrix(6, 2);
  Matrix X = 0.3 * rng.normal_matrix(400, 2);
  for (Index i = 0; i < 400; ++i) X.row(i) += centres.row(static_cast<Index>(rng.uniform_int(6)));
  std::ostringstream csv;
  csv.precision(17);
  csv << "a,b\n";
  for (Index i = 0; i < 400; ++i) csv << X(i, 0) << "," << X(i, 1) << "\n";
  test::write_file(dir, "data.csv", csv.str());
  return X;
}

std::string pipeline(const std::string& kernel_type, const std::string& sigma, int test_rows) {
  return "schema_version = 1\nseed = 5\n[data]\ntype = \"file\"\npath = \"data.csv\"\nshuffle = false\n"
         "split = { test = " +
         std::to_string(test_rows) +
         " }\n[[model]]\nname = \"m\"\n[model.estimator]\ntype = \"lite\"\ninducing_points = 30\n"
         "[model.kernel]\ntype = \"" +
         kernel_type + "\"\nsigma = " + sigma + "\n[model.base_measure]\ntype = \"gaussian\"\nstd = 5.0\n";
}

TEST(BklSigma, TheHostChoosesTheModeAndRecordsItsProvenanceAndProfile) {
  const fs::path dir = test::temp_dir("bkl-sigma");
  const Matrix X = write_mixture(dir);
  const fs::path p = test::write_file(dir, "p.toml", pipeline("gaussian", "\"bkl\"", 100));
  const auto v = test::kef_cmd("validate " + p.string());
  ASSERT_EQ(v.status, 0) << v.output;
  const auto r = test::kef_cmd("run " + p.string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  // The same choice through the framework: the first 300 rows are the training split (no shuffle),
  // landmarks drawn by the stream of the key's path under the run's seed.
  BklOptions o;
  o.landmarks = 100;
  const BklResult want = bkl_bandwidth(X.topRows(300), o, Context(5, 1).child("model[0].kernel.sigma"));
  const Json j = test::read_json(dir / "out" / "results.json");
  const Json& chosen = j["models"]["m"]["chosen"]["model[0].kernel.sigma"];
  EXPECT_EQ(chosen["value"].get<double>(), want.sigma);
  EXPECT_EQ(j["config"]["model"][0]["kernel"]["sigma"].get<double>(), want.sigma);
  const std::string rule = chosen["rule"].get<std::string>();
  EXPECT_TRUE(test::contains(rule, "Bayesian kernel learning")) << rule;
  EXPECT_TRUE(test::contains(rule, "τ² fixed at 1")) << rule;
  const Json& bkl = chosen["bkl"];
  EXPECT_EQ(bkl["tau2"].get<double>(), 1.0);
  EXPECT_EQ(bkl["method"].get<std::string>(), "mode");
  EXPECT_EQ(bkl["landmarks"].get<int>(), 100);
  EXPECT_EQ(bkl["rows"].get<int>(), 200);
  ASSERT_EQ(bkl["profile"]["lengthscale"].size(), want.profile.lengthscale.size());
  ASSERT_EQ(bkl["profile"]["log_likelihood"].size(), want.profile.log_likelihood.size());
  for (std::size_t k = 0; k < want.profile.lengthscale.size(); ++k) {
    EXPECT_EQ(bkl["profile"]["lengthscale"][k].get<double>(), want.profile.lengthscale[k]);
    if (std::isfinite(want.profile.log_likelihood[k]))
      EXPECT_EQ(bkl["profile"]["log_likelihood"][k].get<double>(), want.profile.log_likelihood[k]);
    else
      EXPECT_TRUE(bkl["profile"]["log_likelihood"][k].is_null());
  }
}

TEST(BklSigma, BadUsesFailValidateNamingTheKey) {
  const fs::path dir = test::temp_dir("bkl-sigma-bad");
  write_mixture(dir);
  // Fewer training rows (50) than landmarks (100).
  auto r = test::kef_cmd("validate " +
                         test::write_file(dir, "few.toml", pipeline("gaussian", "\"bkl\"", 350)).string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "model[0].kernel.sigma")) << r.output;
  EXPECT_TRUE(test::contains(r.output, "50 rows for landmarks = 100")) << r.output;
  // A kernel whose r and derivatives BKL has no closed form for.
  r = test::kef_cmd("validate " +
                    test::write_file(dir, "imq.toml", pipeline("imq", "\"bkl\"", 100)).string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "model[0].kernel.sigma")) << r.output;
  EXPECT_TRUE(test::contains(r.output, "kernel type \\\"imq\\\"") ||
              test::contains(r.output, "kernel type \"imq\""))
      << r.output;
  EXPECT_TRUE(test::contains(r.output, "no closed-form R")) << r.output;
  // The Gaussian mixture: its BKL is the evaluators' bkl_multiscale rule, not a pipeline `sigma`.
  r = test::kef_cmd("validate " +
                    test::write_file(dir, "mix.toml", pipeline("gaussian_mixture", "\"bkl\"", 100)).string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "model[0].kernel.sigma")) << r.output;
  EXPECT_TRUE(test::contains(r.output, "bkl_multiscale")) << r.output;
  // A non-positive fixed bandwidth.
  r = test::kef_cmd("validate " +
                    test::write_file(dir, "zero.toml", pipeline("gaussian", "0.0", 100)).string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "sigma")) << r.output;
  // An unknown rule.
  r = test::kef_cmd("validate " +
                    test::write_file(dir, "word.toml", pipeline("gaussian", "\"bkl2\"", 100)).string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "or \"bkl\" (Bayesian kernel learning), got \"bkl2\"")) << r.output;
}

}  // namespace
}  // namespace kef
