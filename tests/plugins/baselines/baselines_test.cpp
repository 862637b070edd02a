// The classical baselines (gaussian_fit, gmm, kde; docs/math.md §14): parameter recovery, EM's
// monotone log-likelihood, normalisation by quadrature, derivatives against central differences, the
// blocked KDE against a direct sum, thread independence, exact samplers against their densities (MMD
// two-sample test), and bitwise reloads through the plugin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "exact_sampler_check.hpp"
#include "gaussian_estimation.hpp"
#include "gaussian_estimators.hpp"
#include "gaussian_mixture_model.hpp"
#include "kde_estimator.hpp"
#include "kde_model.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/mmd_test.hpp"
#include "kef/model_archive.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using baselines::GaussianMixtureModel;
using baselines::KdeModel;
using test::GridSampler;

// ------------------------------------------------------------------------------------------------
// Data and fitting helpers.

// Rows of N(mean, A Aᵀ).
Matrix gaussian_rows(Index n, const Vector& mean, const Matrix& A, std::uint64_t seed) {
  RandomStream rng(seed, "gaussian_rows");
  return (rng.normal_matrix(n, mean.size()) * A.transpose()).rowwise() + mean.transpose();
}

// Three overlapping 2-D clusters (sds 0.5 to 1.2, centres within ±3), row i in cluster i % 3.
Matrix clusters_2d(Index n, std::uint64_t seed, double spread = 1.0) {
  RandomStream rng(seed, "clusters");
  const double centres[3][2] = {{-2.0, 0.0}, {1.5, 1.0}, {0.5, -2.5}};
  const double sds[3][2] = {{0.8, 0.5}, {0.6, 1.2}, {1.0, 0.7}};
  Matrix X(n, 2);
  for (Index i = 0; i < n; ++i) {
    const auto c = static_cast<std::size_t>(i % 3);
    X(i, 0) = spread * centres[c][0] + sds[c][0] * rng.normal();
    X(i, 1) = spread * centres[c][1] + sds[c][1] * rng.normal();
  }
  return X;
}

Matrix clusters_3d(Index n, std::uint64_t seed) {
  Matrix X2 = clusters_2d(n, seed);
  RandomStream rng(seed, "third");
  Matrix X(n, 3);
  X.leftCols(2) = X2;
  for (Index i = 0; i < n; ++i) X(i, 2) = 0.5 * X2(i, 0) + 0.7 * rng.normal();
  return X;
}

struct Fitted {
  ModelPtr model;
  FitReport report;
};

template <class E>
Fitted fit_direct(const std::string& toml, const Matrix& train, const Matrix& validation, int threads = 2) {
  E estimator(test::config_from(toml));
  Fitted out;
  Context context = Context(11, threads).child("model.m.fit");
  FitInput in{train, validation, context, out.report};
  out.model = estimator.fit(in);
  return out;
}

const GaussianMixtureModel& as_mixture(const Fitted& f) {
  const auto* m = dynamic_cast<const GaussianMixtureModel*>(f.model.get());
  EXPECT_NE(m, nullptr);
  return *m;
}

// ------------------------------------------------------------------------------------------------
// gaussian_fit

