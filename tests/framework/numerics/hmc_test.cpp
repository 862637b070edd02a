// HMC in the framework: correctness on targets with known moments (tolerances from the reported ESS),
// convergence diagnostics, determinism over thread counts, and every error path.
#include <gtest/gtest.h>

#include <cmath>

#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using test::BoxedNormal;
using test::GaussianModel;
using test::MixtureModel;

// Chain c of interleaved output: rows c, c + C, c + 2C, ...
std::vector<Matrix> per_chain(const Matrix& X, Index chains) {
  std::vector<Matrix> out;
  const Index s = X.rows() / chains;
  for (Index c = 0; c < chains; ++c) {
    Matrix m(s, X.cols());
    for (Index i = 0; i < s; ++i) m.row(i) = X.row(i * chains + c);
    out.push_back(m);
  }
  return out;
}

// Applies f to each draw of each chain (f: row -> values), keeping the chain structure for ESS.
std::vector<Matrix> transform(const std::vector<Matrix>& chains, Index k,
                              const std::function<Vector(const Eigen::RowVectorXd&)>& f) {
  std::vector<Matrix> out;
  for (const Matrix& m : chains) {
    Matrix t(m.rows(), k);
    for (Index i = 0; i < m.rows(); ++i) t.row(i) = f(m.row(i)).transpose();
    out.push_back(t);
  }
  return out;
}

// Split-R̂ bound for converged chains: with C chains split in two, R̂² − 1 ≈ (B/n)/W − 1/n and
// (2C − 1)·(B/n)/(W·2C/ESS) ~ χ²_{2C−1}; χ²_7 has its 0.999 quantile at 24.32 = 3.47·7, so for C = 4
// R̂ < sqrt(1 + 8·3.47/ESS) fails with probability ~1e-3 per coordinate.
double r_hat_bound(double ess) { return std::sqrt(1.0 + 8.0 * 3.47 / ess); }

Matrix overdispersed(const Vector& centre, double spread, Index rows, std::uint64_t seed) {
  RandomStream rng(seed, "init");
  return (spread * rng.normal_matrix(rows, centre.size())).rowwise() + centre.transpose();
}

GaussianModel correlated_gaussian() {
  Vector mu(2);
  mu << 1.0, -2.0;
  Matrix cov(2, 2);
  cov << 1.0, 1.6, 1.6, 4.0;  // σ = (1, 2), correlation 0.8
  return GaussianModel(mu, cov);
}

