// The cluster_mixture estimator (DKEF §3.1) and its model: derivatives against central differences,
// normalisation (2-D quadrature, importance-sampled log Ẑ_k against exact values), determinism,
// bitwise reloads, the pipeline on DKEF's mixture of rings with inner lite and dkef, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cluster_mixture_support.hpp"
#include "exact_sampler_check.hpp"
#include "kef/linalg.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "mixture_model.hpp"
#include "pipeline_text.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using cluster_mixture::MixtureModel;
using cm_test::GaussianModel;

// ∫ exp(log p(x)) dx over [−L, L]² by the midpoint rule with step h. For the smooth, Gaussian-tailed
// densities here (scales >= 0.5, mass beyond L = 14 below 1e-30) the rule is spectrally accurate:
// its error is of order exp(−2π²s²/h²) < 1e-30 for s = 0.5, h = 0.05.
double integrate_2d(const std::function<Vector(const Matrix&)>& log_p, double L = 14.0, double h = 0.05) {
  const Index n = static_cast<Index>(std::llround(2 * L / h));
  double total = 0.0;
  Matrix row(n, 2);
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < n; ++j) {
      row(j, 0) = -L + (static_cast<double>(i) + 0.5) * h;
      row(j, 1) = -L + (static_cast<double>(j) + 0.5) * h;
    }
    total += log_p(row).array().exp().sum();
  }
  return total * h * h;
}

Matrix random_rows(Index n, double scale, std::uint64_t seed) {
  RandomStream rng(seed, "rows");
  return scale * rng.normal_matrix(n, 2);
}

// Central differences of log p: gradient with step 1e-5 (truncation h²·|f'''|/6 ≈ 1e-10, rounding
// eps·|f|/h ≈ 1e-10 for |f| <= 10), diagonal second derivative with step 1e-3 (truncation
// h²·|f''''|/12 ≈ 1e-7, rounding 4·eps·|f|/h² ≈ 1e-8); tolerances 1e-6 and 1e-5 relative to the
// scale of the value leave an order of magnitude of margin.
void expect_derivatives_match(const Model& m, const Matrix& X, const std::string& what) {
  Matrix s, lap;
  m.score_and_laplacian(X, s, lap);
  const Matrix s_only = m.score(X);
  EXPECT_LT((s - s_only).cwiseAbs().maxCoeff(), 1e-12 * (1 + s.cwiseAbs().maxCoeff())) << what;
  for (Index i = 0; i < X.rows(); ++i) {
    for (Index d = 0; d < X.cols(); ++d) {
      auto f = [&](double delta) {
        Matrix x = X.row(i);
        x(0, d) += delta;
        return m.log_unnormalized(x)[0];
      };
      const double h1 = 1e-5, h2 = 1e-3;
      const double g = (f(h1) - f(-h1)) / (2 * h1);
      const double f0 = f(0.0);
      const double c = (f(h2) - 2 * f0 + f(-h2)) / (h2 * h2);
      EXPECT_NEAR(s(i, d), g, 1e-6 * (1 + std::abs(g))) << what << " score row " << i << " dim " << d;
      EXPECT_NEAR(lap(i, d), c, 1e-5 * (1 + std::abs(c)))
          << what << " Hessian diagonal row " << i << " dim " << d;
    }
  }
}

std::vector<ModelPtr> gaussian_components(std::vector<double>* exact_log_z) {
  std::vector<ModelPtr> comps;
  const double means[3][2] = {{-2.0, 0.0}, {1.5, 0.5}, {0.0, 3.0}};
  const double stds[3] = {1.0, 0.7, 1.3};
  const double offsets[3] = {0.3, -1.0, 2.0};
  for (int k = 0; k < 3; ++k) {
    Vector mu(2);
    mu << means[k][0], means[k][1];
    auto g = std::make_shared<GaussianModel>(mu, stds[k], offsets[k], cm_test::gaussian_base(0.0, 2.0 + k));
    if (exact_log_z) exact_log_z->push_back(g->exact_log_normalizer());
    comps.push_back(g);
  }
  return comps;
}

