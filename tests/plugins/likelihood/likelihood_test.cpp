// log_likelihood: log Ẑ against closed-form and quadrature normalisers, exact normalisers, thread
// independence, the time budget's prefix property, and the error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kef/estimator.hpp"
#include "kef/linalg.hpp"
#include "likelihood_support.hpp"

namespace kef::likelihood_test {
namespace {

// q0 = N(0, σ0² I) in D dims and f(x) = −‖x‖²/(2 s²): r = exp f has E r^k = (s²/(s² + k σ0²))^{D/2}.
struct GaussianRatio {
  double sigma0 = 2.0, s = 1.5;
  Index D = 3;
  double moment(int k) const { return std::pow(s * s / (s * s + k * sigma0 * sigma0), 0.5 * static_cast<double>(D)); }
  FunctionModel model() const {
    const double s2 = s * s;
    return FunctionModel(gaussian_base(sigma0), D, [s2](const Matrix& X) -> Vector {
      return -0.5 * X.rowwise().squaredNorm() / s2;
    });
  }
};

TEST(LogLikelihood, MatchesAClosedFormNormaliserWithinItsStandardError) {
  GaussianRatio g;
  FunctionModel m = g.model();
  RandomStream rng(3, "rows");
  const Matrix rows = rng.normal_matrix(200, g.D);
  const Index U = 131072;
  EvaluationResult r = run_q0_log_likelihood(m, rows, "samples = " + std::to_string(U));

  const double Z = g.moment(1), m2 = g.moment(2), m3 = g.moment(3), m4 = g.moment(4);
  const double var = m2 - Z * Z;
  // CLT + delta method: log Ẑ − log Z ≈ N(0, Var[r]/(U Z²)); 4 sd is exceeded with probability 6e-5.
  const double sd_log_z = std::sqrt(var / static_cast<double>(U)) / Z;
  EXPECT_NEAR(metric(r, "log_normalizer"), std::log(Z), 4 * sd_log_z);
  // The reported stderr estimates sd_log_z: its relative error is half that of the sample variance,
  // whose sd is sqrt((μ4 − Var²)/U), plus that of Ẑ in the denominator (sd_log_z); 4 sd of the sum.
  const double mu4 = m4 - 4 * Z * m3 + 6 * Z * Z * m2 - 3 * Z * Z * Z * Z;
  const double rel = 0.5 * std::sqrt((mu4 - var * var) / static_cast<double>(U)) / var + sd_log_z;
  EXPECT_NEAR(metric(r, "log_normalizer_stderr") / sd_log_z, 1.0, 4 * rel);
  // The likelihood is the plain mean of log p~ minus log Ẑ (only rounding differs).
  EXPECT_NEAR(metric(r, "log_likelihood"), m.log_unnormalized(rows).mean() - metric(r, "log_normalizer"), 1e-12);
  EXPECT_EQ(metric(r, "proposals"), static_cast<double>(U));
  EXPECT_GT(metric(r, "proposals_per_second"), 0.0);
  // f has no lower bound, so neither has r: no bias bound, and a note says why.
  EXPECT_FALSE(find_metric(r, "bias_bound"));
  EXPECT_TRUE(has_note(r, "bias_bound not available"));
}

// A lite model's log ratio to its q0 is f = K(x, Z)·α itself (importance sampling's fast path); its
// brute-force twin is log p~ − log q0, which carries the rounding of |log q0| ≲ 60 here: 1e-12.
TEST(LogLikelihood, LiteLogRatioToBaseIsTheDifferenceWithoutCancellation) {
  RandomStream rng(61, "rows");
  const ModelPtr m = fit_lite_to(rng.normal_matrix(400, 2), 40, 62);
  const Matrix Y = 6.0 * rng.normal_matrix(300, 2);
  const Vector direct = m->log_ratio_to_base(Y);
  const Vector difference = m->log_unnormalized(Y) - m->base_measure()->log_density(Y);
  EXPECT_LT((direct - difference).cwiseAbs().maxCoeff(), 1e-12);
  // Far from the data f vanishes (the Gaussian kernel underflows), whatever log q0 is there.
  const Matrix far = Matrix::Constant(1, 2, 1e4);
  EXPECT_EQ(m->log_ratio_to_base(far)[0], 0.0);
  // A model without a base measure has no log ratio to it.
  FunctionModel plain_model(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector { return -X.rowwise().squaredNorm(); });
  plain_model.hide_base_measure();
  EXPECT_THROW(plain_model.log_ratio_to_base(Y), Error);
}

TEST(LogLikelihood, HugeConstantRatiosStayInLogSpace) {
  // f = 800: r = e^800 overflows a double, yet Ẑ = e^800 exactly, with zero variance.
  FunctionModel m(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector { return Vector::Constant(X.rows(), 800.0); });
  m.with_lower_bound(800.0);
  RandomStream rng(4, "rows");
  EvaluationResult r = run_q0_log_likelihood(m, rng.normal_matrix(10, 2), "samples = 10000\nchunk_size = 777");
  // f = (800 + log q0) − log q0 carries rounding of 800·2^-52 ≈ 2e-13, the only deviation allowed.
  EXPECT_NEAR(metric(r, "log_normalizer"), 800.0, 1e-12);
  EXPECT_LT(metric(r, "log_normalizer_stderr"), 1e-12);
  // The ratios are constant up to that rounding, so whatever the bound reports must be ~0 as well.
  if (auto b = find_metric(r, "bias_bound")) {
    EXPECT_LT(*b, 1e-20);
  }
}

TEST(LogLikelihood, AnExactNormaliserIsReportedWithoutSampling) {
  // No base measure at all: sampling would be impossible, so this also shows that none happens.
  FunctionModel m(nullptr, 2, [](const Matrix& X) -> Vector { return -0.5 * X.rowwise().squaredNorm(); });
  m.with_exact_log_normalizer(std::log(2 * std::numbers::pi)).hide_base_measure();
  RandomStream rng(5, "rows");
  const Matrix rows = rng.normal_matrix(50, 2);
  EvaluationResult r = run_q0_log_likelihood(m, rows, "");
  EXPECT_EQ(metric(r, "log_normalizer"), std::log(2 * std::numbers::pi));
  EXPECT_EQ(metric(r, "log_normalizer_stderr"), 0.0);
  EXPECT_EQ(metric(r, "bias_bound"), 0.0);
  EXPECT_EQ(metric(r, "proposals"), 0.0);
  EXPECT_NEAR(metric(r, "log_likelihood"), m.log_unnormalized(rows).mean() - std::log(2 * std::numbers::pi), 1e-12);
}

ModelPtr fit_lite(Index n, Index D, Index M, std::uint64_t seed) {
  RandomStream data_rng(seed, "train");
  return fit_lite_to(data_rng.normal_matrix(n, D), M, seed);
}

TEST(LogLikelihood, FittedLiteModelMatchesQuadrature) {
  ModelPtr model = fit_lite(2000, 2, 50, 11);
  // log Z by the rectangle rule on [−21, 21]² with h = 0.05. Far from the data f → 0, so the
  // integrand there is q0 = N(0, 9 I): the mass outside (7 std) is < 1e-11, and for a smooth,
  // rapidly decaying integrand the rule's error is far smaller still, so quadrature error < 1e-9.
  const double h = 0.05;
  const Index n = 841;
  Matrix grid(n * n, 2);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) grid.row(i * n + j) << -21.0 + h * i, -21.0 + h * j;
  const double log_z = logsumexp(model->log_unnormalized(grid)) + 2 * std::log(h);

