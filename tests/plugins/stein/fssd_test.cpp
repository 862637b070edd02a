// FSSD and relative FSSD: calibration under the null, power, the power criterion's gradient, and
// independence from the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fssd.hpp"
#include "fssd_power.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"  // Eigen (Dense includes the eigensolvers)
#include "stein_common.hpp"
#include "stein_test_util.hpp"

namespace kef::stein {
namespace {

using test_util::GaussianModel;

KernelPtr gaussian(double sigma) { return make_gaussian_kernel(kef::test::plugin_registry(), sigma); }

// Under H0 the scores are the truth's, E τ(x) = 0 (Stein's identity) and the FSSD² U-statistic has mean
// exactly 0; the mean of R independent copies then exceeds 4 sd/√R with probability 6e-5 (CLT).
// p-values: the Kolmogorov–Smirnov distance of R uniform p-values exceeds 1.949/√R with probability
// 0.001 (asymptotic Kolmogorov law); Monte Carlo p-values (1 + k)/(1 + B) are within 1/(B + 1) of the
// continuous p-value, so the bound grows by that. The null Σ ω (χ² − 1) with estimated ω is itself
// asymptotic; for N = 1000 its error on these quadratic forms is O(1/N) (Götze 1991), far below 0.14.
// The locations are drawn independently of the sample, as the test's theory assumes.
TEST(Fssd, NullStatisticIsCentredAndPValuesAreUniform) {
  constexpr int R = 200;
  constexpr Index N = 1000, D = 2, J = 5, B = 500;
  auto k = gaussian(1.2);
  GaussianModel truth(D, 0.0, 1.0);
  std::vector<double> stats, pvalues;
  for (int r = 0; r < R; ++r) {
    RandomStream rng(static_cast<std::uint64_t>(r), "fssd-null");
    const Matrix X = rng.normal_matrix(N, D), V = rng.normal_matrix(J, D);
    const FssdResult res = fssd_test(*k, V, X, truth.score(X), B, rng, Context(1, 1));
    stats.push_back(res.fssd2);
    pvalues.push_back(res.pvalue);
  }
  const auto [mean, sd] = test_util::mean_sd(stats);
  EXPECT_LT(std::abs(mean), 4.0 * sd / std::sqrt(double(R))) << "mean " << mean << " sd " << sd;
  EXPECT_LT(test_util::ks_uniform(pvalues), 1.949 / std::sqrt(double(R)) + 1.0 / (B + 1));
}

// The null sampler zᵀCz − tr C against its brute-force twin Σ ω_i (Z_i² − 1) with ω from an explicit
// eigendecomposition: both are samples of one law, so the two-sample Kolmogorov–Smirnov distance of
// n draws each exceeds 1.949·√(2/n) with probability 0.001 (asymptotic law). The mean (0) and variance
// (2 Σ ω²) are checked too, at 5 standard errors. A C with a zero and widely spread eigenvalues.
TEST(Fssd, QuadraticNullMatchesTheEigenvalueFormula) {
  constexpr Index P = 12, n = 20000;
  RandomStream rng(4, "quad-null");
  const Matrix A = rng.normal_matrix(P, P - 1);
  Vector scale(P - 1);
  for (Index i = 0; i < P - 1; ++i) scale[i] = std::pow(1.6, static_cast<double>(i) - 6.0);
  const Matrix C = A * scale.asDiagonal() * A.transpose() / double(P);
  const std::vector<double> fast = simulate_quadratic_null(C, n, rng.derive("fast"), Context(1, 2));
  const Vector omega = Eigen::SelfAdjointEigenSolver<Matrix>(C).eigenvalues().cwiseMax(0.0);
  std::vector<double> brute(static_cast<std::size_t>(n));
  RandomStream z = rng.derive("brute");
  for (auto& v : brute) {
    v = 0.0;
    for (Index i = 0; i < P; ++i) {
      const double x = z.normal();
      v += omega[i] * (x * x - 1.0);
    }
  }
  const auto [mean, sd] = test_util::mean_sd(fast);
  const double var = 2.0 * omega.squaredNorm();
  EXPECT_LT(std::abs(mean), 5.0 * std::sqrt(var / n));
  // Var of the sample variance of a χ² mixture: bounded here by its fourth moment, ≈ 60 var² / n.
  EXPECT_NEAR(sd * sd, var, 5.0 * std::sqrt(60.0 / n) * var);
  std::vector<double> a = fast, b = brute;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  double ks = 0.0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] <= b[j]) ++i; else ++j;
    ks = std::max(ks, std::abs(double(i) - double(j)) / double(n));
  }
  EXPECT_LT(ks, 1.949 * std::sqrt(2.0 / n));
  // A different C must be told apart (the check can fail).
  const std::vector<double> other = simulate_quadratic_null(2.0 * C, n, rng.derive("fast"), Context(1, 2));
  const auto [m2, sd2] = test_util::mean_sd(other);
  EXPECT_GT(sd2 * sd2, 3.0 * var);
  // And the draws do not depend on the thread count.
  EXPECT_EQ(simulate_quadratic_null(C, 300, rng.derive("t"), Context(1, 1)),
            simulate_quadratic_null(C, 300, rng.derive("t"), Context(1, 3)));
}

