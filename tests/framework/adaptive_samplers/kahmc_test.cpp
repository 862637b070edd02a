// Kernel adaptive HMC (kef/kahmc.hpp), the target kind (kef/target.hpp) and `kef sample --sampler
// kahmc|rwm`: correctness on a Gaussian (also with a deliberately poor surrogate), the refit
// schedule, seeds and threads, registration of targets through plugins, and the error paths.
#include "kef/kahmc.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "kef/clonable.hpp"
#include "kef/data_source.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/model_target.hpp"
#include "kef/npy.hpp"
#include "kef/registry.hpp"
#include "kef/target.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

// N(mean, Σ) with Σ = L Lᵀ, up to a constant: a target the tests know the moments of.
class GaussianTarget final : public Clonable<GaussianTarget, Target> {
 public:
  GaussianTarget(Vector mean, Matrix cov) : mean_(std::move(mean)), cov_(std::move(cov)) {
    chol_ = cov_.llt().matrixL();
  }
  Index dim() const override { return mean_.size(); }
  // −½‖L⁻¹(x − μ)‖²: a sum of squares, so −∞ far out, never NaN (a poor surrogate throws
  // trajectories very far).
  Vector log_density(const Matrix& X) const override {
    if (X.cols() != dim()) throw DataError("GaussianTarget: wrong dimension");
    const Matrix C = (X.rowwise() - mean_.transpose()).transpose();
    const Matrix Z = chol_.triangularView<Eigen::Lower>().solve(C);
    return -0.5 * Z.colwise().squaredNorm().transpose();
  }
  const Vector& mean() const { return mean_; }
  const Matrix& cov() const { return cov_; }

 private:
  Vector mean_;
  Matrix cov_, chol_;
};

GaussianTarget correlated_gaussian() {
  Vector mean(2);
  mean << 1.0, -2.0;
  Matrix cov(2, 2);
  cov << 1.0, 0.6, 0.6, 2.0;
  return GaussianTarget(mean, cov);
}

KernelFamily gaussian_kernels() {
  return [](double sigma) {
    Config k = test::config_from("type = \"gaussian\"\n");
    k.set("sigma", sigma);
    return test::plugin_registry().make_kernel(k, BuildContext{});
  };
}

KahmcOptions small_options() {
  KahmcOptions o;
  o.chains = 4;
  o.burn_in = 300;
  o.warmup = 300;
  o.samples = 1500;
  o.history_points = 150;
  return o;
}

KahmcResult run(const Target& t, const KahmcOptions& o, std::uint64_t seed = 1, int threads = 1) {
  Context ctx(seed, threads);
  return run_kahmc(t, gaussian_kernels(), ctx.rng(), o, ctx);
}

// The mean and covariance of the draws agree with the target's within Monte Carlo error: each
// mean within 4.5 standard errors sd/√ESS, each (co)variance within 4.5 standard errors of the
// sample covariance of a Gaussian, √((Σ_ij² + Σ_ii Σ_jj)/ESS), with the smallest ESS.
void expect_moments(const KahmcResult& r, const GaussianTarget& t) {
  const Index D = t.dim();
  const double ess = r.min_ess();
  ASSERT_TRUE(std::isfinite(ess));
  ASSERT_GT(ess, 100.0) << "too few effective draws for a meaningful check: " << r.summary();
  const Vector mean = r.samples.colwise().mean().transpose();
  const Matrix C = r.samples.rowwise() - mean.transpose();
  const Matrix cov = C.transpose() * C / double(r.samples.rows() - 1);
  for (Index d = 0; d < D; ++d) {
    const double se = std::sqrt(t.cov()(d, d) / ess);
    EXPECT_NEAR(mean[d], t.mean()[d], 4.5 * se) << "coordinate " << d << "; " << r.summary();
  }
  for (Index i = 0; i < D; ++i)
    for (Index j = 0; j <= i; ++j) {
      const double s = t.cov()(i, j);
      const double se = std::sqrt((s * s + t.cov()(i, i) * t.cov()(j, j)) / ess);
      EXPECT_NEAR(cov(i, j), s, 4.5 * se) << "cov(" << i << ", " << j << "); " << r.summary();
    }
  EXPECT_LT(r.max_r_hat(), 1.05) << r.summary();
}

