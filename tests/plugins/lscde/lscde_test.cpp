// LSCDE (plugins/lscde): Ĥ and ĥ against brute-force numerical integration over y, the coefficients
// against the linear system they solve, p̂(y | x) integrating to 1 in y, the score and its Laplacian
// against central differences, exact samples against the mixture's moments, and save/reload.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "lscde_estimator.hpp"
#include "lscde_model.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using lscde::LscdeModel;

double phi(const Matrix& X, Index i, const Vector& y, const Matrix& U, const Matrix& V, Index l, double s) {
  return std::exp(-(X.row(i) - U.row(l)).squaredNorm() / (2 * s * s)) *
         std::exp(-(y.transpose() - V.row(l)).squaredNorm() / (2 * s * s));
}

// y = sin(x) + (0.2 + 0.1 |x|) ξ: heteroscedastic, x ~ U(−3, 3).
Matrix sine_rows(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "sine");
  Matrix R(n, 2);
  for (Index i = 0; i < n; ++i) {
    const double x = -3.0 + 6.0 * rng.uniform();
    R(i, 0) = x;
    R(i, 1) = std::sin(x) + (0.2 + 0.1 * std::abs(x)) * rng.normal();
  }
  return R;
}

TEST(Lscde, DesignMatchesNumericalIntegrationInOneDimensionalY) {
  RandomStream rng(3, "design");
  const Matrix X = rng.normal_matrix(25, 2), Y = rng.normal_matrix(25, 1);
  const Matrix U = rng.normal_matrix(6, 2), V = rng.normal_matrix(6, 1);
  const double s = 0.7;
  const lscde::LscdeDesign d = lscde::lscde_design(X, Y, U, V, s);
  // Brute force: Ĥ by the trapezoid rule on [−15, 15] (the integrand is negligible beyond), ĥ by loops.
  const int G = 6001;
  const double lo = -15.0, step = 30.0 / (G - 1);
  for (Index l = 0; l < 6; ++l) {
    double h = 0.0;
    for (Index i = 0; i < 25; ++i) h += phi(X, i, Y.row(i).transpose(), U, V, l, s);
    EXPECT_NEAR(d.h[l], h / 25.0, 1e-14);
    for (Index m = 0; m < 6; ++m) {
      double total = 0.0;
      for (Index i = 0; i < 25; ++i)
        for (int g = 0; g < G; ++g) {
          const Vector y = Vector::Constant(1, lo + step * g);
          const double w = (g == 0 || g == G - 1) ? 0.5 : 1.0;
          total += w * step * phi(X, i, y, U, V, l, s) * phi(X, i, y, U, V, m, s);
        }
      EXPECT_NEAR(d.H(l, m), total / 25.0, 1e-10) << l << "," << m;
    }
  }
}

TEST(Lscde, DesignMatchesNumericalIntegrationInTwoDimensionalY) {
  RandomStream rng(4, "design2");
  const Matrix X = rng.normal_matrix(5, 1), Y = rng.normal_matrix(5, 2);
  const Matrix U = rng.normal_matrix(3, 1), V = rng.normal_matrix(3, 2);
  const double s = 0.9;
  const lscde::LscdeDesign d = lscde::lscde_design(X, Y, U, V, s);
  const int G = 401;
  const double lo = -10.0, step = 20.0 / (G - 1);
  for (Index l = 0; l < 3; ++l)
    for (Index m = 0; m < 3; ++m) {
      double total = 0.0;
      for (Index i = 0; i < 5; ++i)
        for (int a = 0; a < G; ++a)
          for (int c = 0; c < G; ++c) {
            Vector y(2);
            y << lo + step * a, lo + step * c;
            const double w = ((a == 0 || a == G - 1) ? 0.5 : 1.0) * ((c == 0 || c == G - 1) ? 0.5 : 1.0);
            total += w * step * step * phi(X, i, y, U, V, l, s) * phi(X, i, y, U, V, m, s);
          }
      EXPECT_NEAR(d.H(l, m), total / 5.0, 1e-9) << l << "," << m;
    }
}

TEST(Lscde, CoefficientsSolveTheRidgeSystemAndClipNegatives) {
  RandomStream rng(5, "coef");
  const Matrix R = sine_rows(80, 5);
  const Matrix U = R.topRows(20).leftCols(1), V = R.topRows(20).rightCols(1);
  const lscde::LscdeDesign d = lscde::lscde_design(R.leftCols(1), R.rightCols(1), U, V, 0.3);
  const double lambda = 1e-3;
  const Vector raw = (d.H + lambda * Matrix::Identity(20, 20)).fullPivLu().solve(d.h);
  const Vector alpha = lscde::lscde_coefficients(d, lambda);
  for (Index l = 0; l < 20; ++l) EXPECT_NEAR(alpha[l], std::max(0.0, raw[l]), 1e-9 * (1 + std::abs(raw[l])));
  EXPECT_NEAR(lscde::lscde_criterion(d, alpha), 0.5 * alpha.dot(d.H * alpha) - d.h.dot(alpha), 1e-15);
}

