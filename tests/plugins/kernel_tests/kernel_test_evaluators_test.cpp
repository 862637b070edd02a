// Evaluators mmd_two_sample and hsic_independence (plugin kernel_tests): their numbers are those of the
// building blocks on the rows they document, and bad keys are ConfigErrors naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kef/bandwidth_rule.hpp"
#include "kef/column_roles.hpp"
#include "kef/error.hpp"
#include "kef/hsic_test.hpp"
#include "kef/mmd_test.hpp"
#include "kef/pipeline.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using test::gaussian_kernel;

double metric(const EvaluationResult& r, const std::string& name) {
  for (const auto& [k, v] : r.metrics)
    if (k == name) return v;
  ADD_FAILURE() << "no metric " << name;
  return std::nan("");
}

bool has(const EvaluationResult& r, const std::string& name) {
  for (const auto& kv : r.metrics)
    if (kv.first == name) return true;
  return false;
}

EvaluationResult evaluate(const std::string& type, const std::string& keys, const Model& model,
                          const Dataset& data, std::uint64_t seed, int threads = 1,
                          Registry& reg = test::plugin_registry()) {
  auto ev = reg.make_evaluator(test::config_from("type = \"" + type + "\"\n" + keys),
                               BuildContext{model.dim(), &reg, nullptr, -1});
  Context context = Context(seed, threads).child("evaluate[0].m");
  const std::string name = "m";
  EvalInput in{model, name, data, context};
  return ev->evaluate(in);
}

TEST(MmdTwoSampleEvaluator, ComparesModelSamplesWithTheSplitLikeTheBuildingBlock) {
  RandomStream rng(1, "two-sample-eval");
  const Matrix S = rng.normal_matrix(30, 2), T = (rng.normal_matrix(25, 2).array() + 0.4).matrix();
  const test::FixedSampleModel model(S);
  Dataset data;
  data.train = S;
  data.test = T;
  data.validation.resize(0, 2);
  const EvaluationResult r = evaluate("mmd_two_sample", "samples = 30\npermutations = 50", model, data, 5);
  const double sigma = choose_bandwidth(BandwidthRule{}, S, T, "t", Context(1, 1)).sigma;
  EXPECT_EQ(metric(r, "mmd_bandwidth"), sigma);
  // The evaluator's permutations come from its context's stream derive("permutations").
  Context context = Context(5, 1).child("evaluate[0].m");
  RandomStream prng = context.rng().derive("permutations");
  const MmdTest t = mmd_test(*gaussian_kernel(sigma), S, T, 50, prng, context);
  EXPECT_EQ(metric(r, "mmd2_unbiased"), t.mmd2);
  EXPECT_EQ(metric(r, "mmd2_biased"), t.mmd2_biased);
  EXPECT_EQ(metric(r, "mmd_pvalue_permutation"), t.p_value);
  EXPECT_EQ(metric(r, "mmd_pvalue_gamma"), t.gamma_p_value);
  // A given bandwidth, no permutations: no permutation p-value; results independent of threads.
  const EvaluationResult g1 =
      evaluate("mmd_two_sample", "bandwidth = 0.7\npermutations = 0", model, data, 5, 1);
  const EvaluationResult g3 =
      evaluate("mmd_two_sample", "bandwidth = 0.7\npermutations = 0", model, data, 5, 3);
  EXPECT_EQ(metric(g1, "mmd_bandwidth"), 0.7);
  EXPECT_FALSE(has(g1, "mmd_pvalue_permutation"));
  EXPECT_EQ(g1.metrics, g3.metrics);
}