TEST(GaussianFit, RecoversMeanAndCovarianceWithinTheirSamplingError) {
  const Index N = 20000;
  Vector mu(3);
  mu << 1.0, -2.0, 0.5;
  Matrix A(3, 3);
  A << 1.0, 0.0, 0.0, 0.6, 0.8, 0.0, -0.3, 0.4, 1.5;
  const Matrix Sigma = A * A.transpose();
  const Matrix X = gaussian_rows(N, mu, A, 1);
  const Fitted f = fit_direct<baselines::GaussianFitEstimator>("", X, Matrix(0, 3));
  const auto& p = as_mixture(f).parameters();
  ASSERT_EQ(p.components(), 1);
  EXPECT_EQ(p.weights[0], 1.0);
  const Vector m = p.means.row(0).transpose();
  const Matrix& S = p.covariances[0];
  // Sampling errors: sd(μ̂_d) = sqrt(Σ_dd/N); sd(Σ̂_ab) ≈ sqrt((Σ_aa Σ_bb + Σ_ab²)/N), bias −Σ_ab/N. Four
  // standard deviations per entry (9 entries: a false alarm has probability < 6e-4 for a random seed;
  // the seed is fixed).
  for (Index a = 0; a < 3; ++a) {
    EXPECT_LT(std::abs(m[a] - mu[a]), 4 * std::sqrt(Sigma(a, a) / N)) << "mean " << a;
    for (Index b = 0; b <= a; ++b) {
      const double sd = std::sqrt((Sigma(a, a) * Sigma(b, b) + Sigma(a, b) * Sigma(a, b)) / N);
      EXPECT_LT(std::abs(S(a, b) - Sigma(a, b)), 4 * sd + std::abs(Sigma(a, b)) / N) << "cov " << a << b;
    }
  }
  // The blocked two-pass moments against the direct formulas (divisor N): equal up to rounding.
  const Vector direct_mean = X.colwise().mean();
  const Matrix C = X.rowwise() - direct_mean.transpose();
  const Matrix direct_cov = C.transpose() * C / static_cast<double>(N);
  EXPECT_LT((m - direct_mean).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((S - direct_cov).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(S, S.transpose());
  // Its mean training log-likelihood is that of N(μ̂, Σ̂) at its MLE: −(D/2)(1 + log 2π) − ½ log|Σ̂|.
  const double expected = -1.5 * (1 + std::log(2 * std::numbers::pi)) - 0.5 * std::log(S.determinant());
  EXPECT_NEAR(f.report.values.at("train_log_likelihood"), expected, 1e-10);
}

TEST(GaussianFit, CovarianceFloorClipsOnlyTheSmallEigenvalues) {
  Matrix S(3, 3);
  S << 4.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1e-9;
  const Eigen::SelfAdjointEigenSolver<Matrix> before(S);
  const auto f = baselines::floor_covariance(S, 0.01, false);
  EXPECT_EQ(f.clipped, 1);
  const Eigen::SelfAdjointEigenSolver<Matrix> after(f.covariance);
  EXPECT_NEAR(after.eigenvalues()[0], 0.01, 1e-15);
  EXPECT_NEAR(after.eigenvalues()[1], before.eigenvalues()[1], 1e-13);
  EXPECT_NEAR(after.eigenvalues()[2], before.eigenvalues()[2], 1e-13);
  // A feasible covariance is kept exactly; floor 0 flags the singular one.
  EXPECT_EQ(baselines::floor_covariance(S, 1e-10, false).covariance, S);
  EXPECT_TRUE(baselines::floor_covariance(S, 0.0, false).singular == false);  // 1e-9/4.3 > 1e-12
  Matrix T = S;
  T(2, 2) = 0.0;
  EXPECT_TRUE(baselines::floor_covariance(T, 0.0, false).singular);
  EXPECT_TRUE(baselines::floor_covariance(T, 0.0, true).singular);
  const auto d = baselines::floor_covariance(T, 0.5, true);
  EXPECT_EQ(d.covariance(0, 1), 0.0);
  EXPECT_EQ(d.covariance(2, 2), 0.5);
  EXPECT_EQ(d.covariance(0, 0), 4.0);
}

// ------------------------------------------------------------------------------------------------
// gmm

TEST(Gmm, EmIncreasesTheLogLikelihoodAtEveryIteration) {
  struct Case {
    Index K;
    bool diagonal;
    double floor;
    Index dim;
  } cases[] = {{3, false, 1e-6, 2}, {3, true, 1e-6, 2}, {5, false, 0.05, 2}, {4, false, 1e-6, 3}};
  for (const auto& c : cases) {
    const Matrix X = c.dim == 2 ? clusters_2d(1500, 2, 0.6) : clusters_3d(1500, 2);
    baselines::EmOptions o;
    o.components = c.K;
    o.fit.diagonal = c.diagonal;
    o.fit.floor = c.floor;
    o.tolerance = 1e-13;  // run long, so that many iterations are checked
    o.max_iterations = 300;
    const KeySites sites(test::config_from(""));
    const Context context(3, 2);
    const auto r = baselines::run_em(X, o, RandomStream(5, "em"), sites, "test", context);
    const std::string what = "K = " + std::to_string(c.K) + (c.diagonal ? " diagonal" : " full") +
                             ", floor " + std::to_string(c.floor) + ", D = " + std::to_string(c.dim);
    ASSERT_GE(r.trace.size(), 10u) << what;
    // Each step may only rise (EM with the floor is still an exact M-step over the feasible set,
    // docs/math.md §14.2); the slack is the rounding of a mean of 1500 log-likelihoods of size < 10:
    // (N − 1)·ε·max|ℓ| < 2e-12.
    for (std::size_t t = 1; t < r.trace.size(); ++t)
      EXPECT_GE(r.trace[t], r.trace[t - 1] - 2e-12) << what << ", iteration " << t;
    EXPECT_GT(r.trace.back(), r.trace.front() + 1e-3) << what;  // EM did real work
    // The final parameters are those of the last trace value.
    const GaussianMixtureModel m("gmm", r.parameters);
    EXPECT_NEAR(baselines::total_log_likelihood(m, X, context) / 1500.0, r.trace.back(), 1e-13) << what;
  }
}

// The E-step's fast path (log_terms column-wise over rows, then the block log-sum-exp with exp_array in
// responsibilities) against brute force: every term against log π_k + log N(x; μ_k, Σ_k) from Eigen's
// own Cholesky and triangular solve, row by row, and the row log-likelihoods and responsibilities
// against log_unnormalized (the per-row path) and exp(t_k − ℓ); K = 16 full covariances in D = 3, and
// more rows than one block (256) so block edges are crossed.
TEST(Gmm, BlockedEStepMatchesTheRowByRowDensity) {
  const Index K = 16, D = 3, N = 700;
  RandomStream rng(21, "estep");
  baselines::MixtureParameters p;
  p.weights = Vector::Constant(K, 0.0);
  p.means = 2.0 * rng.normal_matrix(K, D);
  for (Index k = 0; k < K; ++k) {
    p.weights[k] = 0.5 + rng.uniform();
    const Matrix A = rng.normal_matrix(D, D);
    p.covariances.push_back(A * A.transpose() + 0.1 * Matrix::Identity(D, D));
  }
  p.weights /= p.weights.sum();
  const GaussianMixtureModel model("gmm", p);
  const Matrix X = 2.5 * rng.normal_matrix(N, D);
  const Matrix T = model.log_terms(X);
  double worst = 0.0;
  for (Index k = 0; k < K; ++k) {
    const Eigen::LLT<Matrix> llt(p.covariances[static_cast<std::size_t>(k)]);
    const Matrix L = llt.matrixL();
    const double c =
        std::log(p.weights[k]) - 0.5 * D * std::log(2 * std::numbers::pi) - L.diagonal().array().log().sum();
    for (Index i = 0; i < N; ++i) {
      const Vector z = L.triangularView<Eigen::Lower>().solve((X.row(i) - p.means.row(k)).transpose());
      const double ref = c - 0.5 * z.squaredNorm();
      worst = std::max(worst, std::abs(T(i, k) - ref) / (1.0 + std::abs(ref)));
    }
  }
  EXPECT_LT(worst, 1e-14);
  Matrix gamma;
  const Context context(3, 2);
  const double total = baselines::responsibilities(model, X, gamma, context);
  const Vector ell = model.log_unnormalized(X);
  EXPECT_NEAR(total, ell.sum(), 1e-12 * std::abs(ell.sum()));
  double worst_gamma = 0.0;
  for (Index i = 0; i < N; ++i) {
    EXPECT_NEAR(gamma.row(i).sum(), 1.0, 1e-14) << "row " << i;
    for (Index k = 0; k < K; ++k)
      worst_gamma = std::max(worst_gamma, std::abs(gamma(i, k) - std::exp(T(i, k) - ell[i])));
  }
  EXPECT_LT(worst_gamma, 1e-13);
  // The blocks are fixed, so the thread count changes nothing.
  Matrix gamma1;
  EXPECT_EQ(baselines::responsibilities(model, X, gamma1, Context(3, 1)), total);
  EXPECT_EQ(gamma1, gamma);
}

TEST(Gmm, BicAndValidationChooseTheNumberOfComponents) {
  const Matrix X = clusters_2d(1800, 3, 1.5);  // well separated
  const Matrix V = clusters_2d(600, 4, 1.5);
  const Fitted bic =
      fit_direct<baselines::GmmEstimator>("components = [1, 2, 3, 4, 5]\nselect = \"bic\"", X, V);
  EXPECT_EQ(bic.report.values.at("components"), 3.0);
  for (int K = 1; K <= 5; ++K) {
    if (K == 3) continue;
    EXPECT_GT(bic.report.values.at("K" + std::to_string(K) + ".bic"), bic.report.values.at("K3.bic")) << K;
  }
  const Fitted val = fit_direct<baselines::GmmEstimator>("components = [1, 2, 3, 6]", X, V);
  const double chosen = val.report.values.at("components");
  double best = -1e300;
  double arg = 0;
  for (int K : {1, 2, 3, 6}) {
    const double v = val.report.values.at("K" + std::to_string(K) + ".validation_log_likelihood");
    if (v > best) best = v, arg = K;
  }
  EXPECT_EQ(chosen, arg);
  EXPECT_GE(chosen, 3.0);  // fewer than the true 3 components lose clearly on held-out data
  EXPECT_EQ(as_mixture(val).parameters().components(), static_cast<Index>(chosen));
}

// ------------------------------------------------------------------------------------------------
// All models: normalisation and derivatives.

std::vector<std::pair<std::string, ModelPtr>> two_d_models() {
  const Matrix X = clusters_2d(300, 6);
  const Matrix V = clusters_2d(150, 7);
  Vector mu(2);
  mu << 0.3, -0.2;
  Matrix A(2, 2);
  A << 1.2, 0.0, 0.7, 0.6;
  return {
      {"gaussian_fit",
       fit_direct<baselines::GaussianFitEstimator>("", gaussian_rows(400, mu, A, 8), V).model},
      {"gmm full", fit_direct<baselines::GmmEstimator>("components = 3", X, V).model},
      {"gmm diagonal",
       fit_direct<baselines::GmmEstimator>("components = 2\ncovariance = \"diagonal\"", X, V).model},
      {"kde scott", fit_direct<baselines::KdeEstimator>("", X, V).model},
      {"kde validation", fit_direct<baselines::KdeEstimator>("rule = \"validation\"", X, V).model},
  };
}

// ∫ p over [−L, L]² by the midpoint rule with step δ. The densities here are Gaussian mixtures whose
// components have standard deviations between 0.15 (checked below for the KDEs) and 1.5 and centres
// within ±8, so (a) the mass beyond L = 20 is below 1e-30 and (b) the rule is spectrally accurate:
// its error is of order exp(−2π²s²/δ²) < 1e-70 for s = 0.15, δ = 0.05. What remains is the rounding
// of 6.4·10⁵ positive terms (< 1e-12 relative).
double integrate_2d(const Model& m, double L = 20.0, double delta = 0.05) {
  const Index n = static_cast<Index>(std::llround(2 * L / delta));
  double total = 0.0;
  Matrix row(n, 2);
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < n; ++j) {
      row(j, 0) = -L + (static_cast<double>(i) + 0.5) * delta;
      row(j, 1) = -L + (static_cast<double>(j) + 0.5) * delta;
    }
    total += m.log_unnormalized(row).array().exp().sum();
  }
  return total * delta * delta;
}