TEST(Kahmc, GaussianTargetMomentsWithinMonteCarloError) {
  const GaussianTarget t = correlated_gaussian();
  const KahmcResult r = run(t, small_options());
  expect_moments(r, t);
  // One evaluation per iteration and chain, plus the starting points; a divergent trajectory (its
  // surrogate score not finite) ends before the target is evaluated.
  const KahmcOptions o = small_options();
  Index divergences = 0;
  for (Index d : r.divergences) divergences += d;
  EXPECT_EQ(r.target_evaluations, o.chains * (1 + o.burn_in + o.warmup + o.samples) - divergences);
  // On a Gaussian the surrogate is good: HMC moves accept often, so the surrogate is really used.
  EXPECT_GT(r.mean_acceptance(), 0.5) << r.summary();
  for (const auto& refits : r.refits) {
    ASSERT_FALSE(refits.empty());
    EXPECT_EQ(refits.front(), 1);  // the first fit happens when HMC starts
  }
}

// The Nyström surrogate (the first-derivative basis at ⌈√n log n⌉ history rows): the same moments
// within Monte Carlo error, its HMC moves accepted often, and bitwise independent of the thread count.
TEST(Kahmc, NystromSurrogateTargetsTheGaussianIndependentlyOfThreads) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.surrogate = KahmcSurrogate::Nystrom;
  const KahmcResult r = run(t, o);
  expect_moments(r, t);
  EXPECT_GT(r.mean_acceptance(), 0.5) << r.summary();
  EXPECT_EQ(r.total_refits(), [&] {
    Index n = 0;
    for (const auto& f : r.refits) n += static_cast<Index>(f.size());
    return n;
  }());
  o.chains = 2;
  o.samples = 100;
  const KahmcResult a = run(t, o, 9, 1), b = run(t, o, 9, 3);
  EXPECT_TRUE(a.samples == b.samples);
  // A different basis from lite's: different draws from the same seed.
  o.surrogate = KahmcSurrogate::Lite;
  EXPECT_FALSE(run(t, o, 9, 1).samples == a.samples);
  o.surrogate = KahmcSurrogate::Nystrom;
  o.nystrom_points = 12;
  EXPECT_FALSE(run(t, o, 9, 1).samples == a.samples);
}

TEST(Kahmc, RandomWalkMetropolisTargetsTheGaussianAndTunesTowards0234) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.method = KahmcMethod::RandomWalk;
  o.samples = 4000;
  const KahmcResult r = run(t, o);
  expect_moments(r, t);
  EXPECT_NEAR(r.mean_acceptance(), 0.234, 0.06) << r.summary();
  EXPECT_EQ(r.total_refits(), 0);
  EXPECT_TRUE(std::isnan(r.step_size[0]));
}

// The acceptance step uses the true density, so a surrogate whose score is wrong only costs
// efficiency: the chain still has the target's moments. Here the ridge is so heavy (λ 10 times the
// mean diagonal of G) and the length scale so long that the surrogate's score is nearly zero: the
// trajectories ignore the target's curvature and correlation. (A length scale far below the spacing
// of the history is worse still: its spiky score drives the adapted step size to ~1e-7 and the chain
// freezes, which is valid but leaves nothing to check moments with.)
TEST(Kahmc, PoorSurrogateStillTargetsTheRightDistribution) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions poor = small_options();
  poor.bandwidth = 20.0;
  poor.lambda_ratio = 10.0;
  poor.samples = 4000;
  const KahmcResult rp = run(t, poor);
  for (double s : rp.bandwidth) EXPECT_EQ(s, 20.0);
  for (double q : rp.lambda_ratio) EXPECT_EQ(q, 10.0);
  expect_moments(rp, t);
}