TEST(MmdTwoSampleEvaluator, BklMultiscaleTestsWithTheLearnedGaussianMixtureKernel) {
  // bandwidth_rule = "bkl_multiscale": the Gaussian mixture kernel that bkl_mixture_kernel learns on the
  // pooled sample (choose_bandwidth's rule), reported component by component, and the statistic is
  // the building block's with kernel/gaussian_mixture at those values; independent of the threads.
  RandomStream rng(7, "multiscale-eval");
  const Matrix S = rng.normal_matrix(120, 2), T = (rng.normal_matrix(110, 2).array() * 1.3).matrix();
  const test::FixedSampleModel model(S);
  Dataset data;
  data.train = S;
  data.test = T;
  data.validation.resize(0, 2);
  const std::string keys =
      "samples = 120\npermutations = 40\nbandwidth_rule = \"bkl_multiscale\"\n"
      "bandwidth_scales = [0.4, 1.5]";
  const EvaluationResult r = evaluate("mmd_two_sample", keys, model, data, 5, 1);
  EXPECT_EQ(evaluate("mmd_two_sample", keys, model, data, 5, 3).metrics, r.metrics);
  Context context = Context(5, 1).child("evaluate[0].m");
  const ChosenBandwidth bw =
      choose_bandwidth(multiscale_rule({0.4, 1.5}, "t"), S, T, "mmd_two_sample", context);
  ASSERT_TRUE(bw.mixture());
  ASSERT_EQ(bw.sigmas.size(), 2u);
  EXPECT_NEAR(bw.weights[0] + bw.weights[1], 1.0, 1e-15);
  for (std::size_t c = 0; c < 2; ++c) {
    EXPECT_EQ(metric(r, "mmd_bandwidth_" + std::to_string(c + 1)), bw.sigmas[c]);
    EXPECT_EQ(metric(r, "mmd_weight_" + std::to_string(c + 1)), bw.weights[c]);
  }
  EXPECT_EQ(metric(r, "mmd_bandwidth"), bw.weights[0] >= bw.weights[1] ? bw.sigmas[0] : bw.sigmas[1]);
  EXPECT_TRUE(test::contains(r.notes.back(), "Gaussian mixture")) << r.notes.back();
  const KernelPtr k = test::plugin_registry().make_kernel(test::config_from(kernel_table(bw)), {});
  // The mixture kernel by its definition at two points.
  const Matrix a = S.topRows(1), b = T.topRows(1);
  double want = 0.0;
  for (std::size_t c = 0; c < 2; ++c)
    want += bw.weights[c] * std::exp(-(a - b).squaredNorm() / (2 * bw.sigmas[c] * bw.sigmas[c]));
  EXPECT_NEAR(k->gram(a, b)(0, 0), want, 1e-15);
  RandomStream prng = context.rng().derive("permutations");
  const MmdTest t = mmd_test(*k, S, T, 40, prng, context);
  EXPECT_EQ(metric(r, "mmd2_unbiased"), t.mmd2);
  EXPECT_EQ(metric(r, "mmd_pvalue_permutation"), t.p_value);
  EXPECT_EQ(metric(r, "mmd_pvalue_gamma"), t.gamma_p_value);
}

Dataset conditional_data(const Matrix& rows) {
  Dataset data;
  data.train = rows;
  data.test = rows;
  data.validation.resize(0, rows.cols());
  data.roles = make_column_roles({rows.cols() - 1}, rows.cols());
  return data;
}

// `mmd`, the evaluator of the former plugin mmd, is a deprecated alias of mmd_two_sample: the same
// component (the same draws by HMC, statistic, p-value and σ), reported under the former metric names
// and without the Gamma approximation, with one warning per registry naming the new type.
TEST(MmdTwoSampleEvaluator, TheDeprecatedTypeMmdBuildsItUnderTheFormerMetricNames) {
  Registry reg;  // its own, so that its warning is the first
  reg.load_plugin(test::plugin_dir() / "kef_kernel_tests.so");
  reg.load_plugin(test::plugin_dir() / "kef_gaussian.so");
  RandomStream rng(3, "deprecated-mmd");
  const test::GaussianModel model(Vector::Zero(2), Matrix::Identity(2, 2), false);  // sampled by HMC
  Dataset data;
  data.train = rng.normal_matrix(20, 2);
  data.test = rng.normal_matrix(30, 2);
  data.validation.resize(0, 2);
  const std::string keys =
      "samples = 24\npermutations = 40\nhmc_chains = 2\nhmc_warmup = 40\nhmc_leapfrog_steps = 4";
  testing::internal::CaptureStderr();
  const EvaluationResult old = evaluate("mmd", keys, model, data, 9, 1, reg);
  const EvaluationResult again = evaluate("mmd", keys, model, data, 9, 2, reg);
  const ComponentInfo& info = reg.info_for(Evaluator::kInterface, test::config_from("type = \"mmd\""));
  const std::string warned = testing::internal::GetCapturedStderr();
  const EvaluationResult now = evaluate("mmd_two_sample", keys, model, data, 9, 1, reg);

  EXPECT_EQ(info.type, "mmd_two_sample");
  EXPECT_EQ(info.plugin, "kernel_tests");
  EXPECT_EQ(std::count(warned.begin(), warned.end(), '\n'), 1) << warned;
  EXPECT_TRUE(test::contains(warned, "evaluator type `mmd` is deprecated")) << warned;
  EXPECT_TRUE(test::contains(warned, "use `mmd_two_sample` (plugin kernel_tests)")) << warned;

  EXPECT_EQ(metric(old, "mmd2"), metric(now, "mmd2_unbiased"));
  EXPECT_EQ(metric(old, "mmd_pvalue"), metric(now, "mmd_pvalue_permutation"));
  for (const char* same : {"mmd_bandwidth", "hmc_acceptance", "hmc_divergences"})
    EXPECT_EQ(metric(old, same), metric(now, same)) << same;
  EXPECT_EQ(again.metrics, old.metrics);  // any thread count
  for (const char* absent : {"mmd2_unbiased", "mmd2_biased", "mmd_pvalue_permutation", "mmd_pvalue_gamma"})
    EXPECT_FALSE(has(old, absent)) << absent;
  for (const char* absent : {"mmd2", "mmd_pvalue"}) EXPECT_FALSE(has(now, absent)) << absent;
  EXPECT_TRUE(test::contains(old.summary, "mmd: mmd2_u = ")) << old.summary;
}

