// Annealed importance sampling: Gaussian to Gaussian against the closed form, the bidirectional
// bracket from exact samples, thread independence, and synthetic truths (exact log Z = 0).
#include "ais.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kef/data_source.hpp"
#include "kef/defensive_proposal.hpp"
#include "kef/importance_sampling.hpp"
#include "kef/student_t_proposal.hpp"
#include "likelihood_support.hpp"

namespace kef::likelihood_test {
namespace {

// p~ = exp(−‖x − μ‖²/(2s²)) in 3-D, no base measure: log Z = (3/2) log(2π s²).
struct GaussianTarget {
  Vector mu = (Vector(3) << 1.0, -1.0, 0.5).finished();
  double s = 0.7;
  double log_z() const { return 1.5 * std::log(2 * std::numbers::pi * s * s); }
  FunctionModel model() const {
    const Vector m = mu;
    const double s2 = s * s;
    FunctionModel f(nullptr, 3, [m, s2](const Matrix& X) -> Vector {
      return -0.5 * (X.rowwise() - m.transpose()).rowwise().squaredNorm() / s2;
    });
    f.hide_base_measure()
        .with_score([m, s2](const Matrix& X) -> Matrix { return -(X.rowwise() - m.transpose()) / s2; })
        .with_sampler([m, s = s](Index n, RandomStream& rng) -> Matrix {
          return (s * rng.normal_matrix(n, 3)).rowwise() + m.transpose();
        });
    return f;
  }
};

AisOptions small_options() {
  AisOptions o;
  o.particles = 128;
  o.temperatures = 100;
  o.leapfrog_steps = 5;
  o.pilot_particles = 16;
  return o;
}

TEST(Ais, SigmoidScheduleIsIncreasingFromZeroToOne) {
  const auto b = sigmoid_schedule(50);
  ASSERT_EQ(b.size(), 51u);
  EXPECT_EQ(b.front(), 0.0);
  EXPECT_EQ(b.back(), 1.0);
  for (std::size_t i = 1; i < b.size(); ++i) EXPECT_GT(b[i], b[i - 1]);
  EXPECT_THROW(sigmoid_schedule(0), ConfigError);
}

TEST(Ais, GaussianToGaussianMatchesTheClosedFormAndBracketsIt) {
  const GaussianTarget g;
  const FunctionModel m = g.model();
  const auto base = gaussian_base(2.0);
  const BaseMeasureProposal q(*base, 3);
  AisOptions o = small_options();
  o.temperatures = 400;
  const AisPilot pilot = ais_pilot(m, q, RandomStream(1, "pilot"), o, Context(1, 2));
  EXPECT_GT(pilot.mean_acceptance, 0.4);
  const AisResult fwd = ais_forward(m, q, pilot, RandomStream(1, "ais"), o, Context(1, 2));
  // Stated error: the delta-method standard error; 4 of them, and it must be small to mean anything.
  EXPECT_LT(fwd.log_z_stderr, 0.05);
  EXPECT_NEAR(fwd.log_z, g.log_z(), 4 * fwd.log_z_stderr);
  EXPECT_GT(fwd.effective_sample_size, 0.5 * o.particles);

  const FunctionModel& mm = m;
  RandomStream exact_rng(1, "exact");
  const Matrix exact = mm.sample(o.particles, exact_rng);
  const AisResult rev = ais_reverse(m, q, pilot, exact, RandomStream(1, "reverse"), o, Context(1, 2));
  EXPECT_LT(rev.log_z_stderr, 0.05);
  EXPECT_NEAR(rev.log_z, g.log_z(), 4 * rev.log_z_stderr);
  // BDMC: E log w <= log Z <= −E log w_rev (Jensen); the sample means, with 4 sd of slack.
  const auto mean_sd = [](const Vector& v) {
    const double mean = v.mean();
    return std::pair{mean, std::sqrt((v.array() - mean).square().sum() / (v.size() - 1.0) / v.size())};
  };
  const auto [lw, lw_sd] = mean_sd(fwd.log_weights);
  const auto [rw, rw_sd] = mean_sd(rev.log_weights);
  EXPECT_LE(lw, g.log_z() + 4 * lw_sd);
  EXPECT_GE(-rw, g.log_z() - 4 * rw_sd);
}

TEST(Ais, ResultsDoNotDependOnTheThreadCount) {
  const GaussianTarget g;
  const FunctionModel m = g.model();
  const auto base = gaussian_base(2.0);
  const BaseMeasureProposal q(*base, 3);
  AisOptions o1 = small_options(), o3 = small_options();  // run with 1 and 3 threads
  o1.temperatures = o3.temperatures = 20;
  const AisPilot p1 = ais_pilot(m, q, RandomStream(2, "pilot"), o1, Context(1, 1));
  const AisPilot p3 = ais_pilot(m, q, RandomStream(2, "pilot"), o3, Context(1, 3));
  EXPECT_EQ(p1.step_sizes, p3.step_sizes);
  const AisResult a = ais_forward(m, q, p1, RandomStream(2, "ais"), o1, Context(1, 1));
  const AisResult b = ais_forward(m, q, p3, RandomStream(2, "ais"), o3, Context(1, 3));
  EXPECT_TRUE(a.log_weights == b.log_weights);
}

TEST(Ais, ABadOptionIsAConfigErrorNamingIt) {
  AisOptions o = small_options();
  o.particles = 1;
  try {
    validate(o);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("particles"), std::string::npos);
  }
}

SourceData synthetic(const std::string& type, std::uint64_t seed) {
  BuildContext ctx;
  ctx.registry = &test::plugin_registry();
  DataSourcePtr source = test::plugin_registry().make_data_source(
      test::config_from("type = \"synthetic/" + type + "\"\nn = 2000"), ctx);
  RandomStream rng(seed, "data");
  return source->load(rng);
}

// Synthetic truths know log Z = 0 exactly and sample exactly: the defensive mixture and AIS (both
// directions) must find 0 within their stated errors.
TEST(Ais, SyntheticTruthsAgainstTheirExactNormaliser) {
  for (const std::string type : {"banana", "mog"}) {
    SCOPED_TRACE(type);
    const SourceData data = synthetic(type, 3);
    const Model& truth = *data.truth;
    ASSERT_EQ(truth.log_normalizer(), std::optional<double>(0.0));
    const Matrix& X = data.samples;

    RandomStream crng(3, "centres");
    const MixtureProposal mix =
        make_defensive_proposal(truth.base_measure(), X, Matrix(0, 2), DefensiveOptions{}, crng);
    const ProposalSource source(truth, mix, "truth");
    const MomentsRun is = sample_moments(source, RandomStream(3, "is"),
                                         ChunkPlan{100000, 4096, 0.0, nullptr, "t"}, Context(1, 2));
    EXPECT_LT(is.moments.log_mean_stderr(), 0.02);
    EXPECT_NEAR(is.moments.log_mean(), 0.0, 4 * is.moments.log_mean_stderr());

    const StudentTProposal t = StudentTProposal::fit(X, 3.0);
    AisOptions o = small_options();
    o.temperatures = 200;
    o.leapfrog_steps = 10;
    const AisPilot pilot = ais_pilot(truth, t, RandomStream(3, "pilot"), o, Context(1, 2));
    const AisResult fwd = ais_forward(truth, t, pilot, RandomStream(3, "ais"), o, Context(1, 2));
    EXPECT_LT(fwd.log_z_stderr, 0.1);
    EXPECT_NEAR(fwd.log_z, 0.0, 4 * fwd.log_z_stderr);
    RandomStream erng(3, "exact");
    const AisResult rev = ais_reverse(truth, t, pilot, truth.sample(o.particles, erng),
                                      RandomStream(3, "rev"), o, Context(1, 2));
    EXPECT_NEAR(rev.log_z, 0.0, 4 * rev.log_z_stderr);
  }
}

}  // namespace
}  // namespace kef::likelihood_test
