// log_likelihood with method = "quadrature": the midpoint rule against closed-form normalisers and
// the Poisson summation formula, a bounded support against a brute-force cell count, a fitted lite
// model against importance sampling and against a brute-force grid, thread independence, the
// boundary warning and the configuration errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "kef/constants.hpp"
#include "kef/estimator.hpp"
#include "kef/linalg.hpp"
#include "likelihood_support.hpp"

namespace kef::likelihood_test {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

// Like run_log_likelihood, with separate training rows (the default box comes from them).
EvaluationResult run_quadrature(const Model& model, const Matrix& train, const Matrix& test,
                                const std::string& keys, int threads = 2) {
  Registry& reg = test::plugin_registry();
  auto ev =
      reg.make_evaluator(test::config_from("type = \"log_likelihood\"\nmethod = \"quadrature\"\n" + keys),
                         BuildContext{model.dim(), &reg});
  Dataset data;
  data.train = train;
  data.test = test;
  Context context = Context(1, threads).child("evaluate[0].m");
  const std::string name = "m";
  EvalInput in{model, name, data, context};
  return ev->evaluate(in);
}

// A model given by log p~ alone (no base measure, no known normaliser).
FunctionModel plain(Index D, LogRatio log_p) {
  FunctionModel m(nullptr, D, std::move(log_p));
  m.hide_base_measure();
  return m;
}

// Unnormalised N(μ, s²): log p~ = −(x − μ)²/(2s²), Z = sqrt(2π) s.
FunctionModel gaussian_1d(double mu, double s) {
  return plain(1, [mu, s](const Matrix& X) -> Vector {
    return -0.5 * ((X.col(0).array() - mu) / s).square().matrix();
  });
}

// Poisson summation for the midpoint rule on cells of width h with a centre at c: over the whole
// line, h Σ_i g(c + ih) = Z (1 + 2 Σ_k exp(−2π²s²k²/h²) cos(2πk(c − μ)/h)) for the Gaussian above.
double midpoint_ratio(double mu, double s, double h, double c) {
  double r = 1.0;
  for (int k = 1; k <= 50; ++k)
    r += 2.0 * std::exp(-2.0 * std::numbers::pi * std::numbers::pi * s * s * k * k / (h * h)) *
         std::cos(2.0 * std::numbers::pi * k * (c - mu) / h);
  return r;
}

double normal_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }  // P(N(0, 1) > z)

TEST(LogLikelihoodQuadrature, Gaussian1DMatchesTheClosedFormNormaliser) {
  const double mu = 0.3, s = 0.7, lo = -6.0, hi = 7.0;
  FunctionModel m = gaussian_1d(mu, s);
  const Matrix rows = Matrix::Constant(3, 1, 0.5);
  EvaluationResult r = run_quadrature(m, rows, rows, "extent = [-6.0, 7.0]");
  const double log_z = std::log(std::sqrt(2.0 * std::numbers::pi) * s);
  // The default 4096 cells: aliasing exp(−2π²s²/h²) underflows; the mass outside the box (9 s and
  // more from μ) is below 1e-18; what is left is rounding, at most about one eps per summed cell.
  const double tail = normal_tail((mu - lo) / s) + normal_tail((hi - mu) / s);
  EXPECT_NEAR(metric(r, "log_normalizer"), log_z, tail + 4096 * kEps);
  EXPECT_EQ(metric(r, "grid_points"), 4096.0);
  EXPECT_NEAR(metric(r, "log_likelihood"), m.log_unnormalized(rows).mean() - metric(r, "log_normalizer"),
              1e-14);
  // The grid/2 rule is as exact here, so the error estimate is at rounding level too.
  EXPECT_LT(metric(r, "log_normalizer_error"), 2 * 4096 * kEps);
  // The band (the outer 13/32 = 0.41 on each side) starts 8.4 s from μ, where p~ = e^{-35.5}.
  EXPECT_LT(metric(r, "boundary_log_mass"), -33.0);
  EXPECT_FALSE(has_note(r, "warning"));
}