TEST(MixtureModel, ScoreAndHessianDiagonalMatchCentralDifferences) {
  // Overlapping components, so the responsibilities vary over the probe points.
  Vector w(3), logz(3);
  w << 0.2, 0.5, 0.3;
  logz << 0.4, -0.3, 1.1;
  MixtureModel m(gaussian_components(nullptr), w, logz, {});
  expect_derivatives_match(m, random_rows(12, 2.0, 1), "Gaussian components");
  // A point where one component dominates completely and one where the others underflow.
  Matrix far(2, 2);
  far << -30.0, 0.0, 0.0, 25.0;
  expect_derivatives_match(m, far, "far points");
}

TEST(MixtureModel, IntegratesToOneWhenTheNormalisersAreExact) {
  std::vector<double> exact;
  auto comps = gaussian_components(&exact);
  Vector w(3), logz(3);
  w << 0.25, 0.45, 0.3;
  for (int k = 0; k < 3; ++k) logz[k] = exact[static_cast<std::size_t>(k)];
  MixtureModel m(comps, w, logz, {});
  EXPECT_NEAR(integrate_2d([&](const Matrix& X) { return m.log_unnormalized(X); }), 1.0, 1e-9);
  // Its base measure Σ w_k q0_k is normalised too, and its derivatives are right.
  const BaseMeasure* q = m.base_measure();
  ASSERT_NE(q, nullptr);
  EXPECT_NEAR(integrate_2d([&](const Matrix& X) { return q->log_density(X); }, 40.0, 0.1), 1.0, 1e-9);
  const Matrix X = random_rows(6, 3.0, 2);
  Matrix d1, d2;
  q->derivatives(X, d1, d2);
  for (Index i = 0; i < X.rows(); ++i)
    for (Index d = 0; d < 2; ++d) {
      auto f = [&](double delta) {
        Matrix x = X.row(i);
        x(0, d) += delta;
        return q->log_density(x)[0];
      };
      EXPECT_NEAR(d1(i, d), (f(1e-5) - f(-1e-5)) / 2e-5, 1e-6);
      EXPECT_NEAR(d2(i, d), (f(1e-3) - 2 * f(0) + f(-1e-3)) / 1e-6, 1e-5);
    }
  // Its samples have the mixture's mean (Σ w_k · 0 = 0 for these centred base measures) and second
  // moment Σ w_k σ_k² per coordinate, within 4 standard errors.
  RandomStream rng(5, "q");
  const Index n = 40000;
  const Matrix Y = q->sample(n, 2, rng);
  const double m2 = w[0] * 4.0 + w[1] * 9.0 + w[2] * 16.0;
  for (Index d = 0; d < 2; ++d) {
    EXPECT_NEAR(Y.col(d).mean(), 0.0, 4 * std::sqrt(m2 / n));
    // Var[y²] = E y⁴ − m2², E y⁴ = 3 Σ w_k σ_k⁴.
    const double m4 = 3 * (w[0] * 16.0 + w[1] * 81.0 + w[2] * 256.0);
    EXPECT_NEAR(Y.col(d).squaredNorm() / n, m2, 4 * std::sqrt((m4 - m2 * m2) / n));
  }
}

// Two Gaussian blobs of unequal size; row i is in blob 1 when i % 3 == 2.
Matrix two_blobs(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "two_blobs");
  Matrix X(n, 2);
  for (Index i = 0; i < n; ++i) {
    const bool second = i % 3 == 2;
    X(i, 0) = (second ? 5.0 : -4.0) + (second ? 0.6 : 1.0) * rng.normal();
    X(i, 1) = (second ? 1.0 : 0.0) + (second ? 0.6 : 1.0) * rng.normal();
  }
  return X;
}

struct Fitted {
  ModelPtr model;
  FitReport report;
};

Fitted fit(const std::string& estimator_toml, const Matrix& train, const Matrix& validation, int threads,
           const std::string& base = "type = \"gaussian\"\nstd = 3.0",
           const std::string& kernel = "type = \"gaussian\"\nsigma = 1.0") {
  Registry& reg = cm_test::registry();
  Config est = test::config_from(estimator_toml);
  BuildContext ctx{train.cols(), &reg, nullptr, train.rows()};
  // An empty table: no such part (the inner estimators that use neither, the likelihood baselines).
  EstimatorParts parts{kernel.empty() ? nullptr : reg.make_kernel(test::config_from(kernel), ctx),
                       base.empty() ? nullptr : reg.make_base_measure(test::config_from(base), ctx), &reg};
  EstimatorPtr e = reg.make_estimator(est, parts, ctx);
  Fitted out;
  Context context = Context(3, threads).child("fit");
  FitInput in{train, validation, context, out.report};
  out.model = e->fit(in);
  return out;
}