LscdeModel fitted_model(const Matrix& R, const std::string& keys, FitReport* report_out = nullptr) {
  const Config cfg = test::config_from(keys);
  lscde::LscdeEstimator est(cfg);
  FitReport report;
  Context context = Context(7, 1).child("model.m.fit");
  const Matrix empty(0, R.cols());
  FitInput in{R, empty, context, report, make_column_roles({1}, 2)};
  const ModelPtr m = est.fit(in);
  if (report_out) *report_out = report;
  return dynamic_cast<const LscdeModel&>(*m);
}

TEST(Lscde, TheDensityIntegratesToOneInY) {
  FitReport report;
  const LscdeModel m = fitted_model(sine_rows(150, 6), "", &report);
  EXPECT_GT(report.values.at("positive_coefficients"), 0);
  const int G = 8001;
  const double lo = -12.0, step = 24.0 / (G - 1);
  for (double x : {-2.5, -0.3, 0.0, 1.7, 4.0}) {
    Matrix X = Matrix::Constant(G, 1, x), Y(G, 1);
    for (int g = 0; g < G; ++g) Y(g, 0) = lo + step * g;
    const Vector lu = m.log_unnormalized(X, Y);
    const double lz = (*m.log_normalizer(X.topRows(1)))[0];
    double total = 0.0;
    for (int g = 0; g < G; ++g) total += ((g == 0 || g == G - 1) ? 0.5 : 1.0) * step * std::exp(lu[g] - lz);
    EXPECT_NEAR(total, 1.0, 1e-9) << "x = " << x;
  }
}

TEST(Lscde, ScoreAndLaplacianMatchCentralDifferences) {
  RandomStream rng(8, "fd");
  const Matrix U = rng.normal_matrix(7, 2), V = rng.normal_matrix(7, 2);
  Vector alpha(7);
  alpha << 0.3, 0.0, 1.2, 0.7, 0.05, 2.0, 0.4;  // one zero: dropped
  const LscdeModel m(U, V, alpha, 0.8);
  EXPECT_EQ(m.alpha().size(), 6);
  const Matrix X = rng.normal_matrix(5, 2), Y = rng.normal_matrix(5, 2);
  Matrix s, lap;
  m.score_and_laplacian(X, Y, s, lap);
  EXPECT_EQ(m.score(X, Y), s);
  const double h = 1e-4;
  for (Index d = 0; d < 2; ++d) {
    Matrix Yp = Y, Ym = Y;
    Yp.col(d).array() += h;
    Ym.col(d).array() -= h;
    const Vector fp = m.log_unnormalized(X, Yp), fm = m.log_unnormalized(X, Ym),
                 f0 = m.log_unnormalized(X, Y);
    Matrix sp, sm, dummy;
    m.score_and_laplacian(X, Yp, sp, dummy);
    m.score_and_laplacian(X, Ym, sm, dummy);
    for (Index n = 0; n < 5; ++n) {
      EXPECT_NEAR(s(n, d), (fp[n] - fm[n]) / (2 * h), 1e-7 * (1 + std::abs(s(n, d))));
      EXPECT_NEAR(lap(n, d), (sp(n, d) - sm(n, d)) / (2 * h), 1e-6 * (1 + std::abs(lap(n, d))));
      EXPECT_NEAR(lap(n, d), (fp[n] - 2 * f0[n] + fm[n]) / (h * h), 1e-4 * (1 + std::abs(lap(n, d))));
    }
  }
}

TEST(Lscde, LogDensityIsTheMixtureFormula) {
  RandomStream rng(9, "formula");
  const Matrix U = rng.normal_matrix(4, 1), V = rng.normal_matrix(4, 1);
  const Vector alpha = Vector::LinSpaced(4, 0.5, 2.0);
  const double s = 0.6;
  const LscdeModel m(U, V, alpha, s);
  const Matrix X = rng.normal_matrix(6, 1), Y = rng.normal_matrix(6, 1);
  const Vector lu = m.log_unnormalized(X, Y), lz = *m.log_normalizer(X);
  for (Index n = 0; n < 6; ++n) {
    double num = 0.0, den = 0.0;
    for (Index l = 0; l < 4; ++l) {
      num += alpha[l] * phi(X, n, Y.row(n).transpose(), U, V, l, s);
      den += alpha[l] * std::exp(-std::pow(X(n, 0) - U(l, 0), 2) / (2 * s * s)) *
             std::sqrt(2 * std::numbers::pi) * s;
    }
    EXPECT_NEAR(lu[n], std::log(num), 1e-12);
    EXPECT_NEAR(lz[n], std::log(den), 1e-12);
  }
  // Far from every centre the log density stays finite (log space), where the plain sum underflows.
  const Matrix far = Matrix::Constant(1, 1, 60.0);
  EXPECT_TRUE(std::isfinite(m.log_unnormalized(far, far)[0]));
  EXPECT_TRUE(std::isfinite((*m.log_normalizer(far))[0]));
}