// A length scale far below the history's spacing and almost no ridge: some refits cannot be solved
// (G is numerically singular). The run goes on with the previous surrogate and says so; it used to
// end with "matrix is not positive definite" (and earlier still, before the basis was the distinct
// history rows, already at the first fit).
TEST(Kahmc, ARefitThatCannotBeSolvedKeepsThePreviousSurrogate) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.bandwidth = 0.02;
  o.lambda_ratio = 1e-8;
  o.samples = 300;
  const KahmcResult r = run(t, o);
  Index failed = 0;
  for (Index f : r.failed_refits) failed += f;
  EXPECT_GT(failed, 0) << r.summary();
  EXPECT_TRUE(test::contains(r.summary(), "failed refits (the previous surrogate was kept)")) << r.summary();
  EXPECT_TRUE(r.samples.allFinite());
  for (const auto& refits : r.refits) EXPECT_EQ(refits.front(), 1);  // the first fit succeeded
}

TEST(Kahmc, AdaptationScheduleEveryIterationUntilStop) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.samples = 200;
  o.adaptation_decay = 0;  // refit at every HMC iteration ...
  o.adaptation_stop = 40;  // ... up to the 40th, never after
  const KahmcResult r = run(t, o);
  std::vector<Index> expected(40);
  std::iota(expected.begin(), expected.end(), Index{1});
  for (const auto& refits : r.refits) EXPECT_EQ(refits, expected);
}

TEST(Kahmc, AdaptationScheduleDecaysLikeKToTheMinusDelta) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.chains = 8;
  o.warmup = 100;
  o.samples = 900;  // K = 1000 HMC iterations per chain
  o.adaptation_decay = 0.5;
  const KahmcResult r = run(t, o);
  const Index K = o.warmup + o.samples;
  double mean = 0, var = 0;
  for (Index k = 1; k <= K; ++k) {
    const double a = std::pow(double(k), -0.5);
    mean += a;
    var += a * (1 - a);
  }
  // Over 8 chains: the count of refits is a sum of independent Bernoulli(a_k).
  EXPECT_NEAR(double(r.total_refits()), 8 * mean, 5 * std::sqrt(8 * var)) << r.summary();
  Index late = 0;
  for (const auto& refits : r.refits) {
    EXPECT_TRUE(std::is_sorted(refits.begin(), refits.end()));
    for (Index k : refits) {
      EXPECT_GE(k, 1);
      EXPECT_LE(k, K);
      late += k > K / 2;
    }
  }
  // Vanishing: the second half of the iterations has fewer refits than the first.
  EXPECT_LT(late, r.total_refits() - late);

  o.adaptation_stop = 100;  // the same schedule, cut off
  const KahmcResult cut = run(t, o);
  for (const auto& refits : cut.refits)
    for (Index k : refits) EXPECT_LE(k, 100);
  EXPECT_GT(cut.total_refits(), 8);
}

TEST(Kahmc, SeededAndIndependentOfTheThreadCount) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.chains = 3;
  o.samples = 200;
  const KahmcResult a = run(t, o, 5, 1);
  const KahmcResult b = run(t, o, 5, 2);
  const KahmcResult c = run(t, o, 5, 3);
  const KahmcResult again = run(t, o, 5, 1);
  const KahmcResult other = run(t, o, 6, 1);
  EXPECT_TRUE(a.samples == b.samples);
  EXPECT_TRUE(a.samples == c.samples);
  EXPECT_TRUE(a.samples == again.samples);
  EXPECT_FALSE(a.samples == other.samples);
  EXPECT_EQ(a.refits, c.refits);
  EXPECT_EQ(a.bandwidth, c.bandwidth);
  EXPECT_EQ(a.target_evaluations, c.target_evaluations);
  // One chain alone: its surrogate fits run the lite system's parallel blocks; still bitwise.
  o.chains = 1;
  EXPECT_TRUE(run(t, o, 5, 1).samples == run(t, o, 5, 3).samples);
  o.method = KahmcMethod::RandomWalk;
  o.chains = 3;
  EXPECT_TRUE(run(t, o, 5, 1).samples == run(t, o, 5, 2).samples);
}

// --- the leapfrog shared with run_hmc ---------------------------------------------------------