TEST(Hmc, RecoversMeanAndCovarianceOfACorrelatedGaussian) {
  const GaussianModel model = correlated_gaussian();
  HmcOptions o;
  o.chains = 4;
  o.warmup = 500;
  o.samples = 1000;
  o.init_points = overdispersed(model.mean(), 3.0, 8, 1);
  RandomStream rng(11, "hmc-gaussian");
  HmcDiagnostics diag;
  const Matrix X = run_hmc(model, rng, o, Context(1, 2), &diag);
  ASSERT_EQ(X.rows(), 4000);
  ASSERT_EQ(X.cols(), 2);
  const Vector mu = model.mean();
  const Matrix& S = model.cov();

  // Means: standard error σ_d / sqrt(ESS_d), with the sampler's own ESS.
  const Vector mean = X.colwise().mean();
  for (Index d = 0; d < 2; ++d) {
    const double se = std::sqrt(S(d, d) / diag.ess[d]);
    EXPECT_LT(std::abs(mean[d] - mu[d]), 5 * se) << "coordinate " << d << ", ESS " << diag.ess[d];
  }
  // Covariance entries are means of z = (x_i − μ_i)(x_j − μ_j) (true μ), whose variance is known
  // for a Gaussian: Var z = Σ_ii Σ_jj + Σ_ij²; the ESS is that of z itself.
  const auto chains = per_chain(X, 4);
  const auto z = transform(chains, 3, [&](const Eigen::RowVectorXd& x) {
    Vector v(3);
    const double a = x[0] - mu[0], b = x[1] - mu[1];
    v << a * a, b * b, a * b;
    return v;
  });
  const Vector ess_z = effective_sample_size(z);
  const int ij[3][2] = {{0, 0}, {1, 1}, {0, 1}};
  for (int k = 0; k < 3; ++k) {
    const int i = ij[k][0], j = ij[k][1];
    double sum = 0;
    for (const Matrix& m : z) sum += m.col(k).sum();
    const double est = sum / 4000.0;
    const double se = std::sqrt((S(i, i) * S(j, j) + S(i, j) * S(i, j)) / ess_z[k]);
    EXPECT_LT(std::abs(est - S(i, j)), 5 * se) << "Σ(" << i << "," << j << ") = " << est << ", ESS " << ess_z[k];
  }

  // Diagnostics. Dual averaging makes the mean accept statistic *during adaptation* 0.8; the final
  // step is the average of the log-step iterates, which is smaller than steps the iterates reach,
  // so after warm-up the statistic lands at or above the target (Stan shows the same), but never
  // at 1 (a step too small to be useful). Acceptance rate = mean accept statistic in expectation.
  EXPECT_TRUE(diag.ran);
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_GT(diag.mean_accept_stat[c], 0.7);
    EXPECT_LT(diag.mean_accept_stat[c], 0.99);
    EXPECT_NEAR(diag.acceptance_rate[c], diag.mean_accept_stat[c], 5 * std::sqrt(0.25 / 1000));
  }
  EXPECT_EQ(diag.total_divergences(), 0);  // a Gaussian has no region where leapfrog blows up
  for (double e : diag.step_size) EXPECT_TRUE(e > 0 && std::isfinite(e));
  // 10 leapfrog steps on a 2-D Gaussian with an adapted mass give nearly independent draws; an ESS
  // below 10% of the draws would mean the sampler is not mixing.
  EXPECT_GT(diag.min_ess(), 400);
  for (Index d = 0; d < 2; ++d) EXPECT_LT(diag.r_hat[d], r_hat_bound(diag.ess[d]));
  // The adapted inverse mass estimates the marginal variances (1 and 4) from ~375 correlated draws.
  for (Index c = 0; c < 4; ++c) {
    EXPECT_GT(diag.inverse_mass(c, 0), 0.5);
    EXPECT_LT(diag.inverse_mass(c, 0), 2.0);
    EXPECT_GT(diag.inverse_mass(c, 1), 2.0);
    EXPECT_LT(diag.inverse_mass(c, 1), 8.0);
  }
}

TEST(Hmc, IdentityMassStillRecoversTheMean) {
  const GaussianModel model = correlated_gaussian();
  HmcOptions o;
  o.adapt_mass = false;
  o.samples = 1000;
  o.init_points = overdispersed(model.mean(), 3.0, 8, 2);
  RandomStream rng(12, "hmc-identity");
  HmcDiagnostics diag;
  const Matrix X = run_hmc(model, rng, o, Context(1, 0), &diag);
  EXPECT_EQ(diag.inverse_mass, Matrix::Ones(4, 2));
  const Vector mean = X.colwise().mean();
  for (Index d = 0; d < 2; ++d)
    EXPECT_LT(std::abs(mean[d] - model.mean()[d]), 5 * std::sqrt(model.cov()(d, d) / diag.ess[d]));
}