TEST(LogLikelihoodQuadrature, ACoarseGridAndItsErrorEstimateMatchPoissonSummation) {
  // 16 cells of width h = 13/16 ≈ 1.16 s: the rule's aliasing error is ~4e-7, that of the grid/2 = 8
  // cells ~0.03; both follow exactly from the Poisson summation formula.
  const double mu = 0.3, s = 0.7, lo = -6.0, hi = 7.0;
  FunctionModel m = gaussian_1d(mu, s);
  const Matrix rows = Matrix::Constant(2, 1, 0.0);
  EvaluationResult r = run_quadrature(m, rows, rows, "extent = [-6.0, 7.0]\ngrid = 16");
  const double log_z = std::log(std::sqrt(2.0 * std::numbers::pi) * s);
  const double h = (hi - lo) / 16, H = (hi - lo) / 8;
  const double fine = std::log(midpoint_ratio(mu, s, h, lo + 0.5 * h));
  const double coarse = std::log(midpoint_ratio(mu, s, H, lo + 0.5 * H));
  // The formula sums over the whole line; the cells outside the box would add < 1e-18 (tail above).
  const double tol = 1e-15 + 64 * kEps;
  EXPECT_NEAR(metric(r, "log_normalizer"), log_z + fine, tol);
  EXPECT_NEAR(metric(r, "log_normalizer_error"), std::abs(fine - coarse), tol);
  EXPECT_GT(std::abs(fine), 1e-8);  // the fine rule is measurably off...
  EXPECT_GE(metric(r, "log_normalizer_error"),
            std::abs(metric(r, "log_normalizer") - log_z));  // ...and covered
}

// A correlated 2-D Gaussian and a two-component mixture with full covariances: log p~ is the
// mixture density times e^{c}, so log Z = c exactly.
struct Component {
  double w, m0, m1, s00, s01, s11;
};

FunctionModel mixture(std::vector<Component> comps, double c) {
  return plain(2, [comps, c](const Matrix& X) -> Vector {
    Vector out(X.rows());
    for (Index i = 0; i < X.rows(); ++i) {
      Vector terms(static_cast<Index>(comps.size()));
      for (std::size_t k = 0; k < comps.size(); ++k) {
        const Component& q = comps[k];
        const double det = q.s00 * q.s11 - q.s01 * q.s01;
        const double a = X(i, 0) - q.m0, b = X(i, 1) - q.m1;
        const double quad = (q.s11 * a * a - 2 * q.s01 * a * b + q.s00 * b * b) / det;
        terms[static_cast<Index>(k)] =
            std::log(q.w) - 0.5 * quad - std::log(2 * std::numbers::pi * std::sqrt(det));
      }
      out[i] = logsumexp(terms) + c;
    }
    return out;
  });
}

// Σ_k w_k Σ_d P(X_d outside [lo_d, hi_d]): a bound on the mass outside the box.
double mass_outside(const std::vector<Component>& comps, const std::vector<double>& lo,
                    const std::vector<double>& hi) {
  double out = 0.0;
  for (const auto& q : comps) {
    const double sd0 = std::sqrt(q.s00), sd1 = std::sqrt(q.s11);
    out += q.w * (normal_tail((q.m0 - lo[0]) / sd0) + normal_tail((hi[0] - q.m0) / sd0) +
                  normal_tail((q.m1 - lo[1]) / sd1) + normal_tail((hi[1] - q.m1) / sd1));
  }
  return out;
}

TEST(LogLikelihoodQuadrature, Correlated2DGaussianMatchesTheClosedFormNormaliser) {
  const std::vector<Component> comps = {{1.0, 0.5, -1.0, 1.0, 0.6, 0.5}};
  FunctionModel m = mixture(comps, 3.25);
  const Matrix rows = Matrix::Zero(4, 2);
  EvaluationResult r = run_quadrature(m, rows, rows, "extent = [-9.0, 10.0, -8.0, 6.0]");
  // Aliasing decays like exp(−2π² λ_min(Σ)/h²) with λ_min ≈ 0.1 and h < 0.04: nothing. The box is
  // ≥ 9.5 sd from the mean in each marginal; rounding is at most ~one eps per cell (512² cells).
  const double tol = mass_outside(comps, {-9.0, -8.0}, {10.0, 6.0}) + 512.0 * 512.0 * kEps;
  EXPECT_NEAR(metric(r, "log_normalizer"), 3.25, tol);
  EXPECT_EQ(metric(r, "grid_points"), 512.0 * 512.0);
  EXPECT_LT(metric(r, "log_normalizer_error"), 2 * tol);
}