  RandomStream rng(6, "rows");
  const Matrix rows = rng.normal_matrix(500, 2);
  EvaluationResult r = run_q0_log_likelihood(*model, rows, "samples = 262144\nbound_variance_samples = 50000");
  const double se = metric(r, "log_normalizer_stderr");
  EXPECT_GT(se, 0.0);
  // 4 estimated standard errors; with U = 2^18 the estimate of the sd is within a few percent.
  EXPECT_NEAR(metric(r, "log_normalizer"), log_z, 4 * se + 1e-9);
  EXPECT_TRUE(std::isfinite(metric(r, "log_likelihood")));
  // A lite model with a Gaussian kernel has a lower bound of r, so the bias bound exists.
  EXPECT_GT(metric(r, "bias_bound"), 0.0);
}

TEST(LogLikelihood, ResultsDoNotDependOnTheThreadCount) {
  ModelPtr model = fit_lite(500, 3, 40, 12);
  RandomStream rng(7, "rows");
  const Matrix rows = rng.normal_matrix(100, 3);
  // 50000 is not a multiple of the chunk size, so the last chunk is partial.
  const std::string keys = "samples = 50000\nchunk_size = 1000\nbound_percentile_samples = 5000\n"
                           "bound_rho_samples = 5000\nbound_variance_samples = 5000";
  EvaluationResult a = run_q0_log_likelihood(*model, rows, keys, 1);
  EvaluationResult b = run_q0_log_likelihood(*model, rows, keys, 2);
  EvaluationResult c = run_q0_log_likelihood(*model, rows, keys, 3, 2);
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (std::size_t i = 0; i < a.metrics.size(); ++i) {
    if (a.metrics[i].first == "proposals_per_second") continue;
    EXPECT_EQ(a.metrics[i].first, b.metrics[i].first);
    EXPECT_EQ(a.metrics[i].second, b.metrics[i].second) << a.metrics[i].first;
  }
  EXPECT_NE(metric(a, "log_normalizer"), metric(c, "log_normalizer"));  // another seed, other draws
}

TEST(LogLikelihood, ATimeLimitedResultIsAPrefixOfWholeChunks) {
  GaussianRatio g;
  FunctionModel m = g.model();
  RandomStream rng(8, "rows");
  const Matrix rows = rng.normal_matrix(20, g.D);
  EvaluationResult timed =
      run_q0_log_likelihood(m, rows, "samples = 1000000000\nchunk_size = 1000\nmax_seconds = 0.05\nbias_bound = false");
  const double used = metric(timed, "proposals");
  EXPECT_LT(used, 1e9);
  EXPECT_GE(used, 1000.0);
  EXPECT_EQ(std::fmod(used, 1000.0), 0.0);
  EXPECT_TRUE(has_note(timed, "time budget"));
  // The same estimate as a run asking for exactly that many proposals, on another thread count.
  EvaluationResult full = run_q0_log_likelihood(
      m, rows, "samples = " + std::to_string(static_cast<long>(used)) + "\nchunk_size = 1000\nbias_bound = false", 1);
  EXPECT_EQ(metric(timed, "log_normalizer"), metric(full, "log_normalizer"));
  EXPECT_EQ(metric(timed, "log_normalizer_stderr"), metric(full, "log_normalizer_stderr"));
  EXPECT_EQ(metric(timed, "log_likelihood"), metric(full, "log_likelihood"));
}

// --- errors ---------------------------------------------------------------------------------

class UnsampleableBase final : public Clonable<UnsampleableBase, BaseMeasure> {
 public:
  void check_dimension(Index) const override {}
  Vector log_density(const Matrix& X) const override { return Vector::Zero(X.rows()); }
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override {
    d1 = Matrix::Zero(X.rows(), X.cols());
    d2 = d1;
  }
};

void expect_unsampleable_error(const Model& m) {
  try {
    run_q0_log_likelihood(m, Matrix::Zero(5, 2), "");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("type"), std::string::npos) << msg;
    EXPECT_NE(msg.find("base measure"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot be sampled"), std::string::npos) << msg;
  }
}

TEST(LogLikelihoodErrors, NoBaseMeasureIsAConfigErrorAtType) {
  FunctionModel m(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector { return Vector::Zero(X.rows()); });
  m.hide_base_measure();
  expect_unsampleable_error(m);
}

TEST(LogLikelihoodErrors, ABaseMeasureThatCannotSampleIsAConfigError) {
  FunctionModel m(std::make_shared<UnsampleableBase>(), 2,
                  [](const Matrix& X) -> Vector { return Vector::Zero(X.rows()); });
  expect_unsampleable_error(m);
}

TEST(LogLikelihoodErrors, DimensionMismatchIsADataError) {
  FunctionModel m(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector { return Vector::Zero(X.rows()); });
  EXPECT_THROW(run_q0_log_likelihood(m, Matrix::Zero(5, 3), ""), DataError);
}

TEST(LogLikelihoodErrors, ANonFiniteRowIsANumericalErrorNamingIt) {
  // log p~ is NaN where x_0 > 100; row 3 is there.
  FunctionModel m(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector {
    return X.col(0).unaryExpr([](double v) { return v > 100 ? std::nan("") : 0.0; });
  });
  Matrix rows = Matrix::Zero(6, 2);
  rows(3, 0) = 1000.0;
  try {
    run_q0_log_likelihood(m, rows, "samples = 1000");
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("test row 3"), std::string::npos) << e.what();
  }
}

TEST(LogLikelihoodErrors, ANonFiniteProposalIsANumericalError) {
  // Finite on the test rows (x_0 = 5) but NaN on the many proposals with |x_0| < 0.1.
  FunctionModel m(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector {
    return X.col(0).unaryExpr([](double v) { return std::abs(v) < 0.1 ? std::nan("") : 0.0; });
  });
  try {
    run_q0_log_likelihood(m, Matrix::Constant(4, 2, 5.0), "samples = 1000");
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("proposal"), std::string::npos) << e.what();
  }
}