TEST(Hmc, RecoversTheWeightsOfATwoComponentMixture) {
  // 0.3·N(−1, 0.5²) + 0.7·N(1, 0.5²): the density between the modes is ~20% of the peak, so chains
  // cross freely. P(x < 0) = 0.3 Φ(2) + 0.7 Φ(−2); mean 0.4; variance 0.25 + 1 − 0.4² = 1.09.
  const MixtureModel model(0.3, -1.0, 1.0, 0.5);
  auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double p_left = 0.3 * Phi(2.0) + 0.7 * Phi(-2.0);
  HmcOptions o;
  o.samples = 2000;
  o.init_points = (Matrix(3, 1) << -2.0, 0.0, 2.0).finished();
  RandomStream rng(21, "hmc-mixture");
  HmcDiagnostics diag;
  const Matrix X = run_hmc(model, rng, o, Context(1, 0), &diag);
  const auto chains = per_chain(X, o.chains);
  const auto left = transform(chains, 1, [](const Eigen::RowVectorXd& x) {
    return Vector::Constant(1, x[0] < 0 ? 1.0 : 0.0);
  });
  const double ess_left = effective_sample_size(left)[0];
  ASSERT_GT(ess_left, 100) << "too few mode switches for a meaningful weight estimate";
  const double frac = (X.col(0).array() < 0).cast<double>().mean();
  // Binomial standard error with the indicator's ESS.
  EXPECT_LT(std::abs(frac - p_left), 5 * std::sqrt(p_left * (1 - p_left) / ess_left))
      << "fraction left " << frac << ", expected " << p_left << ", ESS " << ess_left;
  EXPECT_LT(std::abs(X.col(0).mean() - 0.4), 5 * std::sqrt(1.09 / diag.ess[0]));
  EXPECT_LT(diag.r_hat[0], r_hat_bound(diag.ess[0]));
  EXPECT_EQ(diag.total_divergences(), 0);
}

TEST(Hmc, SameSeedGivesIdenticalSamplesForAnyThreadCount) {
  const GaussianModel model = correlated_gaussian();
  for (Index batch : {1, 2, 3}) {
    HmcOptions o;
    o.chains = 5;  // with batch 2 or 3 the last group is smaller
    o.warmup = 100;
    o.samples = 50;
    o.chains_per_batch = batch;
    o.init_points = overdispersed(model.mean(), 1.0, 5, 3);
    Matrix runs[2];
    HmcDiagnostics diags[2];
    for (int t = 0; t < 2; ++t) {
      RandomStream rng(31, "hmc-threads");
      runs[t] = run_hmc(model, rng, o, Context(1, t + 1), &diags[t]);
    }
    EXPECT_EQ(runs[0], runs[1]) << "chains_per_batch " << batch;
    EXPECT_EQ(diags[0].step_size, diags[1].step_size);
    EXPECT_EQ(diags[0].acceptance_rate, diags[1].acceptance_rate);
  }
}

TEST(Hmc, SuccessiveCallsAndSeedsGiveDifferentSamples) {
  const GaussianModel model = correlated_gaussian();
  HmcOptions o;
  o.warmup = 50;
  o.samples = 10;
  o.init_points = model.mean().transpose();
  RandomStream a(1, "x"), b(2, "x");
  const Matrix first = run_hmc(model, a, o, Context(1, 0)), second = run_hmc(model, a, o, Context(1, 0)),
               other = run_hmc(model, b, o, Context(1, 0));
  EXPECT_NE(first, second);
  EXPECT_NE(first, other);
}

TEST(Hmc, NonFiniteDensityDuringSamplingIsARejectedDivergence) {
  // Outside the box log p~ and the score are NaN; the chain must stay inside and count divergences.
  const BoxedNormal model(2, 1.5);
  HmcOptions o;
  o.samples = 300;
  o.init_points = Matrix::Zero(1, 2);
  RandomStream rng(41, "hmc-box");
  HmcDiagnostics diag;
  const Matrix X = run_hmc(model, rng, o, Context(1, 0), &diag);
  EXPECT_LT(X.cwiseAbs().maxCoeff(), 1.5);
  EXPECT_GT(diag.total_divergences() + diag.warmup_divergences, 0);
  EXPECT_TRUE(X.allFinite());
}

// Chains from the origin of a 2-D model with a fixed (not adapted) step size.
HmcOptions fixed_step_from_origin(Index chains, Index samples, Index warmup, double step) {
  HmcOptions o;
  o.chains = chains;
  o.samples = samples;
  o.warmup = warmup;
  o.step_size = step;
  o.adapt_step_size = false;
  o.init_points = Matrix::Zero(1, 2);
  return o;
}