TEST(Baselines, EveryTwoDimensionalModelIntegratesToOne) {
  for (const auto& [name, model] : two_d_models()) {
    ASSERT_TRUE(model->log_normalizer().has_value()) << name;
    EXPECT_EQ(*model->log_normalizer(), 0.0) << name;
    if (const auto* kde = dynamic_cast<const KdeModel*>(model.get())) {
      const double lambda_min =
          Eigen::SelfAdjointEigenSolver<Matrix>(kde->geometry().covariance()).eigenvalues()[0];
      ASSERT_GE(kde->bandwidth() * std::sqrt(lambda_min), 0.15) << name << ": the quadrature bound needs it";
    }
    if (const auto* mix = dynamic_cast<const GaussianMixtureModel*>(model.get())) {
      for (const Matrix& C : mix->parameters().covariances) {
        ASSERT_GE(Eigen::SelfAdjointEigenSolver<Matrix>(C).eigenvalues()[0], 0.15 * 0.15)
            << name << ": the quadrature bound needs it";
      }
    }
    EXPECT_NEAR(integrate_2d(*model), 1.0, 1e-9) << name;
  }
}

// Central differences: gradient with step 1e-5 (truncation h²|f'''|/6, rounding ε|f|/h: both < 1e-8 for
// these scales), second derivatives with step 1e-4 of the exact score (the Hessian's columns, truncation
// h²|f''''|/6 < 1e-6). Tolerances relative to the size of the value, with an order of magnitude to spare.
void expect_derivatives_match(const Model& m, const Matrix& X, const std::string& what) {
  Matrix s, lap;
  m.score_and_laplacian(X, s, lap);
  const Matrix s_only = m.score(X);
  EXPECT_LT((s - s_only).cwiseAbs().maxCoeff(), 1e-12 * (1 + s.cwiseAbs().maxCoeff())) << what;
  const Index D = X.cols();
  for (Index i = 0; i < X.rows(); ++i) {
    const Matrix H = m.hessian(X.row(i).transpose());
    EXPECT_LT((H - H.transpose()).cwiseAbs().maxCoeff(), 1e-12 * (1 + H.cwiseAbs().maxCoeff())) << what;
    for (Index d = 0; d < D; ++d) {
      auto shifted = [&](double delta) {
        Matrix x = X.row(i);
        x(0, d) += delta;
        return x;
      };
      const double h1 = 1e-5;
      const double g = (m.log_unnormalized(shifted(h1))[0] - m.log_unnormalized(shifted(-h1))[0]) / (2 * h1);
      EXPECT_NEAR(s(i, d), g, 1e-6 * (1 + std::abs(g))) << what << " score row " << i << " dim " << d;
      const double h2 = 1e-4;
      const Vector col = (m.score(shifted(h2)) - m.score(shifted(-h2))).row(0).transpose() / (2 * h2);
      for (Index e = 0; e < D; ++e)
        EXPECT_NEAR(H(e, d), col[e], 1e-5 * (1 + col.cwiseAbs().maxCoeff()))
            << what << " Hessian row " << i << " (" << e << ", " << d << ")";
      EXPECT_NEAR(lap(i, d), H(d, d), 1e-10 * (1 + std::abs(H(d, d)))) << what << " Laplacian row " << i;
    }
  }
}

