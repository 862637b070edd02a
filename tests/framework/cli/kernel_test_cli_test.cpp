// `kef test two-sample` and `kef test independence` on .npy and .csv files: output, --json, exit codes
// and messages for bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kef/bandwidth_rule.hpp"
#include "kef/context.hpp"
#include "kef/linalg.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;

struct Files {
  fs::path dir, x, y, y3, y_short, x_csv;
};

const Files& files() {
  static const Files f = [] {
    Files f;
    f.dir = test::temp_dir("kernel-test-cli");
    RandomStream rng(1, "cli");
    const Matrix X = rng.normal_matrix(40, 2), Y = (rng.normal_matrix(50, 2).array() + 0.2).matrix();
    f.x = f.dir / "x.npy";
    f.y = f.dir / "y.npy";
    f.y3 = f.dir / "y3.npy";
    f.y_short = f.dir / "y_short.npy";
    f.x_csv = f.dir / "x.csv";
    write_npy(f.x, X);
    write_npy(f.y, Y);
    write_npy(f.y3, rng.normal_matrix(50, 3));
    write_npy(f.y_short, rng.normal_matrix(39, 1));
    std::ofstream csv(f.x_csv);
    csv.precision(17);
    csv << "a,b\n";
    for (Index i = 0; i < X.rows(); ++i) csv << X(i, 0) << "," << X(i, 1) << "\n";
    return f;
  }();
  return f;
}

nlohmann::json parse(const test::CommandResult& r) {
  EXPECT_EQ(r.status, 0) << r.output;
  return nlohmann::json::parse(r.output.substr(r.output.find('{')));
}

TEST(KefTestCli, TwoSamplePrintsStatisticPValuesAndBandwidth) {
  const Files& f = files();
  const auto r = kef_cmd("test two-sample " + f.x.string() + " " + f.y.string() + " --permutations 99");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "mmd2_unbiased")) << r.output;
  EXPECT_TRUE(contains(r.output, "p-value (permutation, 99)")) << r.output;
  EXPECT_TRUE(contains(r.output, "p-value (Gamma approximation)")) << r.output;
  EXPECT_TRUE(contains(r.output, "median heuristic on the pooled sample")) << r.output;

  const nlohmann::json j = parse(
      kef_cmd("test two-sample " + f.x.string() + " " + f.y.string() + " --permutations 99 --seed 4 --json"));
  EXPECT_EQ(j["test"], "two-sample");
  const double p = j["p_value"]["permutation"];
  EXPECT_GE(p, 0.01);
  EXPECT_LE(p, 1.0);
  EXPECT_NEAR(p * 100, std::round(p * 100), 1e-9);
  const double g = j["p_value"]["gamma"];
  EXPECT_GT(g, 0.0);
  EXPECT_LE(g, 1.0);
  Matrix pooled(90, 2);
  pooled << read_npy(f.x), read_npy(f.y);
  EXPECT_EQ(j["bandwidth"]["sigma"].get<double>(), median_pairwise_distance(pooled, 90));
  EXPECT_EQ(j["bandwidth"]["rule"], "median");
  // The same numbers from CSV, with a given bandwidth, on any thread count.
  const nlohmann::json c1 =
      parse(kef_cmd("test two-sample " + f.x_csv.string() + " " + f.y.string() +
                    " --kernel-bandwidth 0.8 --permutations 99 --seed 4 --json --threads 1"));
  const nlohmann::json c2 =
      parse(kef_cmd("test two-sample " + f.x.string() + " " + f.y.string() +
                    " --kernel-bandwidth 0.8 --permutations 99 --seed 4 --json --threads 2"));
  EXPECT_EQ(c1["bandwidth"]["sigma"].get<double>(), 0.8);
  EXPECT_EQ(c1["bandwidth"]["rule"], "given");
  EXPECT_EQ(c1["statistic"], c2["statistic"]);
  EXPECT_EQ(c1["p_value"], c2["p_value"]);
  // No permutations: the permutation p-value is null, the Gamma one is still there.
  const nlohmann::json none =
      parse(kef_cmd("test two-sample " + f.x.string() + " " + f.y.string() + " --permutations 0 --json"));
  EXPECT_TRUE(none["p_value"]["permutation"].is_null());
  EXPECT_TRUE(none["p_value"]["gamma"].is_number());
}