// The radial feature path (fssd_test's, n x J matrices) against its brute-force twin, the features
// from the kernel's derivative stacks. The two compute r = ‖x − v‖² differently (explicit differences
// against the kernel's centred expansion), which differ by ≲ 4Dε·R², R² the largest squared norm of the
// centred points; φ = exp(−r/(2σ²)) turns that into a relative error ≲ 2Dε·R²/σ², and the remaining
// products and sums add a few ε: |Δτ| ≤ 8ε(1 + D·R²/σ²)·max|τ|. FSSD² is a sum of N² such products
// divided by N(N − 1): its error is within 2·that relative bound of ‖Σ τ‖² + Σ ‖τ‖² over N(N − 1).
TEST(Fssd, RadialFeaturesEqualTheStackFeatures) {
  constexpr Index N = 300, D = 3, J = 7;
  const double sigma = 1.3;
  RandomStream rng(31, "fssd-radial");
  const Matrix X = rng.normal_matrix(N, D), V = 1.5 * rng.normal_matrix(J, D);
  const Matrix S = GaussianModel(Vector::Constant(D, 0.3), 1.2).score(X);
  auto k = gaussian(sigma);
  ASSERT_NE(k->radial_profile(), nullptr);
  KernelStacks stacks;
  Matrix T_stack, T_radial;
  fssd_features(*k, V, X, S, stacks, T_stack);
  FeatureWorkspace ws;
  fssd_features_radial(*k->radial_profile(), V, X, S, ws, T_radial);
  ASSERT_EQ(T_radial.rows(), N);
  ASSERT_EQ(T_radial.cols(), D * J);
  Matrix all(N + J, D);
  all << X, V;
  const double R2 = (all.rowwise() - all.colwise().mean()).rowwise().squaredNorm().maxCoeff();
  const double eps = 2.2e-16, rel = 8.0 * eps * (1.0 + D * R2 / (sigma * sigma));
  EXPECT_LT((T_radial - T_stack).cwiseAbs().maxCoeff(), rel * T_stack.cwiseAbs().maxCoeff());
  // The statistic fssd_test reports, against the direct formula on the stack features.
  RandomStream null_rng(1, "null");
  const FssdResult r = fssd_test(*k, V, X, S, 0, null_rng, Context(1, 2));
  const Vector sum = T_stack.colwise().sum().transpose();
  const double scale = double(N) * double(N - 1);
  const double expected = (sum.squaredNorm() - T_stack.squaredNorm()) / scale;
  EXPECT_NEAR(r.fssd2, expected, 2.0 * rel * (sum.squaredNorm() + T_stack.squaredNorm()) / scale);
  // The covariance behind the null (chunked rank updates) against (TᵀT − N μμᵀ)/(N − 1) from the stack
  // features. Each entry sums N products of features within rel of each other, and recursive summation
  // errs by at most Nε of the sum of magnitudes (Higham, Thm 4.4): with ‖τ‖∞ = t, the two TᵀT terms
  // differ by ≤ N(2·rel + 2Nε)t², and N μμᵀ likewise; divided by N − 1.
  const FssdMoments m = fssd_moments(*k, V, X, S, true, Context(1, 3));
  const Vector mu = sum / double(N);
  const Matrix cov = (T_stack.transpose() * T_stack - double(N) * mu * mu.transpose()) / double(N - 1);
  const double t = T_stack.cwiseAbs().maxCoeff();
  const double cov_tol = 2.0 * double(N) * (2.0 * rel + 2.0 * double(N) * eps) * t * t / double(N - 1);
  ASSERT_EQ(m.cov.rows(), D * J);
  EXPECT_LT((m.cov - cov).triangularView<Eigen::Lower>().toDenseMatrix().cwiseAbs().maxCoeff(), cov_tol);
  EXPECT_GT(cov.diagonal().minCoeff(), 100.0 * cov_tol);  // the comparison is not vacuous
}