TEST(Leapfrog, MatchesAHandWrittenIntegratorOnAGaussian) {
  // Score of N(0, diag(1, 4)): −x ⊘ (1, 4). Two rows with their own step sizes and masses.
  auto score = [](const Matrix& X) {
    Matrix S = X;
    S.col(0) *= -1.0;
    S.col(1) *= -0.25;
    return S;
  };
  Matrix X0(2, 2), P0(2, 2), M(2, 2);
  X0 << 0.3, -1.2, 2.0, 0.5;
  P0 << 1.0, 0.2, -0.4, 0.9;
  M << 1.0, 2.0, 0.5, 1.5;
  Vector eps(2);
  eps << 0.1, 0.25;
  Matrix X1 = X0, P1 = P0, S1 = score(X0);
  std::vector<char> alive{1, 1};
  leapfrog(score, X0, eps, M, 7, X1, P1, S1, alive);
  for (Index r = 0; r < 2; ++r) {
    Vector x = X0.row(r).transpose(), p = P0.row(r).transpose();
    for (int l = 0; l < 7; ++l) {
      for (Index d = 0; d < 2; ++d) p[d] += 0.5 * eps[r] * (d == 0 ? -x[d] : -0.25 * x[d]);
      for (Index d = 0; d < 2; ++d) x[d] += eps[r] * M(r, d) * p[d];
      for (Index d = 0; d < 2; ++d) p[d] += 0.5 * eps[r] * (d == 0 ? -x[d] : -0.25 * x[d]);
    }
    for (Index d = 0; d < 2; ++d) {
      EXPECT_NEAR(X1(r, d), x[d], 1e-14);
      EXPECT_NEAR(P1(r, d), p[d], 1e-14);
    }
    EXPECT_TRUE(alive[static_cast<std::size_t>(r)]);
  }
}

TEST(Leapfrog, ADivergentRowIsParkedAtItsStartAndReported) {
  // The score is infinite beyond x = 1: row 0 crosses it, row 1 does not move far.
  auto score = [](const Matrix& X) {
    Matrix S = Matrix::Zero(X.rows(), X.cols());
    for (Index r = 0; r < X.rows(); ++r)
      if (X(r, 0) > 1.0) S(r, 0) = std::numeric_limits<double>::infinity();
    return S;
  };
  Matrix X0(2, 1), P(2, 1), M = Matrix::Ones(2, 1);
  X0 << 0.0, -5.0;
  P << 1.0, 0.1;
  Vector eps = Vector::Constant(2, 0.5);
  Matrix X1 = X0, S1 = score(X0);
  std::vector<char> alive{1, 1};
  std::vector<Index> reported;
  leapfrog(score, X0, eps, M, 5, X1, P, S1, alive, [&](Index r) { reported.push_back(r); });
  EXPECT_EQ(alive, (std::vector<char>{0, 1}));
  EXPECT_EQ(reported, std::vector<Index>{0});
  EXPECT_EQ(X1(0, 0), 0.0);
  EXPECT_NEAR(X1(1, 0), -5.0 + 5 * 0.5 * 0.1, 1e-15);
}

// --- targets: registration and wrappers --------------------------------------------------------