TEST(Hmc, AChainThatAcceptsNothingIsNamed) {
  // A fixed step far larger than the box: every trajectory leaves it, so no chain ever moves.
  const BoxedNormal model(2, 1e-3);
  const HmcOptions o = fixed_step_from_origin(2, 50, 20, 1.5);
  RandomStream rng(43, "hmc-stuck");
  HmcDiagnostics diag;
  const Matrix X = run_hmc(model, rng, o, Context(1, 0), &diag);
  EXPECT_EQ(X, Matrix::Zero(X.rows(), 2));
  EXPECT_EQ(diag.stuck_chains(), (std::vector<Index>{0, 1}));
  EXPECT_EQ(diag.stuck_chains_text(), "chain 0 (step size 1.5), chain 1 (step size 1.5)");
  EXPECT_NE(diag.summary().find("accepted nothing after warm-up: chain 0"), std::string::npos) << diag.summary();
  // Chains that move are not named.
  const BoxedNormal roomy(2, 50.0);
  HmcOptions ok = o;
  ok.step_size = 0.3;
  RandomStream rng2(43, "hmc-stuck");
  HmcDiagnostics moved;
  run_hmc(roomy, rng2, ok, Context(1, 0), &moved);
  EXPECT_TRUE(moved.stuck_chains().empty());
  EXPECT_EQ(moved.summary().find("accepted nothing"), std::string::npos) << moved.summary();
}

TEST(Hmc, AComponentErrorDuringATrajectoryIsADivergenceNotAFailure) {
  // kef 0.2 let the NumericalError escape and lost the run (`kef sample` with a generalised-normal
  // q0). Now the rows that throw are divergences, the others of the batch go on, and the chains stay
  // where the model is usable. A large fixed step leaves the box often.
  const test::ThrowingOutsideBox model(2, 2.0);
  HmcOptions o = fixed_step_from_origin(4, 200, 50, 1.5);
  o.chains_per_batch = 4;  // one batch: a throw must not take the other chains' rows with it
  RandomStream rng(5, "hmc-throw");
  HmcDiagnostics diag;
  const Matrix X = run_hmc(model, rng, o, Context(1, 0), &diag);
  EXPECT_GT(model.throws.load(), 0);
  EXPECT_GT(diag.error_divergences, 0);
  EXPECT_LE(diag.error_divergences, diag.total_divergences() + diag.warmup_divergences);
  EXPECT_NE(diag.first_error.find("non-finite value inf"), std::string::npos) << diag.first_error;
  EXPECT_NE(diag.summary().find("where the model threw"), std::string::npos) << diag.summary();
  EXPECT_TRUE(X.allFinite());
  EXPECT_LT(X.cwiseAbs().maxCoeff(), 2.0);
  EXPECT_GT(diag.mean_acceptance(), 0.05) << "chains still move";
  // Same seed, one thread: the row-by-row fallback keeps results independent of the threads.
  RandomStream rng2(5, "hmc-throw");
  EXPECT_EQ(run_hmc(model, rng2, o, Context(1, 1)), X);
}

TEST(Hmc, AComponentErrorAtTheStartNamesTheModelAndTheCaller) {
  const test::ThrowingOutsideBox model(2, 2.0);
  HmcOptions o;
  o.chains = 2;
  o.warmup = 10;
  o.samples = 10;
  o.init_points = (Matrix(2, 2) << 0.0, 0.0, 5.0, 5.0).finished();
  o.context = "model gn-dkef (evaluator mmd)";
  RandomStream rng(1, "bad-start");
  try {
    run_hmc(model, rng, o, Context(1, 0));
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model gn-dkef (evaluator mmd)"), std::string::npos) << what;
    EXPECT_NE(what.find("chain 1"), std::string::npos) << what;
    EXPECT_NE(what.find("test/throwing: log density: non-finite value inf"), std::string::npos) << what;
    EXPECT_EQ(what.find("HMC: HMC"), std::string::npos) << what;
  }
}