TEST(ClusterMixture, ImportanceSampledNormalisersMatchTheExactOnes) {
  const Matrix X = two_blobs(900, 1);
  const Fitted f = fit(R"(type = "cluster_mixture"
clusters = 2
normalizer_samples = 40000
[inner]
type = "test_gaussian_fit"
offset = 0.7
)",
                       X, Matrix(0, 2), 2);
  const auto& v = f.report.values;
  // Clustering found the blobs: cluster 0 holds row 0 (blob 0, 600 rows).
  EXPECT_EQ(v.at("cluster0.train_rows"), 600.0);
  EXPECT_EQ(v.at("cluster1.train_rows"), 300.0);
  EXPECT_EQ(v.at("cluster0.weight"), 600.0 / 900.0);
  double expected_mass = 0.0;
  for (int k = 0; k < 2; ++k) {
    const std::string p = "cluster" + std::to_string(k) + ".";
    const double s = v.at(p + "std");
    const double exact = 0.7 + std::log(2 * M_PI * s * s);  // c + (D/2) log(2π s²), D = 2
    const double est = v.at(p + "log_normalizer"), se = v.at(p + "log_normalizer_stderr");
    EXPECT_GT(se, 0.0);
    EXPECT_LT(se, 0.05);
    // The delta-method standard error: the estimate is within 3 of them (a 0.3% event otherwise).
    EXPECT_LT(std::abs(est - exact), 3 * se)
        << "cluster " << k << ": " << est << " vs " << exact << " ± " << se;
    expected_mass += v.at(p + "weight") * std::exp(exact - est);
  }
  // The mixture integrates to Σ_k w_k Z_k / Ẑ_k: the combination uses exactly the reported Ẑ_k.
  EXPECT_NEAR(integrate_2d([&](const Matrix& Y) { return f.model->log_unnormalized(Y); }), expected_mass,
              1e-9);
  EXPECT_NE(f.model->base_measure(), nullptr);
  EXPECT_FALSE(f.model->log_ratio_lower_bound().has_value());  // the test components give none
  EXPECT_FALSE(f.model->log_normalizer().has_value());
}

// A component whose mass sits where its base measure almost never proposes (a narrow blob at (6, 6), q0 =
// N(0, I)): the base measure alone rests on a handful of proposals and is flagged with a warning; the
// defensive mixture (bumps at the cluster's rows) recovers the exact normaliser within its error.
TEST(ClusterMixture, DefensiveProposalFindsAComponentTheBaseMeasureMisses) {
  RandomStream rng(11, "far-blob");
  const Matrix X = (0.05 * rng.normal_matrix(300, 2)).array() + 6.0;
  const std::string toml = R"(type = "cluster_mixture"
clusters = 1
normalizer_samples = 40000
[inner]
type = "test_gaussian_fit"
offset = 0.2
)";
  const std::string base = "type = \"gaussian\"\nstd = 1.0";
  const Fitted d = fit(toml, X, Matrix(0, 2), 2, base);
  const double s = d.report.values.at("cluster0.std"), exact = 0.2 + std::log(2 * M_PI * s * s);
  const double est = d.report.values.at("cluster0.log_normalizer");
  const double se = d.report.values.at("cluster0.log_normalizer_stderr");
  EXPECT_LT(se, 0.025);
  EXPECT_GT(d.report.values.at("cluster0.normalizer_ess"), 100.0);
  EXPECT_LT(std::abs(est - exact), 3 * se) << est << " vs " << exact << " ± " << se;
  for (const auto& note : d.report.notes) EXPECT_FALSE(test::contains(note, "warning")) << note;
  EXPECT_TRUE(test::contains(d.model->describe(), "defensive mixture")) << d.model->describe();

  const Fitted b = fit(std::string(toml).replace(toml.find("[inner]"), 0, "normalizer_proposal = \"base\"\n"),
                       X, Matrix(0, 2), 2, base);
  EXPECT_LT(b.report.values.at("cluster0.normalizer_ess"), 100.0);
  bool warned = false;
  for (const auto& note : b.report.notes)
    warned = warned || (test::contains(note, "warning: cluster0: log Ẑ") &&
                        test::contains(note, "normalizer_proposal = \"defensive\""));
  EXPECT_TRUE(warned);
  EXPECT_TRUE(test::contains(b.model->describe(), "from its base measure")) << b.model->describe();
}