TEST(Baselines, ScoreLaplacianAndHessianMatchCentralDifferences) {
  RandomStream rng(9, "probe");
  Matrix P2 = 2.0 * rng.normal_matrix(8, 2);
  P2.row(7) << 9.0, -7.5;  // far out: one component (kernel) dominates the others completely
  for (const auto& [name, model] : two_d_models()) expect_derivatives_match(*model, P2, name);
  // 3-D, and a KDE with more centres than one block (kCentreBlock = 512).
  const Matrix X3 = clusters_3d(1100, 10);
  Matrix P3 = 1.5 * rng.normal_matrix(6, 3);
  P3.row(5) << -8.0, 6.0, 5.0;
  expect_derivatives_match(*fit_direct<baselines::GaussianFitEstimator>("", X3, Matrix(0, 3)).model, P3,
                           "gaussian 3-D");
  expect_derivatives_match(*fit_direct<baselines::GmmEstimator>("components = 4", X3, Matrix(0, 3)).model, P3,
                           "gmm 3-D");
  expect_derivatives_match(
      *fit_direct<baselines::KdeEstimator>("rule = \"silverman\"", X3, Matrix(0, 3)).model, P3, "kde 3-D");
}

// ------------------------------------------------------------------------------------------------
// kde: the blocked path against a direct sum.