// A large Gram (P = D·J = 513, four groups of 256-row chunks, rank updates of 128 rows and a partial
// one): the statistic and p-value do not depend on the thread count.
TEST(Fssd, LargeGramResultsDoNotDependOnTheThreadCount) {
  constexpr Index N = 1100, D = 3, J = 171;  // P = 513, three items, the last partial
  RandomStream rng(32, "fssd-large");
  const Matrix X = rng.normal_matrix(N, D), V = rng.normal_matrix(J, D);
  const Matrix S = GaussianModel(Vector::Constant(D, 0.2), 1.0).score(X);
  auto k = gaussian(1.5);
  RandomStream r1(2, "null");
  const FssdResult one = fssd_test(*k, V, X, S, 200, r1, Context(1, 1));
  for (int threads : {2, 3}) {
    RandomStream rt(2, "null");
    const FssdResult many = fssd_test(*k, V, X, S, 200, rt, Context(1, threads));
    EXPECT_EQ(one.fssd2, many.fssd2) << threads;
    EXPECT_EQ(one.pvalue, many.pvalue) << threads;
  }
}

// Power against a model shifted by 1 in every coordinate. Under H1, √N(FSSD²_est − FSSD²) → N(0, σ²_H1),
// so the test rejects unless the estimate falls √N·FSSD²/σ_H1 − c standard deviations low, c the null
// quantile on that scale (O(1/√N)). The test computes z = √N·FSSD²/σ_H1 from a large independent
// sample and requires z > 5 (a rejection probability above 1 − 3e-7 up to c); then fewer than 18 of 20
// rejections at level 0.05 has probability < 1e-10.
TEST(Fssd, DetectsAShiftedModel) {
  constexpr Index N = 500, D = 2, J = 5, B = 500;
  auto k = gaussian(1.2);
  GaussianModel wrong(D, 1.0, 1.0);
  RandomStream big(99, "fssd-power-big");
  const Matrix Xbig = big.normal_matrix(20000, D), Vfix = big.normal_matrix(J, D);
  const PowerCriterion pc = fssd_power_criterion(*k, Vfix, Xbig, wrong.score(Xbig), 0.0, Context(1, 2));
  EXPECT_GT(std::sqrt(double(N)) * pc.fssd2 / std::sqrt(pc.variance), 5.0);
  int rejections = 0;
  for (int r = 0; r < 20; ++r) {
    RandomStream rng(static_cast<std::uint64_t>(r), "fssd-power");
    const Matrix X = rng.normal_matrix(N, D);
    rejections += fssd_test(*k, Vfix, X, wrong.score(X), B, rng, Context(1, 1)).pvalue < 0.05;
  }
  EXPECT_GE(rejections, 18);
}

// The criterion is a smooth function of θ = (V, log σ); central differences with h = 1e-5 err by
// h²/6·|c'''| + ε|c|/h. Its third derivatives are those of exp(−r²/(2σ²)) (≤ ~10/σ³ per unit of |c|)
// times O(1) factors, about 10² |c| here, so the error is ≲ 2e-9 |c| + 1e-11: a relative 1e-6 is safe.
TEST(FssdPower, GradientMatchesCentralDifferences) {
  constexpr Index N = 300, D = 2, J = 3;  // two row chunks
  RandomStream rng(7, "fssd-grad");
  const Matrix X = rng.normal_matrix(N, D);
  const Matrix V0 = 0.8 * rng.normal_matrix(J, D);
  GaussianModel wrong(Vector::Constant(D, 0.3), 1.2);
  const Matrix S = wrong.score(X);
  const double gamma = 1e-4, log_sigma = std::log(1.3);
  auto k = gaussian(1.3);
  Matrix gV;
  double gs = 0.0;
  const PowerCriterion pc = fssd_power_criterion(*k, V0, X, S, gamma, Context(1, 1), &gV, &gs);
  ASSERT_GT(std::abs(pc.value), 1e-3);

  Vector theta(J * D + 1);
  theta.head(J * D) = Eigen::Map<const Vector>(V0.data(), J * D);
  theta[J * D] = log_sigma;
  auto f = [&](const Vector& t) {
    auto kk = gaussian(1.0);
    kk->set_parameters(Vector::Constant(1, t[J * D]));
    return fssd_power_criterion(*kk, Eigen::Map<const Matrix>(t.data(), J, D), X, S, gamma, Context(1, 1))
        .value;
  };
  const Vector fd = kef::test::numerical_gradient(f, theta);
  const double scale = std::max(1.0, fd.cwiseAbs().maxCoeff());
  for (Index i = 0; i < J * D; ++i) EXPECT_NEAR(gV.data()[i], fd[i], 1e-6 * scale) << "location entry " << i;
  EXPECT_NEAR(gs, fd[J * D], 1e-6 * scale);
}