TEST(KefTestCli, BklBandwidthIsLearnedAndReported) {
  // Two 300-row samples whose pooled BKL profile has an interior mode: the chosen σ and its
  // provenance are printed, and the run depends on --seed (the landmarks), not on --threads. (An
  // optimum on a bound is refused: BklBandwidth.RefusesAnOptimumOnABound.)
  const fs::path dir = test::temp_dir("kernel-test-cli-bkl");
  RandomStream rng(1, "bkl cli");
  write_npy(dir / "x.npy", rng.normal_matrix(300, 2));
  write_npy(dir / "y.npy", Matrix(1.3 * rng.normal_matrix(300, 2)));
  const std::string args = "test two-sample " + (dir / "x.npy").string() + " " + (dir / "y.npy").string() +
                           " --kernel-bandwidth bkl --permutations 50 --json --seed 2";
  const nlohmann::json a = parse(kef_cmd(args + " --threads 1")), b = parse(kef_cmd(args + " --threads 2"));
  EXPECT_EQ(a["bandwidth"]["rule"], "bkl");
  EXPECT_TRUE(contains(a["bandwidth"]["how"].get<std::string>(), "Bayesian kernel learning")) << a.dump();
  EXPECT_EQ(a["bandwidth"], b["bandwidth"]);
  EXPECT_EQ(a["statistic"], b["statistic"]);
}

TEST(KefTestCli, BklMultiscaleLearnsAMixtureKernelAndReportsIt) {
  // --kernel-bandwidth bkl_multiscale --kernel-scales a,b: the Gaussian mixture kernel learned by BKL on
  // the pooled sample (choose_bandwidth's rule with the seed's stream), its scales and weights in the
  // JSON; the statistic is the building block's with that kernel; --threads changes nothing.
  const fs::path dir = test::temp_dir("kernel-test-cli-multiscale");
  RandomStream rng(1, "bkl cli");
  const Matrix X = rng.normal_matrix(300, 2), Y = 1.3 * rng.normal_matrix(300, 2);
  write_npy(dir / "x.npy", X);
  write_npy(dir / "y.npy", Y);
  const std::string args =
      "test two-sample " + (dir / "x.npy").string() + " " + (dir / "y.npy").string() +
      " --kernel-bandwidth bkl_multiscale --kernel-scales 0.3,1.5 --permutations 50 --json --seed 2";
  const nlohmann::json a = parse(kef_cmd(args + " --threads 1")), b = parse(kef_cmd(args + " --threads 2"));
  EXPECT_EQ(a["bandwidth"]["rule"], "bkl_multiscale");
  EXPECT_EQ(a["bandwidth"], b["bandwidth"]);
  EXPECT_EQ(a["statistic"], b["statistic"]);
  const ChosenBandwidth want = choose_bandwidth(multiscale_rule({0.3, 1.5}, "t"), X, Y, "--kernel-bandwidth",
                                                Context(2, 1, nullptr, "--threads"));
  EXPECT_EQ(a["bandwidth"]["sigmas"].get<std::vector<double>>(), want.sigmas);
  EXPECT_EQ(a["bandwidth"]["weights"].get<std::vector<double>>(), want.weights);
  EXPECT_EQ(a["bandwidth"]["how"].get<std::string>(), want.how);
  const KernelPtr k = test::plugin_registry().make_kernel(test::config_from(kernel_table(want)), {});
  // The unbiased MMD² from the kernel's Gram blocks, off-diagonal means.
  const Matrix Kxx = k->gram(X, X), Kyy = k->gram(Y, Y), Kxy = k->gram(X, Y);
  const double n = 300.0;
  const double mmd2 = (Kxx.sum() - Kxx.trace()) / (n * (n - 1)) + (Kyy.sum() - Kyy.trace()) / (n * (n - 1)) -
                      2.0 * Kxy.mean();
  EXPECT_NEAR(a["statistic"]["mmd2_unbiased"].get<double>(), mmd2, 1e-12);
  // Not for independence tests, and the scales go with the rule.
  const auto bad = kef_cmd("test independence " + (dir / "x.npy").string() + " " + (dir / "y.npy").string() +
                           " --kernel-bandwidth bkl_multiscale");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "two-sample")) << bad.output;
  const auto lone = kef_cmd("test two-sample " + (dir / "x.npy").string() + " " + (dir / "y.npy").string() +
                            " --kernel-scales 1,2");
  EXPECT_EQ(lone.status, 2) << lone.output;
  EXPECT_TRUE(contains(lone.output, "--kernel-scales")) << lone.output;
  const auto one = kef_cmd(args.substr(0, args.find(" --kernel-scales")) + " --kernel-scales 1");
  EXPECT_EQ(one.status, 2) << one.output;
  EXPECT_TRUE(contains(one.output, "at least 2")) << one.output;
}

TEST(KefTestCli, IndependencePrintsBothBandwidths) {
  const Files& f = files();
  const nlohmann::json j = parse(kef_cmd("test independence " + f.x.string() + " " + f.x.string() +
                                         " --permutations 49 --kernel-bandwidth-y 2.5 --json"));
  EXPECT_EQ(j["test"], "independence");
  EXPECT_EQ(j["p_value"]["permutation"].get<double>(), 1.0 / 50);  // X against itself: fully dependent
  EXPECT_EQ(j["bandwidth"]["y"]["sigma"].get<double>(), 2.5);
  EXPECT_EQ(j["bandwidth"]["x"]["rule"], "median");
  const auto text = kef_cmd("test independence " + f.x.string() + " " + f.x.string() +
                            " --permutations 49 --kernel-bandwidth-y 2.5");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_TRUE(contains(text.output, "hsic_biased")) << text.output;
  EXPECT_TRUE(contains(text.output, "bandwidth y = 2.5")) << text.output;
}