TEST(TargetKind, SyntheticPluginRegistersItsTruthsAsTargets) {
  Registry& reg = test::plugin_registry();
  const auto interfaces = reg.interfaces();
  EXPECT_NE(std::find(interfaces.begin(), interfaces.end(), "target"), interfaces.end());
  for (const char* type : {"synthetic/banana", "synthetic/funnel", "synthetic/gaussian", "synthetic/ring"}) {
    const ComponentInfo* info = reg.find(Target::kInterface, type);
    ASSERT_NE(info, nullptr) << type;
    EXPECT_TRUE(
        std::none_of(info->keys.begin(), info->keys.end(), [](const KeySpec& k) { return k.name == "n"; }));
  }
  // A banana target is the banana source's truth, through its log density only.
  RandomStream rng(3, "target");
  BuildContext ctx{-1, &reg, &rng};
  TargetPtr banana = reg.make<Target>(test::config_from("type = \"synthetic/banana\"\ndim = 3\n"), ctx);
  ASSERT_EQ(banana->dim(), 3);
  EXPECT_EQ(banana->type_name(), "synthetic/banana");
  BuildContext sctx;
  sctx.registry = &reg;
  DataSourcePtr source = reg.make_data_source(
      test::config_from("type = \"synthetic/banana\"\ndim = 3\nn = 10\nrotate = false\n"), sctx);
  RandomStream data_rng(3, "data");
  const SourceData data = source->load(data_rng);
  const Matrix X = RandomStream(4, "points").normal_matrix(20, 3);
  const Vector expected = data.truth->log_unnormalized(X);
  const Vector got = banana->log_density(X);
  for (Index i = 0; i < X.rows(); ++i) EXPECT_EQ(got[i], expected[i]);
  // The target's keys are validated like any component's.
  const std::string m = test::message_of<ConfigError>(
      [&] { reg.make<Target>(test::config_from("type = \"synthetic/banana\"\nn = 10\n"), ctx); });
  EXPECT_TRUE(test::contains(m, "unknown key `n`")) << m;
}

TEST(TargetKind, AProgramRegistersItsOwnTargetWithTheOpenRegistry) {
  Registry reg;
  reg.register_builtin("kahmc test targets", [](PluginRegistrar& r) {
    ComponentInfo info;
    info.type = "correlated_gaussian";
    info.summary = "N((1, -2), [[1, 0.6], [0.6, 2]])";
    r.add<Target>(info, [](const Config&, const BuildContext&) {
      return std::make_unique<GaussianTarget>(correlated_gaussian());
    });
  });
  RandomStream rng(1, "t");
  TargetPtr t =
      reg.make<Target>(test::config_from("type = \"correlated_gaussian\"\n"), BuildContext{-1, &reg, &rng});
  EXPECT_EQ(t->type_name(), "correlated_gaussian");
  KahmcOptions o = small_options();
  o.samples = 100;
  const KahmcResult r = run(*t, o);
  EXPECT_EQ(r.samples.rows(), 400);
  std::unique_ptr<Target> copy = t->clone();
  const Matrix X = RandomStream(2, "x").normal_matrix(5, 2);
  EXPECT_TRUE(copy->log_density(X) == t->log_density(X));
}

TEST(TargetKind, ModelTargetUsesTheModelsLogDensityOnly) {
  Registry& reg = test::plugin_registry();
  BuildContext sctx;
  sctx.registry = &reg;
  DataSourcePtr source =
      reg.make_data_source(test::config_from("type = \"synthetic/funnel\"\ndim = 2\nn = 10\n"), sctx);
  RandomStream data_rng(3, "data");
  const SourceData data = source->load(data_rng);
  ModelTarget t(data.truth, "funnel truth");
  const Matrix X = RandomStream(4, "points").normal_matrix(7, 2);
  EXPECT_TRUE(t.log_density(X) == data.truth->log_unnormalized(X));
  EXPECT_TRUE(test::contains(t.describe(), "log p~ only"));
}

// --- errors -----------------------------------------------------------------------------------

// Uniform on [1, 2]^D: log density −∞ at the origin, where chains start by default.
class BoxTarget final : public Clonable<BoxTarget, Target> {
 public:
  Index dim() const override { return 2; }
  Vector log_density(const Matrix& X) const override {
    Vector out(X.rows());
    for (Index r = 0; r < X.rows(); ++r)
      out[r] = (X.row(r).array() >= 1.0).all() && (X.row(r).array() <= 2.0).all()
                   ? 0.0
                   : -std::numeric_limits<double>::infinity();
    return out;
  }
};

// A target that answers one value too few: a broken plugin.
class ShortTarget final : public Clonable<ShortTarget, Target> {
 public:
  Index dim() const override { return 2; }
  Vector log_density(const Matrix& X) const override { return Vector::Zero(X.rows() - 1); }
};