TEST(LogLikelihoodQuadrature, A2DMixtureOnTheDefaultBoxMatchesItsNormaliser) {
  const std::vector<Component> comps = {{0.3, -2.0, 1.0, 0.2, -0.1, 0.3}, {0.7, 2.0, 0.0, 1.0, 0.5, 0.8}};
  FunctionModel m = mixture(comps, -1.5);
  // Training rows spread like the mixture (exact draws are not needed: only the box depends on them).
  RandomStream rng(21, "rows");
  Matrix train = rng.normal_matrix(2000, 2);
  train.col(0) = 2.0 * train.col(0).array() + 0.5;
  train.col(1) = train.col(1).array() + 0.5;
  EvaluationResult r = run_quadrature(m, train, train.topRows(100), "");
  // The documented default box: range padded by 0.25·range + 3·std (std with n − 1).
  std::vector<double> lo(2), hi(2);
  for (Index d = 0; d < 2; ++d) {
    const auto col = train.col(d);
    const double mean = col.mean();
    const double sd = std::sqrt((col.array() - mean).square().sum() / (train.rows() - 1.0));
    const double pad = 0.25 * (col.maxCoeff() - col.minCoeff()) + 3.0 * sd;
    lo[static_cast<std::size_t>(d)] = col.minCoeff() - pad;
    hi[static_cast<std::size_t>(d)] = col.maxCoeff() + pad;
  }
  const double outside = mass_outside(comps, lo, hi);
  ASSERT_LT(outside, 1e-12);  // the default box is generous for this data
  EXPECT_NEAR(metric(r, "log_normalizer"), -1.5, outside + 512.0 * 512.0 * kEps);
  EXPECT_TRUE(has_note(r, "[" + std::to_string(lo[0]).substr(0, 5)));  // the note states the box
  EXPECT_FALSE(has_note(r, "warning"));
}

TEST(LogLikelihoodQuadrature, AUniformSquareIntegratesToItsCellCount) {
  // p~ = 1 on [0, 1]², 0 (log p~ = −inf) elsewhere: the midpoint rule gives (cells with their centre
  // in the square)·h0·h1 exactly, whatever the grid; counted here directly.
  FunctionModel m = plain(2, [](const Matrix& X) -> Vector {
    Vector out(X.rows());
    for (Index i = 0; i < X.rows(); ++i) {
      const bool in = X(i, 0) >= 0 && X(i, 0) <= 1 && X(i, 1) >= 0 && X(i, 1) <= 1;
      out[i] = in ? 0.0 : kNegInf;
    }
    return out;
  });
  const Matrix rows = Matrix::Constant(3, 2, 0.5);
  const double lo0 = -0.3, hi0 = 1.45, lo1 = -0.2, hi1 = 1.3;
  for (const Index n : {64, 301}) {
    EvaluationResult r =
        run_quadrature(m, rows, rows, "extent = [-0.3, 1.45, -0.2, 1.3]\ngrid = " + std::to_string(n));
    const double h0 = (hi0 - lo0) / static_cast<double>(n), h1 = (hi1 - lo1) / static_cast<double>(n);
    double count0 = 0, count1 = 0;
    for (Index i = 0; i < n; ++i) {
      const double c0 = lo0 + (i + 0.5) * h0, c1 = lo1 + (i + 0.5) * h1;
      count0 += (c0 >= 0 && c0 <= 1);
      count1 += (c1 >= 0 && c1 <= 1);
    }
    EXPECT_NEAR(metric(r, "log_normalizer"), std::log(count0 * h0) + std::log(count1 * h1), 64 * kEps) << n;
    // And the O(h) bound of any midpoint count: n_d h_d lies in [1 − h_d, 1 + h_d].
    EXPECT_LE(std::abs(metric(r, "log_normalizer")), -std::log(1 - h0) - std::log(1 - h1)) << n;
    EXPECT_EQ(metric(r, "log_likelihood"), -metric(r, "log_normalizer"));
    // p~ = 0 on the whole outer band: no boundary metric, a note instead, no boundary warning.
    EXPECT_FALSE(find_metric(r, "boundary_log_mass"));
    EXPECT_TRUE(has_note(r, "boundary_log_mass omitted"));
    EXPECT_FALSE(has_note(r, "warning: the boundary band"));
    // The jump makes the rule O(h): reliable exactly when its error estimate is within tolerance/2.
    EXPECT_EQ(metric(r, "reliable"), metric(r, "log_normalizer_error") <= 0.025 ? 1.0 : 0.0) << n;
    EXPECT_EQ(has_note(r, "warning: reliable: false"), metric(r, "reliable") == 0.0) << n;
  }
}