TEST(ClusterMixture, OneClusterIsTheInnerModelNormalisedByItsEstimate) {
  const Matrix X = random_rows(300, 1.0, 5);  // one standard-normal blob: all mass well inside ±14
  const Fitted f = fit(R"(type = "cluster_mixture"
clusters = 1
normalizer_samples = 40000
[inner]
type = "test_gaussian_fit"
offset = -0.4
)",
                       X, Matrix(0, 2), 1);
  const auto& v = f.report.values;
  EXPECT_EQ(v.at("cluster0.train_rows"), 300.0);
  EXPECT_EQ(v.at("cluster0.weight"), 1.0);
  EXPECT_EQ(v.count("clustering.bandwidth"), 0u);  // no clustering for K = 1
  const double s = v.at("cluster0.std"), exact = -0.4 + std::log(2 * M_PI * s * s);
  const double est = v.at("cluster0.log_normalizer"), se = v.at("cluster0.log_normalizer_stderr");
  EXPECT_LT(std::abs(est - exact), 3 * se);
  EXPECT_NEAR(integrate_2d([&](const Matrix& Y) { return f.model->log_unnormalized(Y); }),
              std::exp(exact - est), 1e-9);
}

const char* kLiteMixture = R"(type = "cluster_mixture"
clusters = 2
bandwidth = 0.4
normalizer_samples = 8192
max_points = 300
[inner]
type = "lite"
inducing_points = 30
lambda_alpha = 0.01
)";

Matrix rings_data(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "rings");
  Matrix X(n, 2);
  for (Index i = 0; i < n; ++i) {
    const double r = (i % 2 ? 3.0 : 1.0) + 0.1 * rng.normal(), t = 2 * M_PI * rng.uniform();
    X(i, 0) = r * std::cos(t);
    X(i, 1) = r * std::sin(t);
  }
  return X;
}

TEST(ClusterMixture, LiteMixtureIsThreadIndependentReloadsBitwiseAndHasExactDerivatives) {
  const Matrix X = rings_data(800, 2);
  const Fitted a = fit(kLiteMixture, X, Matrix(0, 2), 1);
  const Fitted b = fit(kLiteMixture, X, Matrix(0, 2), 2);
  // 800 rows, 300 landmarks: the Nyström assignment path. The rings are recovered exactly.
  EXPECT_EQ(a.report.values.at("cluster0.train_rows"), 400.0);
  EXPECT_EQ(a.report.values.at("cluster1.train_rows"), 400.0);
  EXPECT_EQ(a.report.values, b.report.values);
  const Matrix P = random_rows(50, 2.0, 3);
  EXPECT_EQ(a.model->log_unnormalized(P), b.model->log_unnormalized(P));

  fs::path dir = test::temp_dir("cm-reload") / "model";
  save_model(*a.model, dir);
  EXPECT_TRUE(fs::exists(dir / "component1" / "alpha.npy"));
  ModelPtr r = load_model(dir, test::plugin_registry());
  EXPECT_EQ(r->type_name(), "cluster_mixture");
  EXPECT_EQ(r->log_unnormalized(P), a.model->log_unnormalized(P));  // bitwise
  Matrix s1, h1, s2, h2;
  a.model->score_and_laplacian(P, s1, h1);
  r->score_and_laplacian(P, s2, h2);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(r->score(P), a.model->score(P));
  EXPECT_EQ(r->describe(), a.model->describe());
  EXPECT_TRUE(test::contains(r->describe(), "defensive mixture")) << r->describe();
  EXPECT_EQ(*r->log_ratio_lower_bound(), *a.model->log_ratio_lower_bound());  // lite gives one

  // Real (kernel) components: the combination's derivatives against central differences.
  expect_derivatives_match(*a.model, random_rows(8, 1.5, 4), "lite mixture");
}