struct Direct {
  double log_p;
  Vector score, laplacian;
};

// p(x) = (1/n) Σ_m N(x; x_m, h² Σ̂) with every term formed at once, Σ̂⁻¹ from an LU inverse.
Direct direct_kde(const Matrix& centres, const Matrix& cov, double h, const Vector& x) {
  const Index n = centres.rows(), D = centres.cols();
  const Matrix P = cov.inverse();
  Vector t(n);
  Matrix s_m(n, D);
  for (Index m = 0; m < n; ++m) {
    const Vector d = x - centres.row(m).transpose();
    t[m] = -0.5 * d.dot(P * d) / (h * h);
    s_m.row(m) = (-P * d / (h * h)).transpose();
  }
  const double lse = logsumexp(t);
  const Vector w = (t.array() - lse).exp();
  Direct out;
  out.log_p = lse - std::log(static_cast<double>(n)) -
              0.5 * static_cast<double>(D) * std::log(2 * std::numbers::pi) -
              0.5 * std::log((h * h * cov).determinant());
  out.score = s_m.transpose() * w;
  out.laplacian.resize(D);
  for (Index d = 0; d < D; ++d)
    out.laplacian[d] = -P(d, d) / (h * h) + (w.array() * (s_m.col(d).array() - out.score[d]).square()).sum();
  return out;
}