TEST(LogLikelihoodQuadrature, ABoxTooSmallWarnsAndReportsTheBoundaryMass) {
  FunctionModel m = gaussian_1d(0.0, 1.0);
  const Matrix rows = Matrix::Zero(2, 1);
  EvaluationResult small = run_quadrature(m, rows, rows, "extent = [-2.5, 2.5]\ngrid = 1000");
  // The band is the outer 1000/32 → 32 cells of width 0.005 on each side, [2.34, 2.5] and its mirror:
  // its share of the mass in the box follows from the normal cdf (the midpoint rule's own relative
  // error, about h²/24 times a second log-derivative of order 1, is ~1e-6 at most).
  const double inside = 1 - 2 * normal_tail(2.5);
  const double expected = 2 * (normal_tail(2.34) - normal_tail(2.5)) / inside;
  EXPECT_NEAR(std::exp(metric(small, "boundary_log_mass")) / expected, 1.0, 1e-5);
  EXPECT_TRUE(has_note(small, "warning: the boundary band"));
  EXPECT_TRUE(has_note(small, "extent"));
  // The missing tails make log Ẑ too small by log(1 − 2·P(X > 2.5)); the rule's own error on the
  // truncated integrand, h²/24·|g'(b) − g'(a)| ≈ 1e-7 relative, is below the tolerance.
  EXPECT_NEAR(metric(small, "log_normalizer"),
              0.5 * std::log(2 * std::numbers::pi) + std::log(1 - 2 * normal_tail(2.5)), 1e-6);
  // The threshold is a key.
  EXPECT_FALSE(
      has_note(run_quadrature(m, rows, rows, "extent = [-2.5, 2.5]\ngrid = 1000\nboundary_tolerance = 0.01"),
               "warning"));
  EvaluationResult wide = run_quadrature(m, rows, rows, "extent = [-12.0, 12.0]\ngrid = 1000");
  EXPECT_LT(metric(wide, "boundary_log_mass"), std::log(1e-6));
  EXPECT_FALSE(has_note(wide, "warning"));
}

TEST(LogLikelihoodQuadrature, ANarrowBaseMeasureFoolsImportanceSamplingButNotQuadrature) {
  // p~ ∝ N(0, 3²) written as f + log q0 with q0 = N(0, 0.25²): r = p~/q0 grows like e^{7.9 x²}, has
  // infinite variance, and q0's proposals never reach the bulk of p~ (DKEF's learned-q0 failure).
  // Its effective sample size (~360 of 10⁵) does not even trigger the warning.
  auto base = gaussian_base(0.25);
  FunctionModel m(base, 1, [base](const Matrix& X) -> Vector {
    return (-X.col(0).array().square() / 18.0).matrix() - base->log_density(X);
  });
  RandomStream rng(22, "rows");
  const Matrix train = 3.0 * rng.normal_matrix(3000, 1);
  const double log_z = std::log(std::sqrt(2.0 * std::numbers::pi) * 3.0);
  EvaluationResult q = run_quadrature(m, train, train.topRows(200), "");
  // Default box ≥ 9 sd wide on each side for this data (range ≈ ±10, + 25% + 3 std ≈ ±24).
  EXPECT_NEAR(metric(q, "log_normalizer"), log_z, 1e-10);
  // Too small by more than a nat and by many of its own standard errors, in the median of five
  // independent runs. One run is not enough: r·q0 ∝ e^{−0.004 z²} in q0's standard units z, so a
  // single proposal beyond |z| ≈ 5.1 (probability ~3% among 10⁵, and about as likely for any sample
  // size) lifts the estimate within a nat. Three of five such runs: ~3e-4.
  std::vector<double> deficits, in_stderrs;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    EvaluationResult is = run_q0_log_likelihood(m, train.topRows(200), "samples = 100000\nbias_bound = false", 2, seed);
    deficits.push_back(log_z - metric(is, "log_normalizer"));
    in_stderrs.push_back(deficits.back() / metric(is, "log_normalizer_stderr"));
  }
  std::nth_element(deficits.begin(), deficits.begin() + 2, deficits.end());
  std::nth_element(in_stderrs.begin(), in_stderrs.begin() + 2, in_stderrs.end());
  EXPECT_GT(deficits[2], 1.0);
  EXPECT_GT(in_stderrs[2], 10.0);
}

TEST(LogLikelihoodQuadrature, AnExactNormaliserIsStillUsed) {
  FunctionModel m = plain(2, [](const Matrix& X) -> Vector { return -0.5 * X.rowwise().squaredNorm(); });
  m.with_exact_log_normalizer(std::log(2 * std::numbers::pi));
  const Matrix rows = Matrix::Zero(3, 2);
  EvaluationResult r = run_quadrature(m, rows, rows, "grid = 64");
  EXPECT_EQ(metric(r, "log_normalizer"), std::log(2 * std::numbers::pi));
  EXPECT_FALSE(find_metric(r, "grid_points"));
}