TEST(ClusterMixture, SmallClustersAreConfigErrorsNamingTheClusterAndKey) {
  const Matrix X = two_blobs(300, 3);  // clusters of 200 and 100 rows
  auto message = [&](const std::string& toml) -> std::string {
    try {
      fit(toml, X, Matrix(0, 2), 1);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no ConfigError";
  };
  std::string m = message(
      "type = \"cluster_mixture\"\nclusters = 2\nmin_cluster_size = 120\nnormalizer_samples = 100\n"
      "[inner]\ntype = \"test_gaussian_fit\"\n");
  EXPECT_NE(m.find("min_cluster_size"), std::string::npos) << m;
  EXPECT_NE(m.find("cluster 1 of 2 has 100 training rows"), std::string::npos) << m;
  // The inner estimator's own requirement, with the cluster it failed in.
  m = message(
      "type = \"cluster_mixture\"\nclusters = 2\nnormalizer_samples = 100\n"
      "[inner]\ntype = \"test_gaussian_fit\"\nmin_rows = 150\n");
  EXPECT_NE(m.find("inner.min_rows"), std::string::npos) << m;
  EXPECT_NE(m.find("in cluster 1 of 2, which has 100 training"), std::string::npos) << m;
}

TEST(ClusterMixture, ExactlyNormalisedInnerModelsGiveANormalisedMixtureWithAnExactSampler) {
  // Inner gmm (the likelihood baselines know log Z = 0): no kernel, no base measure, no proposals.
  const Matrix X = two_blobs(600, 7), V = two_blobs(300, 8);
  const std::string toml =
      "type = \"cluster_mixture\"\nclusters = 2\n[inner]\ntype = \"gmm\"\ncomponents = [1, 2]\nrestarts = "
      "2\n";
  const Fitted a = fit(toml, X, V, 1, "", "");
  const Fitted b = fit(toml, X, V, 2, "", "");
  EXPECT_EQ(a.report.values, b.report.values);  // thread-independent
  EXPECT_EQ(a.report.values.at("cluster0.train_rows"), 400.0);
  for (const char* k :
       {"cluster0.log_normalizer", "cluster1.log_normalizer", "cluster0.log_normalizer_stderr"})
    EXPECT_EQ(a.report.values.at(k), 0.0) << k;
  EXPECT_EQ(a.report.values.count("cluster0.normalizer_ess"), 0u);  // nothing was importance-sampled
  const Model& m = *a.model;  // the plugin's model behind the registry's guard
  ASSERT_TRUE(m.log_normalizer().has_value());
  EXPECT_EQ(*m.log_normalizer(), 0.0);
  EXPECT_EQ(m.base_measure(), nullptr);
  EXPECT_FALSE(m.log_ratio_lower_bound().has_value());
  const FacetSet f = m.facets();
  EXPECT_TRUE(f.contains(
      {Facet::LogDensity, Facet::NormalizedDensity, Facet::Score, Facet::Laplacian, Facet::Sampler}))
      << f.text();
  EXPECT_FALSE(f.has(Facet::BaseMeasureRatio));
  EXPECT_TRUE(test::contains(m.describe(), "exactly normalised")) << m.describe();
  // Normalised: the blobs sit at (−4, 0) and (5, 1) with standard deviations <= 1, inside [−14, 14]².
  EXPECT_NEAR(integrate_2d([&](const Matrix& P) { return m.log_unnormalized(P); }), 1.0, 1e-9);
  expect_derivatives_match(m, random_rows(8, 3.0, 5), "gmm mixture");

  // Its sampler against grid-inversion draws from its density (tests/support/exact_sampler_check.hpp:
  // at most 3 of 10 repetitions at α = 0.05 reject), on [−10, 10]² (mass outside below 1e-9).
  const test::GridSampler grid(m, 10.0);
  EXPECT_LE(test::sampler_rejections(m, grid, 300, 40), 3);
  // The share of draws from the second blob (x > 0.5) is its weight 200/600 within 4 standard errors.
  RandomStream rng(41, "share");
  const Index n = 20000;
  const Matrix S = m.sample(n, rng);
  const double share = static_cast<double>((S.col(0).array() > 0.5).count()) / static_cast<double>(n);
  const double w = a.report.values.at("cluster1.weight");
  EXPECT_NEAR(w, 200.0 / 600.0, 1e-15);
  EXPECT_NEAR(share, w, 4 * std::sqrt(w * (1 - w) / static_cast<double>(n)));
  // Draws are i.i.d. rows, not grouped by component: both blobs appear among the first 20 rows.
  EXPECT_TRUE((S.topRows(20).col(0).array() > 0.5).any() && (S.topRows(20).col(0).array() < 0.5).any());

  // Reloads bitwise, exact sampler included.
  fs::path dir = test::temp_dir("cm-exact") / "model";
  save_model(m, dir);
  ModelPtr r = load_model(dir, test::plugin_registry());
  const Matrix P = random_rows(50, 3.0, 6);
  EXPECT_EQ(r->log_unnormalized(P), m.log_unnormalized(P));
  EXPECT_EQ(r->score(P), m.score(P));
  EXPECT_EQ(r->log_normalizer(), m.log_normalizer());
  EXPECT_EQ(r->describe(), m.describe());
  RandomStream r1(42, "reload"), r2(42, "reload");
  EXPECT_EQ(r->sample(30, r1), m.sample(30, r2));
}

TEST(ClusterMixture, APowerCheckOfTheExactSamplerCheck) {
  // The sampler check of the previous test can fail, on the error a mixture is prone to: wrong weights.
  // Draws with the blobs at 1/2 each instead of 2/3 and 1/3 are rejected in at least 8 of 10
  // repetitions.
  const Matrix X = two_blobs(600, 7), V = two_blobs(300, 8);
  const Fitted a =
      fit("type = \"cluster_mixture\"\nclusters = 2\n[inner]\ntype = \"gaussian_fit\"\n", X, V, 1, "", "");
  const auto even_weights = [&](RandomStream& rng) {
    const Matrix draws = a.model->sample(2000, rng);
    Matrix even(300, 2);
    Index first = 0, second = 150;
    for (Index i = 0; i < draws.rows() && (first < 150 || second < 300); ++i) {
      if (draws(i, 0) < 0.5 && first < 150) even.row(first++) = draws.row(i);
      if (draws(i, 0) >= 0.5 && second < 300) even.row(second++) = draws.row(i);
    }
    EXPECT_EQ(first + second, 450);  // 2000 draws hold 150 of each blob
    return even;
  };
  EXPECT_GE(test::rejections_against_grid(even_weights, test::GridSampler(*a.model, 10.0), 300, 43, 300), 8);
}

TEST(ClusterMixture, PartsMustMatchWhatTheInnerEstimatorUses) {
  const Matrix X = two_blobs(300, 3);
  auto message = [&](const std::string& toml, const std::string& base,
                     const std::string& kernel) -> std::string {
    try {
      fit(toml, X, Matrix(0, 2), 1, base, kernel);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no ConfigError";
  };
  const std::string gmm = "type = \"cluster_mixture\"\nclusters = 2\n[inner]\ntype = \"gaussian_fit\"\n";
  const std::string lite = "type = \"cluster_mixture\"\nclusters = 2\n[inner]\ntype = \"lite\"\n";
  std::string m = message(gmm, "", "type = \"gaussian\"\nsigma = 1.0");
  EXPECT_TRUE(test::contains(m, "inner.type")) << m;
  EXPECT_TRUE(test::contains(m, "uses no kernel")) << m;
  m = message(gmm, "type = \"gaussian\"\nstd = 3.0", "");
  EXPECT_TRUE(test::contains(m, "uses no base_measure")) << m;
  m = message(lite, "type = \"gaussian\"\nstd = 3.0", "");
  EXPECT_TRUE(test::contains(m, "uses a kernel: give the model a [model.kernel] table")) << m;
  m = message(lite, "", "type = \"gaussian\"\nsigma = 1.0");
  EXPECT_TRUE(test::contains(m, "uses a base_measure")) << m;
}

// ------------------------------------------------------------------------------------------------
// Through the kef command.

// The pipelines' data and the head of their one model, `mix`, a cluster_mixture.
const std::string kMorMixtureHead = test::PipelineText()
      .seed(4)
      .data("type = \"synthetic/mor\"\nn = 1600\nsplit = { test = 300, validation = 300 }")
      .model("name = \"mix\"\n[model.estimator]\ntype = \"cluster_mixture\"")
      .str();

std::string mor_pipeline(const std::string& estimator) {
  return kMorMixtureHead + R"(clusters = 2
normalizer_samples = 20000
)" + estimator +
         R"(
[model.kernel]
type = "gaussian"
sigma = 0.6
[model.base_measure]
type = "gaussian"
std = 4.0
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "log_likelihood"
samples = 20000
bias_bound = false
)";
}