TEST(Kde, BlockedEvaluationMatchesTheDirectSum) {
  const Matrix X = clusters_3d(1300, 12);  // 2 full blocks of 512 and a partial one
  const Matrix V = clusters_3d(200, 13);
  const Fitted f = fit_direct<baselines::KdeEstimator>("rule = \"validation\"", X, V);
  const auto& kde = dynamic_cast<const KdeModel&>(*f.model);
  const Matrix& cov = kde.geometry().covariance();
  RandomStream rng(14, "probe");
  Matrix P = 2.0 * rng.normal_matrix(12, 3);
  P.row(11) << 15.0, -12.0, 9.0;  // every kernel is below e^−745 there: only log space survives
  const Vector lp = kde.log_unnormalized(P);
  Matrix s, lap;
  kde.score_and_laplacian(P, s, lap);
  for (Index i = 0; i < P.rows(); ++i) {
    const Direct d = direct_kde(X, cov, kde.bandwidth(), P.row(i).transpose());
    // Both sum the same terms in another order and with another whitening: rounding only.
    EXPECT_NEAR(lp[i], d.log_p, 1e-12 * (1 + std::abs(d.log_p))) << i;
    EXPECT_LT((s.row(i).transpose() - d.score).cwiseAbs().maxCoeff(),
              1e-10 * (1 + d.score.cwiseAbs().maxCoeff()))
        << i;
    EXPECT_LT((lap.row(i).transpose() - d.laplacian).cwiseAbs().maxCoeff(),
              1e-9 * (1 + d.laplacian.cwiseAbs().maxCoeff()))
        << i;
  }
  EXPECT_TRUE(std::isfinite(lp[11]));
  // The bandwidth search's held-out values, for three of its grid points, against the direct sum.
  const double scott = baselines::scott_factor(X.rows(), 3);
  for (int g : {0, 5, 13}) {
    const double h = f.report.values.at("grid" + std::to_string(g) + ".bandwidth");
    EXPECT_DOUBLE_EQ(h, std::pow(2.0, (g - 10) / 3.0) * scott);
    double total = 0.0;
    for (Index i = 0; i < V.rows(); ++i) total += direct_kde(X, cov, h, V.row(i).transpose()).log_p;
    EXPECT_NEAR(f.report.values.at("grid" + std::to_string(g) + ".validation_log_likelihood"),
                total / V.rows(), 1e-11)
        << g;
  }
  // The chosen h is the grid's best.
  double best = -1e300;
  for (int g = 0; g < 14; ++g)
    best = std::max(best, f.report.values.at("grid" + std::to_string(g) + ".validation_log_likelihood"));
  EXPECT_EQ(f.report.values.at("validation_log_likelihood"), best);
}

// ------------------------------------------------------------------------------------------------
// Determinism.

TEST(Baselines, FitsAreBitwiseIndependentOfTheThreadCount) {
  const Matrix X = clusters_3d(3000, 15);  // 12 row blocks of 256
  const Matrix V = clusters_3d(700, 16);
  RandomStream rng(17, "probe");
  const Matrix P = rng.normal_matrix(50, 3);
  const std::string gmm = "components = [2, 3, 4]\nrestarts = 2";
  const Fitted g1 = fit_direct<baselines::GmmEstimator>(gmm, X, V, 1);
  const Fitted k1 = fit_direct<baselines::KdeEstimator>("rule = \"validation\"", X, V, 1);
  const Fitted f1 = fit_direct<baselines::GaussianFitEstimator>("", X, V, 1);
  for (int threads : {2, 3}) {
    const Fitted g = fit_direct<baselines::GmmEstimator>(gmm, X, V, threads);
    EXPECT_EQ(g.report.values, g1.report.values) << threads;
    const auto& a = as_mixture(g1).parameters();
    const auto& b = as_mixture(g).parameters();
    EXPECT_EQ(a.weights, b.weights);
    EXPECT_EQ(a.means, b.means);
    for (std::size_t k = 0; k < a.covariances.size(); ++k) EXPECT_EQ(a.covariances[k], b.covariances[k]);
    EXPECT_EQ(g.model->log_unnormalized(P), g1.model->log_unnormalized(P));
    const Fitted k = fit_direct<baselines::KdeEstimator>("rule = \"validation\"", X, V, threads);
    EXPECT_EQ(k.report.values, k1.report.values) << threads;
    EXPECT_EQ(k.model->log_unnormalized(P), k1.model->log_unnormalized(P));
    const Fitted f = fit_direct<baselines::GaussianFitEstimator>("", X, V, threads);
    EXPECT_EQ(as_mixture(f).parameters().covariances[0], as_mixture(f1).parameters().covariances[0]);
  }
}

// ------------------------------------------------------------------------------------------------
// Exact samplers against the models' own densities.

TEST(Baselines, ExactSamplesPassATwoSampleTestAgainstTheDensity) {
  // The MMD permutation test (200 permutations, 300 points a side, median-heuristic bandwidth) of the
  // model's sampler against grid-inversion draws from its density, repeated on 10 independent pairs of
  // samples at level α = 0.05. Under the null each repetition rejects with probability <= 0.05, so 4 or
  // more rejections out of 10 has probability P(Binomial(10, 0.05) >= 4) ≈ 1e-3: the test allows 3.
  // (One repetition at α = 0.01 would fail for a correct sampler once in 100 seeds; the count does not
  // depend on one lucky or unlucky seed.) Its power: draws shifted by half the data's standard
  // deviation are rejected in at least 8 of 10 repetitions.
  const Matrix X = clusters_2d(300, 18, 0.8);
  const Matrix V = clusters_2d(150, 19, 0.8);
  const auto models = std::vector<std::pair<std::string, ModelPtr>>{
      {"gaussian_fit", fit_direct<baselines::GaussianFitEstimator>("", X, V).model},
      {"gmm", fit_direct<baselines::GmmEstimator>("components = 3", X, V).model},
      {"kde", fit_direct<baselines::KdeEstimator>("rule = \"validation\"", X, V).model}};
  const Index n = 300;
  for (const auto& [name, model] : models)
    EXPECT_LE(test::sampler_rejections(*model, GridSampler(*model), n, 20), 3) << name;
  // Power: the mixture's own draws shifted by 0.7 (half the data's standard deviation) along x.
  const auto shifted = [&](RandomStream& rng) {
    Matrix S = models[1].second->sample(n, rng);
    S.col(0).array() += 0.7;
    return S;
  };
  EXPECT_GE(test::rejections_against_grid(shifted, GridSampler(*models[1].second), n, 30, 200), 8);
}