TEST(LogLikelihoodErrors, APercentileOfAtLeastOneHalfIsAConfigError) {
  FunctionModel m(gaussian_base(1.0), 2, [](const Matrix& X) -> Vector { return Vector::Zero(X.rows()); });
  try {
    run_q0_log_likelihood(m, Matrix::Zero(3, 2), "bound_percentile = 0.5");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bound_percentile"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kef::likelihood_test


namespace kef::likelihood_test {
namespace {

// The effective sample size is Kish's (Σr)²/Σr². For f = c·x under q0 = N(0, 1) in 1-D, r = e^{cx} is
// log-normal with E r² / (E r)² = e^{c²}, so ESS/U → e^{−c²}. c = 0.5 (ESS ≈ 0.78 U) must not warn;
// c = 4 (ESS/U ≈ 1e-7, i.e. < 1 of 2·10⁵ proposals in expectation, a few at most from the heavy tail)
// must, and the reported ESS must match the moments formula (it is computed from them exactly).
TEST(LogLikelihood, ALowEffectiveSampleSizeIsReportedWithAWarning) {
  auto base = gaussian_base(1.0);
  Matrix rows = Matrix::Zero(5, 1);
  auto note_warns = [](const EvaluationResult& r) {
    for (const auto& n : r.notes)
      if (n.find("effective sample size") != std::string::npos && n.find("unreliable") != std::string::npos) return true;
    return false;
  };
  constexpr Index U = 200000;
  FunctionModel good(base, 1, [](const Matrix& X) -> Vector { return 0.5 * X.col(0); });
  const EvaluationResult rg = run_q0_log_likelihood(good, rows, "samples = 200000\nbias_bound = false");
  const double ess_good = metric(rg, "effective_sample_size");
  // Sampling error of ESS/U at this U is far below 0.02 (its delta-method sd is ~1e-3 here).
  EXPECT_NEAR(ess_good / U, std::exp(-0.25), 0.02);
  EXPECT_FALSE(note_warns(rg));

  FunctionModel bad(base, 1, [](const Matrix& X) -> Vector { return 4.0 * X.col(0); });
  const EvaluationResult rb = run_q0_log_likelihood(bad, rows, "samples = 200000\nbias_bound = false");
  EXPECT_LT(metric(rb, "effective_sample_size"), 100.0);
  EXPECT_TRUE(note_warns(rb));
  // The threshold is a key: 0 silences the warning.
  const EvaluationResult rq =
      run_q0_log_likelihood(bad, rows, "samples = 200000\nbias_bound = false\nmin_effective_samples = 0");
  EXPECT_FALSE(note_warns(rq));
}

}  // namespace
}  // namespace kef::likelihood_test