TEST(KahmcErrors, NonFiniteLogDensityAtTheStartNamesTheChainAndPoint) {
  BoxTarget box;
  KahmcOptions o = small_options();
  const std::string m = test::message_of<DataError>([&] { run(box, o); });
  EXPECT_TRUE(test::contains(m, "starting point")) << m;
  EXPECT_TRUE(test::contains(m, "chain 0")) << m;
  EXPECT_TRUE(test::contains(m, "-inf")) << m;
  // From inside the support it runs, and never leaves it (every draw in [1, 2]²).
  o.init_points = Matrix::Constant(1, 2, 1.5);
  o.samples = 200;
  const KahmcResult r = run(box, o);
  EXPECT_TRUE((r.samples.array() >= 1.0).all() && (r.samples.array() <= 2.0).all());
}

TEST(KahmcErrors, DimensionMismatchesAreNamed) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.init_points = Matrix::Zero(1, 3);
  std::string m = test::message_of<ConfigError>([&] { run(t, o); });
  EXPECT_TRUE(test::contains(m, "init_points")) << m;
  EXPECT_TRUE(test::contains(m, "2 columns")) << m;
  ShortTarget bad;
  m = test::message_of<Error>([&] { run(bad, small_options()); });
  EXPECT_TRUE(test::contains(m, "values for 4 rows")) << m;
}

TEST(KahmcErrors, InvalidOptionsAreConfigErrors) {
  const GaussianTarget t = correlated_gaussian();
  KahmcOptions o = small_options();
  o.adaptation_decay = 0;  // never vanishing without a stop
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { run(t, o); }), "adaptation_decay"));
  o = small_options();
  o.burn_in = 5;
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { run(t, o); }), "burn_in"));
  o = small_options();
  o.nystrom_points = 20;  // only with the Nyström surrogate
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { run(t, o); }), "nystrom_points"));
  o.surrogate = KahmcSurrogate::Nystrom;
  o.nystrom_points = -1;
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { run(t, o); }), "nystrom_points"));
  o = small_options();
  Context ctx(1, 1);
  EXPECT_TRUE(
      test::contains(test::message_of<ConfigError>([&] { run_kahmc(t, KernelFamily(), ctx.rng(), o, ctx); }),
                     "kernel family"));
}

// --- the command line ----------------------------------------------------------------------------

TEST(KahmcCli, SamplesASyntheticTargetIndependentlyOfThreads) {
  const auto dir = test::temp_dir("kahmc_cli");
  const std::string common =
      "sample --sampler kahmc --target synthetic/gaussian --target-set dim=2 "
      "--target-set std=2 -n 800 --burn-in 300 --warmup 200 --seed 4 --quiet ";
  const auto a = test::kef_cmd(common + "--threads 1 --out " + (dir / "a.npy").string());
  ASSERT_EQ(a.status, 0) << a.output;
  const auto b = test::kef_cmd(common + "--threads 2 --out " + (dir / "b.npy").string());
  ASSERT_EQ(b.status, 0) << b.output;
  const Matrix A = read_npy(dir / "a.npy"), B = read_npy(dir / "b.npy");
  ASSERT_EQ(A.rows(), 800);
  ASSERT_EQ(A.cols(), 2);
  EXPECT_TRUE(A == B);
  // N(0, 4 I): the sample variance is near 4 (loose: 800 correlated draws).
  const Vector var = (A.rowwise() - A.colwise().mean()).colwise().squaredNorm() / 799.0;
  EXPECT_NEAR(var[0], 4.0, 1.5);
  EXPECT_NEAR(var[1], 4.0, 1.5);
  const auto rwm = test::kef_cmd("sample --sampler rwm --target synthetic/banana -n 400 --seed 1 --out " +
                                 (dir / "r.npy").string() + " --allow-poor-mixing");
  EXPECT_EQ(rwm.status, 0) << rwm.output;
  EXPECT_TRUE(test::contains(rwm.output, "random-walk Metropolis")) << rwm.output;
}

TEST(KahmcCli, PluginsListsAndDescribesTargets) {
  const auto r = test::kef_cmd("plugins");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(test::contains(r.output, "target/synthetic/banana")) << r.output;
  const auto d = test::kef_cmd("plugins --describe target/synthetic/funnel");
  ASSERT_EQ(d.status, 0) << d.output;
  EXPECT_TRUE(test::contains(d.output, "max_variance")) << d.output;
  EXPECT_FALSE(test::contains(d.output, "  n (")) << d.output;  // a target draws no data set
}