// Mean and covariance of the rows of S against the exact ones, each entry within 4 standard errors
// estimated from the sample itself (the per-row terms' standard deviation over sqrt(n)). A false alarm
// among the 9 entries of a 3-D model has probability < 6e-4 for a random seed (the seeds are fixed).
void expect_moments(const Matrix& S, const Vector& mean, const Matrix& cov, const std::string& what) {
  const double n = static_cast<double>(S.rows());
  const Matrix C = S.rowwise() - mean.transpose();
  for (Index a = 0; a < S.cols(); ++a) {
    EXPECT_LT(std::abs(C.col(a).mean()), 4 * std::sqrt(cov(a, a) / n)) << what << " mean " << a;
    for (Index b = 0; b <= a; ++b) {
      const Vector t = C.col(a).cwiseProduct(C.col(b));
      const double m = t.mean(), se = std::sqrt((t.array() - m).square().sum() / (n - 1) / n);
      EXPECT_LT(std::abs(m - cov(a, b)), 4 * se)
          << what << " cov " << a << b << ": " << m << " vs " << cov(a, b);
    }
  }
}

TEST(Baselines, ExactSamplesHaveTheModelsMeanAndCovariance) {
  // A finer check of the samplers than the two-sample test: 2·10⁵ draws against the exact first two
  // moments. Mixture: mean Σ π_k μ_k, covariance Σ π_k (Σ_k + μ_k μ_kᵀ) − mean meanᵀ. KDE: the
  // centres' mean, and Σ̂ + h² Σ̂ (Σ̂ is the centres' own covariance, divisor n).
  const Matrix X = clusters_3d(700, 26);
  const Matrix V = clusters_3d(200, 27);
  const Index n = 200000;
  std::uint64_t seed = 28;
  for (const std::string toml : {"gaussian_fit", "gmm full", "gmm diagonal"}) {
    const Fitted f = toml == "gaussian_fit" ? fit_direct<baselines::GaussianFitEstimator>("", X, V)
                     : toml == "gmm full"   ? fit_direct<baselines::GmmEstimator>("components = 3", X, V)
                                            : fit_direct<baselines::GmmEstimator>(
                                                "components = 3\ncovariance = \"diagonal\"", X, V);
    const auto& p = as_mixture(f).parameters();
    Vector mean = Vector::Zero(3);
    Matrix second = Matrix::Zero(3, 3);
    for (Index k = 0; k < p.components(); ++k) {
      const Vector mu = p.means.row(k).transpose();
      mean += p.weights[k] * mu;
      second += p.weights[k] * (p.covariances[static_cast<std::size_t>(k)] + mu * mu.transpose());
    }
    RandomStream rng(seed++, "moments");
    expect_moments(f.model->sample(n, rng), mean, second - mean * mean.transpose(), toml);
  }
  const Fitted k = fit_direct<baselines::KdeEstimator>("rule = \"validation\"", X, V);
  const auto& kde = dynamic_cast<const KdeModel&>(*k.model);
  const double h = kde.bandwidth();
  RandomStream rng(seed, "moments");
  expect_moments(kde.sample(n, rng), X.colwise().mean().transpose(),
                 (1 + h * h) * kde.geometry().covariance(), "kde");
}

// ------------------------------------------------------------------------------------------------
// Saved models through the plugin.

ModelPtr fit_with_plugin(const std::string& toml, const Matrix& X, const Matrix& V) {
  Registry& reg = test::plugin_registry();
  BuildContext ctx{X.cols(), &reg, nullptr, X.rows()};
  EstimatorPtr e = reg.make_estimator(test::config_from(toml), EstimatorParts{nullptr, nullptr, &reg}, ctx);
  FitReport report;
  Context context = Context(21, 2).child("model.m.fit");
  FitInput in{X, V, context, report};
  return e->fit(in);
}