TEST(LogLikelihoodQuadrature, WithoutTrainingRowsTheBoxComesFromTheEvaluatedRows) {
  FunctionModel m = gaussian_1d(0.0, 1.0);
  RandomStream rng(23, "rows");
  const Matrix test_rows = rng.normal_matrix(500, 1);
  EvaluationResult r = run_quadrature(m, Matrix(0, 1), test_rows, "");
  EXPECT_TRUE(has_note(r, "quadrature box from the test rows"));
  EXPECT_NEAR(metric(r, "log_normalizer"), 0.5 * std::log(2 * std::numbers::pi), 1e-10);
}

// --- a fitted lite model ------------------------------------------------------------------------

ModelPtr fit_lite_2d(Index n, Index M, std::uint64_t seed, Matrix* train_out) {
  RandomStream data_rng(seed, "train");
  Matrix train = data_rng.normal_matrix(n, 2);
  train.col(1) = train.col(1).array() + 0.5 * train.col(0).array().square();  // a banana
  *train_out = train;
  return fit_lite_to(train, M, seed);
}

TEST(LogLikelihoodQuadrature, AFittedLiteModelAgreesWithImportanceSampling) {
  Matrix train;
  ModelPtr model = fit_lite_2d(2000, 50, 31, &train);
  // q0 = N(0, 9 I) is wide, so importance sampling is reliable here: the two must agree within IS's
  // own error (4 estimated standard errors, U = 2^18). Far from the data f → 0 and p~ → q0, whose
  // tails reach beyond the data: the box is 7 sd of q0 around the data (mass outside < 1e-11), the
  // default 512² grid (h = 0.08, against the kernel's σ = 1.5).
  EvaluationResult q =
      run_quadrature(*model, train, train.topRows(300), "extent = [-21.0, 21.0, -20.0, 22.0]");
  EvaluationResult is =
      run_q0_log_likelihood(*model, train.topRows(300), "samples = 262144\nbias_bound = false");
  const double se = metric(is, "log_normalizer_stderr");
  EXPECT_GT(se, 0.0);
  EXPECT_NEAR(metric(q, "log_normalizer"), metric(is, "log_normalizer"), 4 * se);
  EXPECT_LT(metric(q, "log_normalizer_error"), 1e-6);
  EXPECT_LT(metric(q, "boundary_log_mass"), std::log(1e-6));
  // The default box (the data's range + 25% + 3 std) cuts q0's tails here, and the warning says so.
  EvaluationResult cut = run_quadrature(*model, train, train.topRows(300), "");
  EXPECT_TRUE(has_note(cut, "warning: the boundary band"));
  EXPECT_LT(metric(cut, "log_normalizer"), metric(q, "log_normalizer"));
}

TEST(LogLikelihoodQuadrature, TheChunkedParallelSumEqualsABruteForceGrid) {
  Matrix train;
  ModelPtr model = fit_lite_2d(500, 30, 32, &train);
  // 150² = 22500 cells: 5 full chunks and a partial one; grid/2 = 75.
  const Index n = 150;
  const double lo0 = -7.0, hi0 = 8.0, lo1 = -5.0, hi1 = 12.0;
  EvaluationResult r =
      run_quadrature(*model, train, train.topRows(10), "extent = [-7.0, 8.0, -5.0, 12.0]\ngrid = 150");
  auto brute = [&](Index k) {
    const double h0 = (hi0 - lo0) / static_cast<double>(k), h1 = (hi1 - lo1) / static_cast<double>(k);
    Matrix g(k * k, 2);  // column-major order here, unlike the evaluator's row-major cells
    for (Index j = 0; j < k; ++j)
      for (Index i = 0; i < k; ++i) g.row(j * k + i) << lo0 + (i + 0.5) * h0, lo1 + (j + 0.5) * h1;
    Vector lp(k * k);
    for (Index i = 0; i < k * k; ++i) lp[i] = model->log_unnormalized(g.row(i))[0];  // one point at a time
    return logsumexp(lp) + std::log(h0) + std::log(h1);
  };
  const double fine = brute(n), coarse = brute(n / 2);
  // Different summation orders: rounding of ~one eps per cell.
  EXPECT_NEAR(metric(r, "log_normalizer"), fine, 4 * n * n * kEps);
  EXPECT_NEAR(metric(r, "log_normalizer_error"), std::abs(fine - coarse), 8 * n * n * kEps);
}