// A saved model as a target: sampled through log p~ only, in the model's coordinates, written in
// data units; its draws agree with HMC's (which uses the model's score) on the same model.
TEST(KahmcCli, SamplesASavedModelThroughItsLogDensity) {
  const auto dir = test::temp_dir("kahmc_cli_model");
  const auto cfg = test::write_file(dir, "p.toml", R"(schema_version = 1
seed = 3
[data]
type = "synthetic/gaussian"
dim = 2
mean = [3.0, -1.0]
std = 2.0
n = 600
standardize = true
split = { test = 100, validation = 0 }
[[model]]
name = "lite"
[model.estimator]
type = "lite"
inducing_points = 50
[model.kernel]
type = "gaussian"
sigma = 1.5
[model.base_measure]
type = "gaussian"
std = 3.0
)");
  auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto model = dir / "out" / "models" / "lite";
  r = test::kef_cmd("sample --sampler kahmc --target " + model.string() +
                    " -n 2000 --seed 2 --allow-poor-mixing --out " + (dir / "k.npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(test::contains(r.output, "log p~ only")) << r.output;
  EXPECT_TRUE(test::contains(r.output, "(data units)")) << r.output;
  r = test::kef_cmd("sample " + model.string() + " -n 2000 --seed 2 --quiet --allow-poor-mixing --out " +
                    (dir / "h.npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Matrix K = read_npy(dir / "k.npy"), H = read_npy(dir / "h.npy");
  ASSERT_EQ(K.rows(), 2000);
  ASSERT_EQ(K.cols(), 2);
  // Data units: near the data's mean (3, -1) and scale 2, not the standardised coordinates.
  const Vector km = K.colwise().mean(), hm = H.colwise().mean();
  for (Index d = 0; d < 2; ++d) EXPECT_NEAR(km[d], hm[d], 0.5) << "coordinate " << d;
  EXPECT_NEAR(km[0], 3.0, 1.0);
  EXPECT_NEAR(km[1], -1.0, 1.0);
  r = test::kef_cmd("sample --sampler kahmc --target " + model.string() + " --target-set dim=2 -n 10 --out " +
                    (dir / "x.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--target-set")) << r.output;
}

TEST(KahmcCli, BadInputExitsTwoNamingTheFlag) {
  const auto dir = test::temp_dir("kahmc_cli_errors");
  const std::string out = " --out " + (dir / "x.npy").string();
  auto r = test::kef_cmd("sample --sampler kahmc --target synthetic/nope -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--target synthetic/nope")) << r.output;
  EXPECT_TRUE(test::contains(r.output, "synthetic/banana")) << r.output;  // the valid types are listed
  r = test::kef_cmd("sample --sampler kahmc --target synthetic/banana --target-set dim=0 -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "dim")) << r.output;
  r = test::kef_cmd("sample --sampler kahmc --target synthetic/banana --burn-in 5 -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--burn-in")) << r.output;
  r = test::kef_cmd("sample --sampler kahmc --target synthetic/banana --adaptation-decay 0 -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--adaptation-decay")) << r.output;
  r = test::kef_cmd("sample --sampler kahmc -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--target")) << r.output;
  r = test::kef_cmd("sample --target synthetic/banana -n 10" + out);  // hmc needs a score
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--sampler kahmc")) << r.output;
  r = test::kef_cmd("sample --sampler kahmc --target synthetic/banana --target-set dim -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "KEY=VALUE")) << r.output;
  r = test::kef_cmd("sample --sampler kahmc --target synthetic/banana --nystrom-points 30 -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;  // --nystrom-points without --surrogate nystrom
  EXPECT_TRUE(test::contains(r.output, "--nystrom-points")) << r.output;
  r = test::kef_cmd("sample --sampler kahmc --target synthetic/banana --surrogate random -n 10" + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--surrogate")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.npy"));
}

}  // namespace
}  // namespace kef