TEST(KefTestCli, BadInputExitsTwoNamingTheArgument) {
  const Files& f = files();
  auto expect_bad = [](const std::string& args, const std::vector<std::string>& parts) {
    const auto r = kef_cmd(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    for (const auto& p : parts) EXPECT_TRUE(contains(r.output, p)) << args << "\n" << r.output;
  };
  expect_bad("test two-sample " + f.x.string() + " " + f.y3.string(), {"Y (", "y3.npy", "dimension"});
  expect_bad("test independence " + f.x.string() + " " + f.y_short.string(), {"Y (", "39 rows", "40"});
  expect_bad("test two-sample " + f.x.string() + " " + f.y.string() + " --kernel-bandwidth 0",
             {"--kernel-bandwidth", "positive"});
  expect_bad("test two-sample " + f.x.string() + " " + f.y.string() + " --kernel-bandwidth=-1",
             {"--kernel-bandwidth", "positive"});
  expect_bad("test two-sample " + f.x.string() + " " + f.y.string() + " --kernel-bandwidth wide",
             {"--kernel-bandwidth", "median"});
  expect_bad("test independence " + f.x.string() + " " + f.x.string() + " --kernel-bandwidth-y 0",
             {"--kernel-bandwidth-y"});
  expect_bad("test two-sample " + f.x.string() + " " + (f.dir / "missing.npy").string(), {"missing.npy"});
  expect_bad("test two-sample " + f.x.string() + " " + f.y.string() + " --permutations -5",
             {"--permutations"});
  expect_bad("test two-sample " + f.x.string(), {"Y"});
  expect_bad("test", {"subcommand"});
}

TEST(KefTestCli, ValidateRefusesKernelTestEvaluatorsThatCannotRun) {
  // Checked before any fit: an empty split for mmd_two_sample, data without targets for
  // hsic_independence; each error names the evaluator's key.
  const fs::path dir = test::temp_dir("kernel-test-validate");
  auto pipeline = [&](const std::string& evaluate) {
    return test::write_file(dir, "p.toml",
                            "schema_version = 1\nseed = 3\n[data]\ntype = \"synthetic/banana\"\nn = 400\n"
                            "split = { test = 100, validation = 0 }\n[[model]]\nname = \"m\"\n"
                            "[model.estimator]\ntype = \"lite\"\ninducing_points = 20\n"
                            "[model.kernel]\ntype = \"gaussian\"\nsigma = 1.5\n"
                            "[model.base_measure]\ntype = \"gaussian\"\nstd = 4.0\n[[evaluate]]\n" +
                                evaluate);
  };
  const auto ok = kef_cmd("validate " + pipeline("type = \"mmd_two_sample\"\n").string());
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_FALSE(contains(ok.output, "deprecated")) << ok.output;
  // The deprecated type `mmd` is mmd_two_sample: one warning for two tables, naming the first.
  const fs::path two = pipeline("type = \"mmd\"\nname = \"a\"\n[[evaluate]]\ntype = \"mmd\"\nname = \"b\"\n");
  const auto old = kef_cmd("validate " + two.string());
  EXPECT_EQ(old.status, 0) << old.output;
  EXPECT_TRUE(contains(old.output, "evaluate[0].type: evaluator type `mmd` is deprecated")) << old.output;
  EXPECT_TRUE(contains(old.output, "use `mmd_two_sample`")) << old.output;
  EXPECT_EQ(old.output.find("deprecated"), old.output.rfind("deprecated")) << old.output;
  const auto empty =
      kef_cmd("validate " + pipeline("type = \"mmd_two_sample\"\nsplit = \"validation\"\n").string());
  EXPECT_EQ(empty.status, 2) << empty.output;
  EXPECT_TRUE(contains(empty.output, "evaluate[0].split")) << empty.output;
  const auto no_targets = kef_cmd("validate " + pipeline("type = \"hsic_independence\"\n").string());
  EXPECT_EQ(no_targets.status, 2) << no_targets.output;
  EXPECT_TRUE(contains(no_targets.output, "evaluate[0].of")) << no_targets.output;
  const auto both =
      kef_cmd("validate " +
              pipeline("type = \"mmd_two_sample\"\nbandwidth = 1.0\nbandwidth_rule = \"median\"\n").string());
  EXPECT_EQ(both.status, 2) << both.output;
  EXPECT_TRUE(contains(both.output, "evaluate[0].bandwidth_rule")) << both.output;
}

}  // namespace
}  // namespace kef