TEST(HsicIndependenceEvaluator, TestsTheInputsAgainstTheTargetsOfTheSplit) {
  RandomStream rng(2, "hsic-eval");
  Matrix rows(60, 3);
  rows.leftCols(2) = rng.normal_matrix(60, 2);
  rows.col(2) = rows.col(0).array().square() + 0.3 * rng.normal_matrix(60, 1).array();  // y depends on x₀
  const Dataset data = conditional_data(rows);
  const test::FixedSampleModel model(rows);
  const EvaluationResult r = evaluate("hsic_independence", "permutations = 99", model, data, 7);
  const Matrix X = rows.leftCols(2), Y = rows.rightCols(1);
  const double sx = choose_bandwidth(BandwidthRule{}, X, "x", Context(1, 1)).sigma,
               sy = choose_bandwidth(BandwidthRule{}, Y, "y", Context(1, 1)).sigma;
  EXPECT_EQ(metric(r, "hsic_bandwidth_x"), sx);
  EXPECT_EQ(metric(r, "hsic_bandwidth_y"), sy);
  Context context = Context(7, 1).child("evaluate[0].m");
  const HsicTest t = hsic_test(*gaussian_kernel(sx), *gaussian_kernel(sy), X, Y, 99,
                               context.rng().derive("permutations"), context);
  EXPECT_EQ(metric(r, "hsic"), t.hsic);
  EXPECT_EQ(metric(r, "hsic_unbiased"), t.hsic_unbiased);
  EXPECT_EQ(metric(r, "hsic_pvalue_permutation"), t.p_value);
  EXPECT_EQ(metric(r, "hsic_pvalue_gamma"), t.gamma_p_value);
  EXPECT_EQ(metric(r, "hsic_pvalue_permutation"), 0.01);  // dependent: no pairing beats the observed one
  // of = "model": the (exact) sampler's rows, here the same rows, give the same statistic.
  const EvaluationResult m =
      evaluate("hsic_independence", "of = \"model\"\nsamples = 60\npermutations = 99", model, data, 7);
  EXPECT_EQ(metric(m, "hsic"), t.hsic);
}