TEST(FssdPower, OptimisationDoesNotDecreaseTheCriterion) {
  constexpr Index N = 400, D = 2, J = 3;
  RandomStream rng(8, "fssd-opt");
  const Matrix X = rng.normal_matrix(N, D);
  GaussianModel wrong(Vector::Constant(D, 0.3), 1.0);
  auto k = gaussian(1.0);
  const OptimizedLocations o = optimize_fssd_locations(*k, X.topRows(J), 1.0, X, wrong.score(X),
                                                       PowerOptions{1e-4, 30, 0.05}, Context(1, 1), nullptr);
  EXPECT_GE(o.final_criterion, o.initial_criterion);
  // The kernel is left at the returned bandwidth, and the criterion there is the reported one.
  EXPECT_DOUBLE_EQ(std::exp(k->parameters()[0]), o.bandwidth);
  EXPECT_EQ(fssd_power_criterion(*k, o.V, X, wrong.score(X), 1e-4, Context(1, 1)).value, o.final_criterion);
}

// Locations optimised on one part and tested on the disjoint rest: the p-values stay uniform under the
// null (same KS bound as above, R = 100).
TEST(Fssd, OptimizedLocationsKeepTheTestCalibrated) {
  constexpr int R = 100;
  constexpr Index N = 500, D = 2;
  GaussianModel truth(D, 0.0, 1.0);
  std::vector<double> pvalues;
  for (int r = 0; r < R; ++r) {
    RandomStream rng(static_cast<std::uint64_t>(r), "fssd-opt-null");
    const Dataset data = test_util::test_data(rng.normal_matrix(N, D));
    auto ev = test_util::make_evaluator(
        "type = \"fssd\"\nlocations = \"optimized\"\nJ = 3\noptimization_steps = 10\nnull_draws = 300", D,
        static_cast<std::uint64_t>(r));
    pvalues.push_back(test_util::run(*ev, truth, data, static_cast<std::uint64_t>(r))["fssd_pvalue"]);
  }
  EXPECT_LT(test_util::ks_uniform(pvalues), 1.949 / std::sqrt(double(R)) + 1.0 / 301);
}

TEST(Fssd, DkefLocationsWithASyntheticTruth) {
  auto& reg = kef::test::plugin_registry();
  RandomStream init(3, "source");
  auto source = reg.make_data_source(kef::test::config_from("type = \"synthetic/gaussian\"\nn = 500"),
                                     BuildContext{-1, &reg, &init, -1});
  RandomStream load(3, "load");
  SourceData sd = source->load(load);
  const Dataset data = test_util::test_data(sd.samples);
  auto e = test_util::make_evaluator("type = \"fssd\"\nJ = 20", sd.samples.cols());
  const auto truth = test_util::run(*e, *sd.truth, data, 5);
  GaussianModel shifted(sd.samples.cols(), 1.0, 1.0);
  const auto wrong = test_util::run(*e, shifted, data, 5);
  EXPECT_EQ(truth["fssd_locations"], 20.0);
  EXPECT_EQ(truth["fssd_bandwidth"], wrong["fssd_bandwidth"]);  // median heuristic of the same rows
  EXPECT_LT(truth["fssd2"], wrong["fssd2"]);
  EXPECT_LT(wrong["fssd_pvalue"], 0.01);
}

TEST(Fssd, ResultsDoNotDependOnTheThreadCount) {
  constexpr Index N = 700, D = 3;  // three row chunks
  RandomStream rng(11, "fssd-threads");
  const Dataset data = test_util::test_data(rng.normal_matrix(N, D));
  GaussianModel model(Vector::Constant(D, 0.2), 1.1);
  for (const char* toml : {"type = \"fssd\"\nJ = 7", "type = \"fssd\"\nlocations = \"optimized\"\nJ = 4\noptimization_steps = 15"}) {
    auto e = test_util::make_evaluator(toml, D);
    const auto one = test_util::run(*e, model, data, 4, 1);
    for (int threads : {2, 3}) {
      const auto many = test_util::run(*e, model, data, 4, threads);
      ASSERT_EQ(one.values.size(), many.values.size());
      for (std::size_t i = 0; i < one.values.size(); ++i)
        EXPECT_EQ(one.values[i].second, many.values[i].second) << toml << ": " << one.values[i].first;
    }
  }
}