int run_kef(const std::string& text, const fs::path& dir, std::string* out, const std::string& extra = "") {
  fs::path cfg = dir / "p.toml";
  std::ofstream(cfg) << text;
  return test::run_command(test::kef_executable() + " run " + cfg.string() + " --quiet --output " +
                               (dir / "out").string() + " " + extra,
                           out);
}

void check_pipeline(const std::string& inner, const std::string& tag) {
  fs::path dir = test::temp_dir("cm-" + tag);
  std::string out;
  ASSERT_EQ(run_kef(mor_pipeline(inner), dir, &out), 0) << out;
  std::ifstream in(dir / "out" / "results.json");
  const auto j = nlohmann::json::parse(in);
  const auto& fit = j["models"]["mix"]["fit"];
  const auto& metrics = j["models"]["mix"]["metrics"];
  ASSERT_TRUE(fit.contains("cluster1.log_normalizer")) << fit.dump();
  EXPECT_EQ(fit["cluster0.train_rows"].get<double>() + fit["cluster1.train_rows"].get<double>(), 1000.0);
  EXPECT_EQ(fit["cluster0.validation_rows"].get<double>() + fit["cluster1.validation_rows"].get<double>(),
            300.0);
  // The evaluator normalises the mixture once more with fresh proposals from Σ w_k q0_k: its log Ẑ
  // is log Σ_k w_k Z_k/Ẑ_k ≈ −Σ_k w_k (log Ẑ_k − log Z_k), which has standard deviation
  // sqrt(Σ w_k² se_k²), plus its own standard error; 4 of the combined errors bound it.
  double var = std::pow(metrics["log_normalizer_stderr"].get<double>(), 2);
  for (int k = 0; k < 2; ++k) {
    const std::string p = "cluster" + std::to_string(k) + ".";
    var += std::pow(fit[p + "weight"].get<double>() * fit[p + "log_normalizer_stderr"].get<double>(), 2);
  }
  EXPECT_LT(std::abs(metrics["log_normalizer"].get<double>()), 4 * std::sqrt(var)) << metrics.dump();
  EXPECT_TRUE(std::isfinite(metrics["score_matching_loss"].get<double>()));

  // The saved model reloads, and `kef score` on it gives bitwise the values of the in-process reload.
  const fs::path model_dir = dir / "out" / "models" / "mix";
  ModelPtr m = load_model(model_dir, test::plugin_registry());
  const Matrix P = random_rows(40, 3.0, 9);
  write_npy(dir / "probe.npy", P);
  ASSERT_EQ(test::run_command(test::kef_executable() + " score " + model_dir.string() + " --data " +
                                  (dir / "probe.npy").string() + " --out " + (dir / "scores.npy").string(),
                              &out),
            0)
      << out;
  const Matrix S = read_npy(dir / "scores.npy");
  ASSERT_EQ(S.rows(), 40);
  EXPECT_EQ(Vector(S.col(0)), m->log_unnormalized(P));
  EXPECT_EQ(Matrix(S.rightCols(2)), m->score(P));
}