TEST(Lscde, SamplesHaveTheMixtureMoments) {
  RandomStream rng(10, "moments");
  const Matrix U = rng.normal_matrix(5, 1), V = 2.0 * rng.normal_matrix(5, 1);
  const Vector alpha = Vector::LinSpaced(5, 0.2, 1.0);
  const double s = 0.5;
  const LscdeModel m(U, V, alpha, s);
  const Index N = 40000;
  const Matrix X = Matrix::Constant(N, 1, 0.3);
  RandomStream draw(11, "draws");
  const Matrix Y = m.sample(X, draw);
  Vector w(5);
  for (Index l = 0; l < 5; ++l) w[l] = alpha[l] * std::exp(-std::pow(0.3 - U(l, 0), 2) / (2 * s * s));
  w /= w.sum();
  const double mean = w.dot(V.col(0));
  const double second = w.dot(V.col(0).cwiseAbs2()) + s * s;
  const double var = second - mean * mean;
  const double sample_mean = Y.mean();
  const double sample_var = (Y.array() - sample_mean).square().mean();
  EXPECT_NEAR(sample_mean, mean, 4.0 * std::sqrt(var / N));
  EXPECT_NEAR(sample_var, var, 0.05 * var);
}

TEST(Lscde, SavedAndReloadedBitwise) {
  const LscdeModel m = fitted_model(sine_rows(120, 12), "basis = 40");
  const std::filesystem::path dir = test::temp_dir("lscde-save");
  ModelWriter w(dir / "m", "lscde");
  m.save(w);
  w.finish();
  const ModelReader r(dir / "m");
  const ModelPtr back = LscdeModel::load(r, test::plugin_registry());
  const Matrix R = sine_rows(50, 13);
  const Matrix X = R.leftCols(1), Y = R.rightCols(1);
  const ConditionalModel& c = *back->conditional();
  EXPECT_EQ(c.log_unnormalized(X, Y), m.log_unnormalized(X, Y));
  EXPECT_EQ(*c.log_normalizer(X), *m.log_normalizer(X));
  EXPECT_EQ(c.score(X, Y), m.score(X, Y));
  RandomStream a(1, "s"), b(1, "s");
  EXPECT_EQ(c.sample(X, a), m.sample(X, b));
}

TEST(Lscde, CrossValidationPrefersAReasonableWidthAndIsSeeded) {
  FitReport report;
  const Matrix R = sine_rows(200, 14);
  const LscdeModel m1 = fitted_model(R, "", &report);
  const LscdeModel m2 = fitted_model(R, "");
  EXPECT_EQ(m1.alpha(), m2.alpha());
  // The noise sd is 0.2–0.5 and sin varies on a scale of 1: a σ of 10^1.5 or 10^−1.5 would be absurd.
  EXPECT_GT(m1.sigma(), 0.05);
  EXPECT_LT(m1.sigma(), 2.0);
  // The held-out log-likelihood of the fit beats the best single Gaussian fitted to y alone.
  const Matrix T = sine_rows(400, 15);
  const Matrix X = T.leftCols(1), Y = T.rightCols(1);
  const double ll = (m1.log_unnormalized(X, Y) - *m1.log_normalizer(X)).mean();
  const double mu = R.col(1).mean(), sd = std::sqrt((R.col(1).array() - mu).square().mean());
  const double gauss =
      (-0.5 * ((Y.array() - mu) / sd).square() - std::log(sd) - 0.5 * std::log(2 * std::numbers::pi)).mean();
  EXPECT_GT(ll, gauss + 0.3) << "lscde " << ll << ", marginal Gaussian " << gauss;
}

TEST(Lscde, BadKeysNameTheKey) {
  std::string msg =
      test::message_of<ConfigError>([] { lscde::LscdeEstimator(test::config_from("sigma = -1.0")); });
  EXPECT_NE(msg.find("sigma"), std::string::npos) << msg;
  msg = test::message_of<ConfigError>(
      [] { lscde::LscdeEstimator(test::config_from("sigma_grid = [0.5, 0.0]")); });
  EXPECT_NE(msg.find("sigma_grid"), std::string::npos) << msg;
  msg = test::message_of<ConfigError>([] { lscde::LscdeEstimator(test::config_from("lambda = 0.0")); });
  EXPECT_NE(msg.find("lambda"), std::string::npos) << msg;
  const lscde::LscdeEstimator est(test::config_from("basis = 50"));
  msg = test::message_of<ConfigError>([&] { est.check(DataShape{2, 40, 0, 10, false, 1}); });
  EXPECT_NE(msg.find("basis"), std::string::npos) << msg;
  EXPECT_NE(msg.find("40"), std::string::npos) << msg;
  // Without `basis` the default adapts to a small training split: min(100, n).
  FitReport report;
  fitted_model(sine_rows(30, 16), "", &report);
  EXPECT_EQ(report.values.at("basis"), 30.0);
}

}  // namespace
}  // namespace kef