TEST(RelativeFssd, SwappingTheModelsFlipsTheStatisticExactly) {
  constexpr Index N = 600, D = 2;
  RandomStream rng(12, "rel-swap");
  const Dataset data = test_util::test_data(rng.normal_matrix(N, D));
  GaussianModel p(Vector::Constant(D, 0.3), 1.0), q(Vector::Constant(D, -0.1), 1.4);
  auto e = test_util::make_evaluator("type = \"relative_fssd\"\nJ = 10", D);
  const auto pq = test_util::run(*e, p, data, 1, 1, &q);
  const auto qp = test_util::run(*e, q, data, 2, 2, &p);  // another per-model stream and thread count
  EXPECT_EQ(pq["relative_fssd_statistic"], -qp["relative_fssd_statistic"]);
  EXPECT_EQ(pq["relative_fssd_fssd2"], qp["relative_fssd_fssd2_against"]);
  // 1 − Φ(z) and 1 − Φ(−z) sum to 1 up to the rounding of erfc.
  EXPECT_NEAR(pq["relative_fssd_pvalue"] + qp["relative_fssd_pvalue"], 1.0, 1e-15);
}

// With the truth against a model shifted by 1, z = √N (FSSD²_p − FSSD²_q)/σ grows like √N; at N = 1000
// it is far beyond the 1e-4 tails (|z| > 3.7), checked both ways.
TEST(RelativeFssd, FavoursTheTruthOverAPerturbedModel) {
  constexpr Index N = 1000, D = 2;
  RandomStream rng(13, "rel-truth");
  const Dataset data = test_util::test_data(rng.normal_matrix(N, D));
  GaussianModel truth(D, 0.0, 1.0), perturbed(D, 1.0, 1.0);
  auto e = test_util::make_evaluator("type = \"relative_fssd\"\nJ = 10", D);
  // Evaluated = perturbed, against = truth: small p-value means `against` fits better.
  const auto a = test_util::run(*e, perturbed, data, 1, 1, &truth);
  EXPECT_GT(a["relative_fssd_statistic"], 0.0);
  EXPECT_LT(a["relative_fssd_pvalue"], 1e-4);
  const auto b = test_util::run(*e, truth, data, 1, 1, &perturbed);
  EXPECT_GT(b["relative_fssd_pvalue"], 1.0 - 1e-4);
  // The same model on both sides: statistic exactly 0, p-value 1/2.
  const auto c = test_util::run(*e, truth, data, 1, 1, &truth);
  EXPECT_EQ(c["relative_fssd_statistic"], 0.0);
  EXPECT_EQ(c["relative_fssd_pvalue"], 0.5);
}

// The summary line states the test's outcome at its level: kef 0.3.0 appended "(small: q fits better)"
// whatever the p-value, e.g. at p = 0.5 for a model against itself.
TEST(RelativeFssd, SummaryFollowsTheOutcomeAtItsLevel) {
  EXPECT_EQ(relative_fssd_verdict(0.54, 0.05, "lite", "dkef"),
            "no significant difference between lite and dkef at level 0.05");
  EXPECT_EQ(relative_fssd_verdict(0.01, 0.05, "lite", "dkef"),
            "dkef fits significantly better than lite at level 0.05");
  EXPECT_EQ(relative_fssd_verdict(0.995, 0.05, "lite", "dkef"),
            "lite fits significantly better than dkef at level 0.05");
  EXPECT_EQ(relative_fssd_verdict(0.05, 0.05, "p", "q"),
            "no significant difference between p and q at level 0.05")
      << "p < alpha rejects, p = alpha does not";

  constexpr Index N = 1000, D = 2;
  RandomStream rng(13, "rel-truth");
  const Dataset data = test_util::test_data(rng.normal_matrix(N, D));
  GaussianModel truth(D, 0.0, 1.0), perturbed(D, 1.0, 1.0);
  auto e = test_util::make_evaluator("type = \"relative_fssd\"\nJ = 10", D);
  auto summary = [&](const Model& p, const std::string& p_name, const Model& q, const std::string& q_name) {
    Context context = Context(1, 1).child("evaluate");
    EvalInput in{p, p_name, data, context, &q, q_name};
    return e->evaluate(in).summary;
  };
  const std::string same = summary(truth, "truth", truth, "copy");
  EXPECT_NE(same.find("p-value 0.5: no significant difference between truth and copy at level 0.05"),
            std::string::npos)
      << same;
  EXPECT_EQ(same.find("fits"), std::string::npos) << same;
  const std::string worse = summary(perturbed, "shifted", truth, "truth");
  EXPECT_NE(worse.find("truth fits significantly better than shifted"), std::string::npos) << worse;
  const std::string better = summary(truth, "truth", perturbed, "shifted");
  EXPECT_NE(better.find("truth fits significantly better than shifted"), std::string::npos) << better;
}

}  // namespace
}  // namespace kef::stein