TEST(ClusterMixture, PipelineOnMixtureOfRingsWithInnerLite) {
  check_pipeline("[model.estimator.inner]\ntype = \"lite\"\ninducing_points = 60\n", "lite");
}

TEST(ClusterMixture, PipelineOnMixtureOfRingsWithInnerDkef) {
  check_pipeline(R"([model.estimator.inner]
type = "dkef"
inducing_points = 30
batch_fit = 40
batch_loss = 40
max_steps = 20
patience = 10
eval_every = 5
validation_fit_rows = 200
stage2_steps = 3
)",
                 "dkef");
}

TEST(ClusterMixture, PipelineWithInnerMadeNeedsNoKernelAndIsNormalisedExactly) {
  // DKEF §3.1's mixtures for the likelihood baselines: [model.kernel] and [model.base_measure] absent.
  fs::path dir = test::temp_dir("cm-made");
  const std::string text = kMorMixtureHead + R"(clusters = 3
bandwidth = 0.3
[model.estimator.inner]
type = "made"
hidden_units = [10, 10]
max_epochs = 3
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "log_likelihood"
[[evaluate]]
type = "mmd"
samples = 200
)";
  std::string out;
  ASSERT_EQ(run_kef(text, dir, &out), 0) << out;
  const auto j = test::read_json(dir / "out" / "results.json");
  const auto& fit = j["models"]["mix"]["fit"];
  const auto& metrics = j["models"]["mix"]["metrics"];
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(fit["cluster" + std::to_string(k) + ".log_normalizer"].get<double>(), 0.0);
  // The evaluator takes the mixture's exact normaliser: nothing sampled, reliable.
  EXPECT_EQ(metrics["log_normalizer"].get<double>(), 0.0) << metrics.dump();
  EXPECT_EQ(metrics["reliable"].get<double>(), 1.0) << metrics.dump();
  EXPECT_TRUE(std::isfinite(metrics["log_likelihood"].get<double>()));
  EXPECT_TRUE(std::isfinite(metrics["score_matching_loss"].get<double>()));
  EXPECT_TRUE(metrics.contains("mmd2")) << metrics.dump();
  EXPECT_FALSE(metrics.contains("hmc_acceptance")) << metrics.dump();  // the exact sampler, not HMC
  // The saved model records that its normalisers are exact, and `kef sample` draws from it exactly.
  const fs::path model_dir = dir / "out" / "models" / "mix";
  std::ifstream manifest(model_dir / "model.toml");
  const std::string toml((std::istreambuf_iterator<char>(manifest)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(test::contains(toml, "normalizer_proposal = 'exact'")) << toml;
  ASSERT_EQ(test::run_command(test::kef_executable() + " sample " + model_dir.string() + " -n 50 --out " +
                                  (dir / "draws.npy").string(),
                              &out),
            0)
      << out;
  EXPECT_EQ(read_npy(dir / "draws.npy").rows(), 50);
}

TEST(ClusterMixture, BadInputIsExitStatus2NamingTheKey) {
  struct Case {
    std::string from, to, expect;
  } cases[] = {
      {"clusters = 2", "clusters = 0", "model[0].estimator.clusters"},
      {"clusters = 2", "clusters = 5000", "only 1000 training rows"},
      {"type = \"lite\"\n", "type = \"no_such_estimator\"\n", "model[0].estimator.inner"},
      {"inducing_points = 60", "inducing_pointz = 60", "model[0].estimator.inner.inducing_pointz"},
      {"inducing_points = 60", "inducing_points = 2000", "model[0].estimator.inner.inducing_points"},
      // Each cluster has fewer than 700 of the 1000 rows: the lite fit fails in the first one.
      {"inducing_points = 60", "inducing_points = 700", "(in cluster "},
      {"clusters = 2", "clusters = 2\nmin_cluster_size = 600", "min_cluster_size"},
      {"[model.estimator.inner]\ntype = \"lite\"\ninducing_points = 60\n", "",
       "missing required key `inner`"},
      // The parts must match what the inner estimator uses.
      {"type = \"lite\"\ninducing_points = 60\n", "type = \"gaussian_fit\"\n", "uses no kernel"},
      {"[model.kernel]\ntype = \"gaussian\"\nsigma = 0.6\n", "", "uses a kernel"},
  };
  const std::string inner = "[model.estimator.inner]\ntype = \"lite\"\ninducing_points = 60\n";
  for (const auto& c : cases) {
    fs::path dir = test::temp_dir("cm-bad");
    std::string text = mor_pipeline(inner);
    const auto pos = text.find(c.from);
    ASSERT_NE(pos, std::string::npos) << c.from;
    text.replace(pos, c.from.size(), c.to);
    std::string out;
    EXPECT_EQ(run_kef(text, dir, &out), 2) << c.to << ": " << out;
    EXPECT_NE(out.find(c.expect), std::string::npos) << c.to << ": " << out;
    EXPECT_FALSE(fs::exists(dir / "out")) << c.to;
  }
}

}  // namespace
}  // namespace kef