TEST(Hmc, NonFiniteStartingPointIsANumericalErrorNamingTheChain) {
  const BoxedNormal model(2, 1.5);
  HmcOptions o;
  o.chains = 2;
  o.chains_per_batch = 1;
  o.warmup = 10;
  o.samples = 10;
  // Two rows for two chains: chain c starts at row c (distinct rows, in increasing order).
  o.init_points = (Matrix(2, 2) << 0.0, 0.0, 5.0, 5.0).finished();
  RandomStream rng(1, "bad-start");
  try {
    run_hmc(model, rng, o, Context(1, 0));
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("chain 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("starting point"), std::string::npos) << e.what();
  }
}

TEST(Hmc, InvalidOptionsAreConfigErrorsNamingTheOption) {
  const GaussianModel model = correlated_gaussian();
  auto expect_error = [&](const std::function<void(HmcOptions&)>& edit, const std::string& name) {
    HmcOptions o;
    o.samples = 10;
    o.init_points = model.mean().transpose();
    edit(o);
    RandomStream rng(1, "bad");
    try {
      run_hmc(model, rng, o, Context(1, 0));
      ADD_FAILURE() << "no error for " << name;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("`" + name + "`"), std::string::npos) << e.what();
    }
  };
  expect_error([](HmcOptions& o) { o.chains = 0; }, "chains");
  expect_error([](HmcOptions& o) { o.warmup = -1; }, "warmup");
  expect_error([](HmcOptions& o) { o.samples = 0; }, "samples");
  expect_error([](HmcOptions& o) { o.leapfrog_steps = 0; }, "leapfrog_steps");
  expect_error([](HmcOptions& o) { o.step_size = 0; }, "step_size");
  expect_error([](HmcOptions& o) { o.step_size = std::nan(""); }, "step_size");
  expect_error([](HmcOptions& o) { o.target_acceptance = 1.0; }, "target_acceptance");
  expect_error([](HmcOptions& o) { o.step_size_jitter = 1.0; }, "step_size_jitter");
  expect_error([](HmcOptions& o) { o.thinning = 0; }, "thinning");
  expect_error([](HmcOptions& o) { o.chains_per_batch = 0; }, "chains_per_batch");
  expect_error([](HmcOptions& o) { o.init_points = Matrix::Zero(1, 3); }, "init_points");
  expect_error([](HmcOptions& o) { o.init_points(0, 0) = INFINITY; }, "init_points");
  expect_error([](HmcOptions& o) { o.init = HmcInit::Points; o.init_points.resize(0, 2); }, "init_points");
  expect_error([](HmcOptions& o) { o.init = HmcInit::BaseMeasure; }, "init");
  // No points and no base measure: nowhere to start.
  HmcOptions o;
  o.samples = 10;
  RandomStream rng(1, "bad");
  EXPECT_THROW(run_hmc(model, rng, o, Context(1, 0)), ConfigError);
}

TEST(Hmc, DrawSamplesUsesTheExactSamplerWhenThereIsOne) {
  const GaussianModel truth = correlated_gaussian();
  const GaussianModel exact(truth.mean(), truth.cov(), true);
  RandomStream a(5, "draw"), b(5, "draw");
  HmcDiagnostics diag;
  diag.ran = true;
  const Matrix X = draw_samples(exact, 10, a, HmcOptions{}, Context(1, 0), &diag);
  EXPECT_EQ(X, exact.sample(10, b));
  EXPECT_FALSE(diag.ran);

  // Without one, HMC with ceil(n / chains) draws per chain, truncated to n rows.
  HmcOptions o;
  o.warmup = 50;
  o.init_points = truth.mean().transpose();
  const Matrix Y = draw_samples(truth, 10, a, o, Context(1, 0), &diag);
  EXPECT_EQ(Y.rows(), 10);
  EXPECT_TRUE(diag.ran);
  EXPECT_EQ(diag.samples, 3);
  o.samples = 2;  // 4 chains x 2 < 10
  EXPECT_THROW(draw_samples(truth, 10, a, o, Context(1, 0)), ConfigError);
  EXPECT_THROW(draw_samples(truth, 0, a, HmcOptions{}, Context(1, 0)), ConfigError);
}