TEST(LogLikelihoodQuadrature, ResultsDoNotDependOnTheThreadCount) {
  Matrix train;
  ModelPtr model = fit_lite_2d(500, 30, 33, &train);
  const std::string keys = "grid = 130";  // 16900 cells: chunks of 4096 and a partial one
  EvaluationResult a = run_quadrature(*model, train, train.topRows(50), keys, 1);
  EvaluationResult b = run_quadrature(*model, train, train.topRows(50), keys, 2);
  EvaluationResult c = run_quadrature(*model, train, train.topRows(50), keys, 3);
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  ASSERT_EQ(a.metrics.size(), c.metrics.size());
  for (std::size_t i = 0; i < a.metrics.size(); ++i) {
    EXPECT_EQ(a.metrics[i].second, b.metrics[i].second) << a.metrics[i].first;
    EXPECT_EQ(a.metrics[i].second, c.metrics[i].second) << a.metrics[i].first;
  }
}

// --- errors -------------------------------------------------------------------------------------

void expect_config_error(const Model& m, const std::string& keys, const std::string& key,
                         const std::string& text) {
  const Matrix rows = Matrix::Zero(3, m.dim());
  try {
    run_quadrature(m, rows, rows, keys);
    FAIL() << "expected ConfigError for " << keys;
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_NE(msg.find(text), std::string::npos) << msg;
  }
}

TEST(LogLikelihoodQuadratureErrors, BadConfigurationsNameTheKey) {
  FunctionModel m1 = gaussian_1d(0.0, 1.0);
  FunctionModel m3 = plain(3, [](const Matrix& X) -> Vector { return -0.5 * X.rowwise().squaredNorm(); });
  expect_config_error(m3, "", "method", "dimension 3");
  expect_config_error(m1, "grid = 8", "grid", "");
  expect_config_error(m1, "grid = 2000000", "grid", "");
  expect_config_error(m1, "extent = [-1.0, 1.0, 2.0]", "extent", "got 3");
  expect_config_error(m1, "extent = [1.0, -1.0]", "extent", "min < max");
  expect_config_error(m1, "extent = [-1.0, 1.0, -1.0, 1.0]", "extent", "dimension 1 needs 2");
  expect_config_error(m1, "boundary_tolerance = 1.0", "boundary_tolerance", "below 1");
  // Constant training data leaves the default box empty.
  expect_config_error(m1, "pad_std = 0", "extent", "default box is empty");
  // A quadrature key with importance sampling is a mistake, not silently ignored.
  try {
    run_q0_log_likelihood(m1, Matrix::Zero(3, 1), "grid = 64");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("grid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("quadrature"), std::string::npos) << e.what();
  }
}

TEST(LogLikelihoodQuadratureErrors, ANonFiniteLogDensityOnTheGridNamesTheModelAndThePoint) {
  // NaN on the cells with x > 3 (finite at the evaluated rows).
  FunctionModel m = plain(1, [](const Matrix& X) -> Vector {
    return X.col(0).unaryExpr([](double v) { return v > 3 ? std::nan("") : -0.5 * v * v; });
  });
  const Matrix rows = Matrix::Zero(2, 1);
  try {
    run_quadrature(m, rows, rows, "extent = [-4.0, 4.0]\ngrid = 16");
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model m"), std::string::npos) << msg;
    // Cells of width 0.5: the first centre above 3 is 3.25, cell 14.
    EXPECT_NE(msg.find("cell 14 of 16, centre (3.25)"), std::string::npos) << msg;
  }
  FunctionModel inf = plain(1, [](const Matrix& X) -> Vector {
    return X.col(0).unaryExpr(
        [](double v) { return v < -3 ? std::numeric_limits<double>::infinity() : 0.0; });
  });
  EXPECT_THROW(run_quadrature(inf, rows, rows, "extent = [-4.0, 4.0]\ngrid = 16"), NumericalError);
  // p~ = 0 everywhere in the box: log Ẑ = −inf is an error, not a metric.
  FunctionModel zero =
      plain(1, [](const Matrix& X) -> Vector { return Vector::Constant(X.rows(), kNegInf); });
  EXPECT_THROW(run_quadrature(zero, rows, rows, "extent = [-4.0, 4.0]\ngrid = 16"), NumericalError);
}

}  // namespace
}  // namespace kef::likelihood_test