TEST(HsicIndependenceEvaluator, RunsInAPipelineOnDataWithTargetsAndOnAConditionalModel) {
  // y = 0.7 a − 0.3 b + 0.4 ξ: dependent on the inputs; the fixture's linear-Gaussian p(y | x) fitted to it
  // keeps the dependence, so both tests reject with every one of their 99 permutations.
  RandomStream rng(4, "pipeline");
  const Matrix Z = rng.normal_matrix(300, 3);
  Matrix rows(300, 3);
  rows.leftCols(2) = Z.leftCols(2);
  rows.col(2) = 0.7 * Z.col(0) - 0.3 * Z.col(1) + 0.4 * Z.col(2);
  const std::string toml =
      "schema_version = 1\nseed = 4\n[data]\ntargets = [\"y\"]\nsplit = { test = 100 }\n"
      "[[model]]\nname = \"lg\"\n[model.estimator]\ntype = \"pipeline_fixture_linear_gaussian\"\n"
      "[[evaluate]]\ntype = \"hsic_independence\"\nname = \"data\"\npermutations = 99\n"
      "[[evaluate]]\ntype = \"hsic_independence\"\nname = \"model\"\nof = \"model\"\n"
      "permutations = 99\n[plugins]\npaths = [\"" +
      test::plugin_dir().string() + "\", \"" + KEF_PIPELINE_FIXTURE_DIR + "\"]\n";
  RunOptions options;
  options.quiet = true;
  const RunResult r =
      run_pipeline(Config::parse_string(toml, "hsic.toml"), InMemoryData{rows, {"a", "b", "y"}}, options);
  const nlohmann::json j = nlohmann::json::parse(r.results_json);
  const auto& metrics = j["models"]["lg"]["metrics"];
  ASSERT_TRUE(metrics.is_object()) << j.dump(2);
  bool seen_data = false, seen_model = false;
  for (const auto& [key, value] : metrics.items()) {
    if (key.find("hsic_pvalue_permutation") == std::string::npos) continue;
    EXPECT_EQ(value.get<double>(), 0.01) << key;
    (key.find("model") != std::string::npos ? seen_model : seen_data) = true;
  }
  EXPECT_TRUE(seen_data && seen_model) << metrics.dump(2);
}

TEST(KernelTestEvaluators, BadKeysAreConfigErrorsNamingTheKey) {
  RandomStream rng(3, "bad");
  const Matrix rows = rng.normal_matrix(20, 2);
  const test::FixedSampleModel model(rows);
  Dataset plain;
  plain.train = rows;
  plain.test = rows;
  plain.validation.resize(0, 2);
  auto expect_error = [&](const std::string& type, const std::string& keys, const std::string& key,
                          const Dataset& data) {
    const std::string m = test::message_of<ConfigError>([&] { evaluate(type, keys, model, data, 1); });
    EXPECT_TRUE(test::contains(m, key)) << type << " " << keys << ": " << m;
  };
  expect_error("mmd_two_sample", "bandwidth = 0.0", "bandwidth", plain);
  expect_error("mmd_two_sample", "bandwidth = -2.0", "bandwidth", plain);
  expect_error("mmd_two_sample", "bandwidth_rule = \"mean\"", "bandwidth_rule", plain);
  expect_error("mmd_two_sample", "bandwidth = 1.0\nbandwidth_rule = \"median\"", "bandwidth_rule", plain);
  expect_error("mmd_two_sample", "permutations = -1", "permutations", plain);
  expect_error("mmd_two_sample", "bandwidth_rule = \"bkl_multiscale\"", "bandwidth_scales", plain);
  expect_error("mmd_two_sample", "bandwidth_scales = [0.5, 2.0]", "bandwidth_scales", plain);
  expect_error("mmd_two_sample", "bandwidth_rule = \"bkl_multiscale\"\nbandwidth_scales = [0.5]",
               "bandwidth_scales", plain);
  expect_error("mmd_two_sample", "bandwidth_rule = \"bkl_multiscale\"\nbandwidth_scales = [0.5, 0.5]",
               "bandwidth_scales", plain);
  expect_error("mmd_two_sample", "bandwidth_rule = \"bkl_multiscale\"\nbandwidth_scales = [0.5, -1.0]",
               "bandwidth_scales", plain);
  expect_error("mmd_two_sample",
               "bandwidth = 1.0\nbandwidth_rule = \"bkl_multiscale\"\nbandwidth_scales = [0.5, 2.0]",
               "bandwidth_rule", plain);
  expect_error("hsic_independence", "bandwidth_rule = \"bkl_multiscale\"", "bandwidth_rule",
               conditional_data(rows));
  expect_error("hsic_independence", "bandwidth_y = 0.0", "bandwidth_y", conditional_data(rows));
  expect_error("hsic_independence", "of = \"both\"", "of", conditional_data(rows));
  expect_error("hsic_independence", "samples = 30", "samples", conditional_data(rows));
  // Unconditional data: nothing to test independence of.
  expect_error("hsic_independence", "", "of", plain);
  Registry& reg = test::plugin_registry();
  auto ev = reg.make_evaluator(test::config_from("type = \"hsic_independence\""),
                               BuildContext{2, &reg, nullptr, -1});
  DataShape shape;
  shape.dim = 2;
  shape.train_rows = shape.test_rows = 20;
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { ev->check(shape); }), "of"));
  shape.target_dim = 1;
  ev->check(shape);  // passes with targets
}

}  // namespace
}  // namespace kef