TEST(Hmc, DefaultOptionsStartFromTheBaseMeasure) {
  // What `kef sample` does with a saved model: HmcOptions{} and no starting points.
  GaussianModel model = correlated_gaussian();
  model.set_base_measure(test::plugin_registry().make_base_measure(
      test::config_from("type = \"gaussian\"\nstd = 4.0"), BuildContext{2, nullptr, nullptr, -1}));
  RandomStream rng(9, "sample");
  HmcDiagnostics diag;
  const Matrix X = draw_samples(model, 1000, rng, HmcOptions{}, Context(1, 0), &diag);
  ASSERT_EQ(X.rows(), 1000);
  EXPECT_TRUE(diag.ran);
  EXPECT_EQ(diag.warmup, 500);
  const Vector mean = X.colwise().mean();
  for (Index d = 0; d < 2; ++d)
    EXPECT_LT(std::abs(mean[d] - model.mean()[d]), 5 * std::sqrt(model.cov()(d, d) / diag.ess[d]));
}

TEST(Hmc, ThinningKeepsEveryKthDraw) {
  const GaussianModel model = correlated_gaussian();
  HmcOptions o;
  o.warmup = 20;
  o.samples = 7;
  o.thinning = 3;
  o.init_points = model.mean().transpose();
  RandomStream rng(6, "thin");
  HmcDiagnostics diag;
  EXPECT_EQ(run_hmc(model, rng, o, Context(1, 0), &diag).rows(), 28);
  EXPECT_EQ(diag.samples, 7);
  EXPECT_TRUE(diag.ess.hasNaN());  // fewer than 8 draws per chain: no estimate
}

TEST(HmcDiagnosticsFunctions, EssMatchesKnownAutocorrelation) {
  // AR(1) x_t = φ x_{t−1} + e_t has integrated autocorrelation time (1 + φ)/(1 − φ). With 4 chains of
  // 5000 draws the estimator's relative standard error is about sqrt(2·T/N) for a truncation lag T
  // of a few τ (≈ 60 here, ≈ 2 for φ = 0): ≈ 0.08 and ≈ 0.015; the bounds are ~3 of those.
  for (double phi : {0.0, 0.9}) {
    RandomStream rng(7, "ar1");
    std::vector<Matrix> chains;
    for (int c = 0; c < 4; ++c) {
      Matrix m(5000, 1);
      double x = rng.normal() / std::sqrt(1 - phi * phi);
      for (Index t = 0; t < 5000; ++t) {
        x = phi * x + rng.normal();
        m(t, 0) = x;
      }
      chains.push_back(m);
    }
    const double expected = 20000.0 * (1 - phi) / (1 + phi);
    const double ess = effective_sample_size(chains)[0];
    const double tol = phi == 0.0 ? 0.06 : 0.25;
    EXPECT_NEAR(ess / expected, 1.0, tol) << "phi " << phi;
    EXPECT_LT(split_r_hat(chains)[0], r_hat_bound(ess));
  }
}

TEST(HmcDiagnosticsFunctions, SplitRHatFlagsChainsThatDisagree) {
  RandomStream rng(8, "rhat");
  std::vector<Matrix> chains;
  for (int c = 0; c < 4; ++c) chains.push_back(rng.normal_matrix(500, 1).array() + (c < 2 ? 0.0 : 2.0));
  EXPECT_GT(split_r_hat(chains)[0], 1.3);
  // A trend within each chain is caught by splitting, even when all chains agree.
  std::vector<Matrix> trending;
  for (int c = 0; c < 4; ++c) {
    Matrix m = rng.normal_matrix(500, 1);
    for (Index t = 0; t < 500; ++t) m(t, 0) += 6.0 * t / 500.0;
    trending.push_back(m);
  }
  EXPECT_GT(split_r_hat(trending)[0], 1.3);
}

}  // namespace
}  // namespace kef