TEST(Baselines, SavedModelsReloadBitwise) {
  const Matrix X = clusters_3d(700, 22);
  const Matrix V = clusters_3d(200, 23);
  RandomStream rng(24, "probe");
  const Matrix P = 1.5 * rng.normal_matrix(30, 3);
  for (const std::string toml : {"type = \"gaussian_fit\"", "type = \"gmm\"\ncomponents = 3",
                                 "type = \"gmm\"\ncomponents = [2, 3]\ncovariance = \"diagonal\"",
                                 "type = \"kde\"\nrule = \"validation\""}) {
    const ModelPtr a = fit_with_plugin(toml, X, V);
    const fs::path dir = test::temp_dir("baselines-reload") / "model";
    save_model(*a, dir);
    const ModelPtr b = load_model(dir, test::plugin_registry());
    EXPECT_EQ(b->type_name(), a->type_name()) << toml;
    EXPECT_EQ(b->log_unnormalized(P), a->log_unnormalized(P)) << toml;
    Matrix s1, h1, s2, h2;
    a->score_and_laplacian(P, s1, h1);
    b->score_and_laplacian(P, s2, h2);
    EXPECT_EQ(s1, s2) << toml;
    EXPECT_EQ(h1, h2) << toml;
    EXPECT_EQ(a->hessian(P.row(0).transpose()), b->hessian(P.row(0).transpose())) << toml;
    RandomStream r1(25, "s"), r2(25, "s");
    EXPECT_EQ(a->sample(50, r1), b->sample(50, r2)) << toml;
    EXPECT_EQ(a->describe(), b->describe()) << toml;
    EXPECT_EQ(*b->log_normalizer(), 0.0);
    EXPECT_TRUE(b->has(
        FacetSet{Facet::NormalizedDensity, Facet::Score, Facet::Laplacian, Facet::Hessian, Facet::Sampler}))
        << toml;
  }
}

TEST(Baselines, BadKeysAreConfigErrorsNamingTheKey) {
  auto message = [](auto make) { return test::message_of<ConfigError>(make); };
  EXPECT_TRUE(test::contains(
      message([] { baselines::GmmEstimator e(test::config_from("components = 2.5")); }), "components"));
  EXPECT_TRUE(test::contains(
      message([] { baselines::GmmEstimator e(test::config_from("components = [2, 2]")); }), "listed twice"));
  EXPECT_TRUE(test::contains(message([] { baselines::KdeEstimator e(test::config_from("bandwidth = 0.0")); }),
                             "bandwidth"));
  EXPECT_TRUE(test::contains(
      message([] { baselines::KdeEstimator e(test::config_from("bandwidth = 0.3\nrule = \"scott\"")); }),
      "rule"));
  EXPECT_TRUE(test::contains(message([] {
                               baselines::KdeEstimator e(
                                   test::config_from("rule = \"validation\"\ngrid = [0.5, -1.0]"));
                             }),
                             "grid"));
  // More components than rows, at fit time too (a caller that skipped check()).
  const Matrix X = clusters_2d(5, 1);
  EXPECT_TRUE(
      test::contains(message([&] { fit_direct<baselines::GmmEstimator>("components = 6", X, Matrix(0, 2)); }),
                     "components"));
  // A singular covariance without a floor: a duplicated column.
  Matrix Y(50, 3);
  Y.leftCols(2) = clusters_2d(50, 2);
  Y.col(2) = Y.col(0);
  for (const char* toml : {"", "covariance_floor = 0.0"}) {
    const std::string m =
        message([&] { fit_direct<baselines::GaussianFitEstimator>(toml, Y, Matrix(0, 3)); });
    EXPECT_TRUE(test::contains(m, "covariance_floor")) << m;
    EXPECT_TRUE(test::contains(m, "singular")) << m;
  }
  EXPECT_TRUE(test::contains(message([&] { fit_direct<baselines::KdeEstimator>("", Y, Matrix(0, 3)); }),
                             "covariance_floor"));
  // With a floor the same data fit, and the floor shows in the covariance.
  const Fitted ok = fit_direct<baselines::GaussianFitEstimator>("covariance_floor = 1e-3", Y, Matrix(0, 3));
  EXPECT_EQ(ok.report.values.at("clipped_eigenvalues"), 1.0);
  EXPECT_NEAR(
      Eigen::SelfAdjointEigenSolver<Matrix>(as_mixture(ok).parameters().covariances[0]).eigenvalues()[0],
      1e-3, 1e-12);
}

}  // namespace
}  // namespace kef
