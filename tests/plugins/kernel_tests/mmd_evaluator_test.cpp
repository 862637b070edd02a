// The mmd evaluator: the block-streamed U-statistic against a brute-force double loop, the
// permutation null (exact relabellings, mean zero, calibrated p-values), power against a shifted
// model, determinism over thread counts, and bad keys.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "kef/bandwidth_rule.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/mmd_test.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace kef::mmd_evaluator_test {
namespace {

using test::FixedSampleModel;
using test::GaussianModel;

double gauss(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b, double sigma) {
  return std::exp(-(a - b).squaredNorm() / (2 * sigma * sigma));
}

// Unbiased MMD² by its definition (docs/math.md §8).
double brute_mmd2(const Matrix& X, const Matrix& Y, double sigma) {
  const Index n = X.rows(), m = Y.rows();
  double xx = 0, yy = 0, xy = 0;
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j)
      if (i != j) xx += gauss(X.row(i), X.row(j), sigma);
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < m; ++j)
      if (i != j) yy += gauss(Y.row(i), Y.row(j), sigma);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < m; ++j) xy += gauss(X.row(i), Y.row(j), sigma);
  return xx / (n * (n - 1.0)) + yy / (m * (m - 1.0)) - 2 * xy / (n * double(m));
}

using test::gaussian_kernel;

struct MmdRun {
  EvaluationResult result;
  double metric(const std::string& name) const {
    for (const auto& [k, v] : result.metrics)
      if (k == name) return v;
    ADD_FAILURE() << "no metric " << name;
    return std::nan("");
  }
  bool has(const std::string& name) const {
    for (const auto& kv : result.metrics)
      if (kv.first == name) return true;
    return false;
  }
};

MmdRun evaluate(const Model& model, const Matrix& test_rows, const std::string& keys, std::uint64_t seed,
             int threads = 2, const Matrix* train = nullptr) {
  Registry& reg = test::plugin_registry();
  auto ev = reg.make_evaluator(test::config_from("type = \"mmd\"\n" + keys), BuildContext{model.dim(), &reg, nullptr, -1});
  Dataset data;
  data.test = test_rows;
  data.train = train ? *train : test_rows;
  data.validation.resize(0, test_rows.cols());
  Context context = Context(seed, threads).child("evaluate[0].m");
  const std::string name = "m";
  EvalInput in{model, name, data, context};
  return MmdRun{ev->evaluate(in)};
}

GaussianModel standard_normal(bool exact, double shift = 0.0) {
  Vector mu = Vector::Zero(2);
  mu[0] = shift;
  return GaussianModel(mu, Matrix::Identity(2, 2), exact);
}

TEST(Mmd, UStatisticEqualsABruteForceDoubleLoop) {
  RandomStream rng(1, "brute");
  const Matrix X = rng.normal_matrix(7, 2), Y = rng.normal_matrix(9, 2).array() + 0.5;
  const FixedSampleModel model(X);
  const MmdRun fixed = evaluate(model, Y, "samples = 7\nbandwidth = 0.8\npermutations = 0", 1);
  EXPECT_NEAR(fixed.metric("mmd2"), brute_mmd2(X, Y, 0.8), 1e-13);
  EXPECT_FALSE(fixed.has("mmd_pvalue"));
  EXPECT_FALSE(fixed.has("hmc_acceptance"));  // exact sampler: no HMC diagnostics

  // Median heuristic: σ is the median pairwise distance of the pooled sample (all rows here).
  const MmdRun median = evaluate(model, Y, "samples = 7", 1);
  Matrix pooled(16, 2);
  pooled << X, Y;
  const double sigma = median_pairwise_distance(pooled, 16);
  EXPECT_EQ(median.metric("mmd_bandwidth"), sigma);
  EXPECT_NEAR(median.metric("mmd2"), brute_mmd2(X, Y, sigma), 1e-13);
  const double p = median.metric("mmd_pvalue");
  EXPECT_GE(p, 1.0 / 201);
  EXPECT_LE(p, 1.0);
}

// Draws from an approximate sampler (Facet::ApproximateSampler, DDE's network) give the same statistic,
// but the result says what it measures: the metric sampler_approximate = 1, a warning note and the
// summary's WARNING. An exact sampler's result carries neither.
TEST(Mmd, AnApproximateSamplerIsMarkedInTheResult) {
  struct ApproximateFixed : FixedSampleModel {
    using FixedSampleModel::FixedSampleModel;
    FacetSet facets() const override {
      return FixedSampleModel::facets().minus(Facet::Sampler) | Facet::ApproximateSampler;
    }
  };
  RandomStream rng(1, "approximate");
  const Matrix X = rng.normal_matrix(7, 2), Y = rng.normal_matrix(9, 2).array() + 0.5;
  const std::string keys = "samples = 7\nbandwidth = 0.8\npermutations = 0";
  const MmdRun exact = evaluate(FixedSampleModel(X), Y, keys, 1);
  const MmdRun approx = evaluate(ApproximateFixed(X), Y, keys, 1);
  EXPECT_EQ(approx.metric("mmd2"), exact.metric("mmd2"));
  EXPECT_EQ(approx.metric("sampler_approximate"), 1.0);
  EXPECT_FALSE(exact.has("sampler_approximate"));
  EXPECT_NE(approx.result.summary.find("WARNING"), std::string::npos) << approx.result.summary;
  EXPECT_EQ(exact.result.summary.find("WARNING"), std::string::npos) << exact.result.summary;
  bool warned = false;
  for (const auto& n : approx.result.notes) warned = warned || n.find("measures the sampler, not the density") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(Mmd, BandwidthRuleBklIsTheSharedRuleOnThePooledSample) {
  // bandwidth_rule = "bkl": σ is what choose_bandwidth (the rule mmd_two_sample and `kef test` use)
  // gives for the pooled sample with the evaluator's stream; the same for every thread count, recorded
  // with its provenance; the statistic is the brute-force one at that σ.
  RandomStream rng(11, "bkl rule");
  const Matrix X = rng.normal_matrix(60, 2), Y = rng.normal_matrix(70, 2).array() * 1.5;
  const FixedSampleModel model(X);
  const std::string keys = "samples = 60\nbandwidth_rule = \"bkl\"\npermutations = 0";
  const MmdRun one = evaluate(model, Y, keys, 3, 1), two = evaluate(model, Y, keys, 3, 2);
  const ChosenBandwidth want = choose_bandwidth(BandwidthRule{BandwidthRule::Kind::Bkl, 0}, X, Y, "mmd",
                                                Context(3, 1).child("evaluate[0].m"));
  EXPECT_EQ(one.metric("mmd_bandwidth"), want.sigma);
  EXPECT_EQ(two.metric("mmd_bandwidth"), want.sigma);
  EXPECT_EQ(one.metric("mmd2"), two.metric("mmd2"));
  EXPECT_NEAR(one.metric("mmd2"), brute_mmd2(X, Y, want.sigma), 1e-13);
  const double median = median_pairwise_distance((Matrix(130, 2) << X, Y).finished(), 130);
  EXPECT_NE(want.sigma, median);
  // The bandwidth's note (beside the sampler's).
  auto bandwidth_note = [](const MmdRun& run) {
    for (const auto& n : run.result.notes)
      if (n.rfind("bandwidth: ", 0) == 0) return n;
    return std::string("(no bandwidth note)");
  };
  EXPECT_EQ(bandwidth_note(one), "bandwidth: " + want.how);
  EXPECT_TRUE(test::contains(want.how, "Bayesian kernel learning")) << want.how;

  // The default rule is the median heuristic, and says so.
  const MmdRun med = evaluate(model, Y, "samples = 60\npermutations = 0", 3, 1);
  EXPECT_EQ(med.metric("mmd_bandwidth"), median);
  EXPECT_TRUE(test::contains(bandwidth_note(med), "bandwidth: median heuristic")) << bandwidth_note(med);
  const MmdRun given = evaluate(model, Y, "samples = 60\nbandwidth = 0.9\npermutations = 0", 3, 1);
  EXPECT_EQ(bandwidth_note(given), "bandwidth: given");
}

TEST(Mmd, BlocksAndThreadsDoNotChangeTheStatistic) {
  RandomStream rng(2, "blocks");
  const Matrix X = rng.normal_matrix(40, 3), Y = rng.normal_matrix(50, 3);
  const KernelPtr k = gaussian_kernel(1.1);
  const double brute = brute_mmd2(X, Y, 1.1);
  MmdTest runs[3];
  const std::pair<int, Index> setups[3] = {{1, 7}, {2, 7}, {2, 0}};  // (threads, block rows)
  for (int i = 0; i < 3; ++i) {
    RandomStream prng(3, "perm");
    runs[i] = mmd_test(*k, X, Y, 100, prng, Context(1, setups[i].first), setups[i].second);
    EXPECT_NEAR(runs[i].mmd2, brute, 1e-13);
  }
  EXPECT_EQ(runs[0].mmd2, runs[1].mmd2);  // same blocks, any thread count: bitwise
  EXPECT_EQ(runs[0].permuted, runs[1].permuted);
  EXPECT_EQ(runs[0].p_value, runs[1].p_value);
  EXPECT_LT((runs[0].permuted - runs[2].permuted).cwiseAbs().maxCoeff(), 1e-13);
}

TEST(Mmd, EveryPermutedStatisticIsTheStatisticOfARelabelling) {
  // n = 2, m = 3: the 10 ways to pick the "first sample" rows, by brute force.
  RandomStream rng(4, "relabel");
  const Matrix Z = rng.normal_matrix(5, 2);
  std::vector<double> all;
  for (int i = 0; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j) {
      Matrix X(2, 2), Y(3, 2);
      X << Z.row(i), Z.row(j);
      for (int r = 0, k = 0; r < 5; ++r)
        if (r != i && r != j) Y.row(k++) = Z.row(r);
      all.push_back(brute_mmd2(X, Y, 0.7));
    }
  const KernelPtr k = gaussian_kernel(0.7);
  RandomStream prng(5, "perm");
  const auto t = mmd_test(*k, Z.topRows(2), Z.bottomRows(3), 60, prng, Context(1, 1));
  EXPECT_NEAR(t.mmd2, all[0], 1e-13);
  std::set<int> seen;
  for (Index p = 0; p < t.permuted.size(); ++p) {
    int match = -1;
    for (int c = 0; c < 10; ++c)
      if (std::abs(t.permuted[p] - all[static_cast<std::size_t>(c)]) < 1e-12) match = c;
    ASSERT_GE(match, 0) << "permutation " << p << " matches no relabelling";
    seen.insert(match);
  }
  // 60 uniform draws from 10 labellings miss one with probability ≤ 10·0.9⁶⁰ ≈ 0.002.
  EXPECT_EQ(seen.size(), 10u);
}

TEST(Mmd, PermutationNullHasMeanZero) {
  // Over uniform relabellings every pair is equally likely to be XX, YY or XY, so the U-statistic's
  // permutation mean is exactly 0; the sample mean of P draws is within 5 standard errors.
  RandomStream rng(6, "perm-mean");
  const Matrix X = rng.normal_matrix(30, 2), Y = rng.normal_matrix(40, 2).array() + 1.0;
  const KernelPtr k = gaussian_kernel(1.0);
  RandomStream prng(7, "perm");
  const auto t = mmd_test(*k, X, Y, 2000, prng, Context(1, 2));
  const double mean = t.permuted.mean();
  const double sd = std::sqrt((t.permuted.array() - mean).square().sum() / 1999.0);
  EXPECT_LT(std::abs(mean), 5 * sd / std::sqrt(2000.0));
  EXPECT_GT(t.mmd2, 0.0);
}

// Model = truth: p-values are uniform (discrete: P(p ≤ 0.05) = 10/201 with 200 permutations), so the
// count below 0.05 in 50 seeds is Binomial(50, 0.0498): P(count ≥ 9) = 7e-4. The U-statistic is
// unbiased, so the mean of mmd2 is within 5 standard errors of 0.
void expect_calibrated(bool exact, int seeds) {
  const GaussianModel model = standard_normal(exact);
  int small = 0;
  std::vector<double> mmd2;
  for (int s = 0; s < seeds; ++s) {
    RandomStream data_rng(100 + s, "null-data");
    const Matrix Y = data_rng.normal_matrix(200, 2);
    const MmdRun r = evaluate(model, Y, "", 100 + s);
    small += r.metric("mmd_pvalue") < 0.05;
    mmd2.push_back(r.metric("mmd2"));
  }
  const Vector v = Eigen::Map<const Vector>(mmd2.data(), seeds);
  const double sd = std::sqrt((v.array() - v.mean()).square().sum() / (seeds - 1.0));
  EXPECT_LE(small, 8) << (exact ? "exact" : "HMC") << " sampler";
  EXPECT_LT(std::abs(v.mean()), 5 * sd / std::sqrt(double(seeds))) << "sd " << sd;
  ::testing::Test::RecordProperty(exact ? "null_sd_exact" : "null_sd_hmc", std::to_string(sd));
}

TEST(Mmd, PValuesAreCalibratedWhenTheModelIsTheTruth) { expect_calibrated(true, 50); }

TEST(Mmd, PValuesAreCalibratedWithHmcSamplesOfTheTruth) {
  // Valid only when HMC draws are (nearly) independent: checked on one run.
  const GaussianModel model = standard_normal(false);
  RandomStream data_rng(99, "null-data");
  const MmdRun r = evaluate(model, data_rng.normal_matrix(200, 2), "", 99);
  EXPECT_GE(r.metric("hmc_min_ess"), 100.0);
  expect_calibrated(false, 50);
}

TEST(Mmd, AShiftedModelGivesSmallPValues) {
  // Model N((1, 0), I) against N(0, I) data, n = m = 200, pooled median σ² ≈ 3: MMD² =
  // 2(σ²/(σ²+2))^{D/2}(1 − exp(−‖μ‖²/(2(σ²+2)))) ≈ 0.11, some 30 null standard deviations (0.003 with
  // the exact sampler, 0.0035 with HMC, measured by the calibration tests), so every seed must reject.
  for (bool exact : {true, false}) {
    const GaussianModel model = standard_normal(exact, 1.0);
    for (int s = 0; s < (exact ? 5 : 2); ++s) {
      RandomStream data_rng(200 + s, "shift-data");
      const MmdRun r = evaluate(model, data_rng.normal_matrix(200, 2), "", 200 + s);
      EXPECT_LE(r.metric("mmd_pvalue"), 0.01) << (exact ? "exact" : "HMC") << " seed " << s;
      EXPECT_GT(r.metric("mmd2"), 0.05);
    }
  }
}

TEST(Mmd, HmcResultsDoNotDependOnTheThreadCount) {
  const GaussianModel model = standard_normal(false);
  RandomStream data_rng(300, "threads-data");
  const Matrix Y = data_rng.normal_matrix(150, 2);
  const MmdRun one = evaluate(model, Y, "hmc_warmup = 100\nhmc_chains = 6\nhmc_chains_per_batch = 2", 7, 1);
  const MmdRun two = evaluate(model, Y, "hmc_warmup = 100\nhmc_chains = 6\nhmc_chains_per_batch = 2", 7, 2);
  ASSERT_EQ(one.result.metrics.size(), two.result.metrics.size());
  for (std::size_t i = 0; i < one.result.metrics.size(); ++i) EXPECT_EQ(one.result.metrics[i], two.result.metrics[i]);
  EXPECT_TRUE(one.has("hmc_acceptance"));
  EXPECT_TRUE(one.has("hmc_min_ess"));
  EXPECT_FALSE(one.result.notes.empty());
}

TEST(Mmd, HmcCanStartFromTheBaseMeasureOnlyWhenThereIsOne) {
  const GaussianModel model = standard_normal(false);
  RandomStream data_rng(301, "base-data");
  EXPECT_THROW(evaluate(model, data_rng.normal_matrix(20, 2), "hmc_init = \"base_measure\"", 1), ConfigError);
}

TEST(Mmd, BadKeysAreConfigErrorsNamingTheKey) {
  const GaussianModel model = standard_normal(true);
  RandomStream data_rng(400, "bad");
  const Matrix Y = data_rng.normal_matrix(20, 2);
  auto expect_error = [&](const std::string& keys, const std::string& key, const Matrix& rows) {
    try {
      evaluate(model, rows, keys, 1);
      ADD_FAILURE() << "no error for " << keys;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_error("bandwidth = 0.0", "bandwidth", Y);
  expect_error("bandwidth = -1.0", "bandwidth", Y);
  expect_error("samples = 1", "samples", Y);
  expect_error("permutations = -1", "permutations", Y);
  expect_error("hmc_chains = 0", "hmc_chains", Y);
  expect_error("hmc_target_acceptance = 1.0", "hmc_target_acceptance", Y);
  expect_error("hmc_init = \"somewhere\"", "hmc_init", Y);
  expect_error("bandwith = 1.0", "bandwith", Y);
  expect_error("bandwidth_rule = \"mean\"", "bandwidth_rule", Y);
  expect_error("bandwidth = 1.0\nbandwidth_rule = \"bkl\"", "bandwidth_rule", Y);
  expect_error("", "split", Matrix(Y.topRows(1)));
}

}  // namespace
}  // namespace kef::mmd_evaluator_test
