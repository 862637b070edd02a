// ε-neighbourhood KDE (plugins/eps_kde): the density against the direct formula (neighbours found by
// a plain scan, Gaussians summed in linear space), the marginal fallback when no neighbour is within
// ε, normalisation in y, the score and Laplacian against central differences, draws, cross-validation
// against a brute-force twin, save/reload and bad keys.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "eps_kde_estimator.hpp"
#include "eps_kde_model.hpp"
#include "kef/context.hpp"
#include "kef/cross_validation.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/model_archive.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using eps_kde::EpsKdeModel;

double gauss(const Vector& y, const Vector& mean, double s) {
  const double d = static_cast<double>(y.size());
  return std::exp(-(y - mean).squaredNorm() / (2 * s * s)) / std::pow(2 * std::numbers::pi * s * s, d / 2);
}

// The definition: mean of N(y; y_i, σ²I) over {i : ‖x − x_i‖ ≤ ε}, or over every i when that set is empty.
double direct(const Matrix& TX, const Matrix& TY, const Vector& x, const Vector& y, double eps, double s) {
  double total = 0.0;
  int count = 0;
  for (Index i = 0; i < TX.rows(); ++i)
    if ((TX.row(i).transpose() - x).norm() <= eps) {
      total += gauss(y, TY.row(i).transpose(), s);
      ++count;
    }
  if (count == 0)
    for (Index i = 0; i < TX.rows(); ++i) {
      total += gauss(y, TY.row(i).transpose(), s);
      ++count;
    }
  return std::log(total / count);
}

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

TEST(EpsKde, DensityIsTheDirectFormulaIncludingTheNoNeighbourFallback) {
  RandomStream rng(1, "direct");
  const Matrix TX = rng.normal_matrix(40, 2), TY = rng.normal_matrix(40, 2);
  const double eps = 0.6, s = 0.4;
  const EpsKdeModel m(TX, TY, eps, s);
  Matrix X = rng.normal_matrix(12, 2);
  X.row(11) << 9.0, 9.0;  // far from every training input: no neighbour
  const Matrix Y = rng.normal_matrix(12, 2);
  const Vector lp = m.log_unnormalized(X, Y);
  const std::vector<Index> counts = m.neighbour_counts(X);
  EXPECT_EQ(counts[11], 0);
  for (Index n = 0; n < 12; ++n)
    EXPECT_NEAR(lp[n], direct(TX, TY, X.row(n).transpose(), Y.row(n).transpose(), eps, s), 1e-12) << n;
  // The fallback is the marginal KDE of y: the same as an ε that covers every training input.
  const EpsKdeModel wide(TX, TY, 1e6, s);
  EXPECT_NEAR(lp[11], wide.log_unnormalized(X.bottomRows(1), Y.bottomRows(1))[0], 1e-12);
  EXPECT_EQ(*m.log_normalizer(X), Vector::Zero(12));
}

TEST(EpsKde, TheDensityIntegratesToOneInY) {
  const Matrix R = sine_rows(100, 2);
  const EpsKdeModel m(R.leftCols(1), R.rightCols(1), 0.4, 0.25);
  const int G = 6001;
  const double lo = -10.0, step = 20.0 / (G - 1);
  for (double x : {-2.0, 0.1, 2.9, 50.0}) {
    Matrix X = Matrix::Constant(G, 1, x), Y(G, 1);
    for (int g = 0; g < G; ++g) Y(g, 0) = lo + step * g;
    const Vector lp = m.log_unnormalized(X, Y);
    double total = 0.0;
    for (int g = 0; g < G; ++g) total += ((g == 0 || g == G - 1) ? 0.5 : 1.0) * step * std::exp(lp[g]);
    EXPECT_NEAR(total, 1.0, 1e-9) << "x = " << x;
  }
}

TEST(EpsKde, ScoreAndLaplacianMatchCentralDifferences) {
  RandomStream rng(3, "fd");
  const Matrix TX = rng.normal_matrix(30, 1), TY = rng.normal_matrix(30, 2);
  const EpsKdeModel m(TX, TY, 0.5, 0.7);
  Matrix X = rng.normal_matrix(6, 1);
  X(5, 0) = 20.0;  // the fallback too
  const Matrix Y = rng.normal_matrix(6, 2);
  Matrix s, lap;
  m.score_and_laplacian(X, Y, s, lap);
  const double h = 1e-4;
  for (Index d = 0; d < 2; ++d) {
    Matrix Yp = Y, Ym = Y;
    Yp.col(d).array() += h;
    Ym.col(d).array() -= h;
    const Vector fp = m.log_unnormalized(X, Yp), fm = m.log_unnormalized(X, Ym);
    const Matrix sp = m.score(X, Yp), sm = m.score(X, Ym);
    for (Index n = 0; n < 6; ++n) {
      EXPECT_NEAR(s(n, d), (fp[n] - fm[n]) / (2 * h), 1e-7 * (1 + std::abs(s(n, d))));
      EXPECT_NEAR(lap(n, d), (sp(n, d) - sm(n, d)) / (2 * h), 1e-6 * (1 + std::abs(lap(n, d))));
    }
  }
}

TEST(EpsKde, SamplesComeFromTheNeighbourhood) {
  // Two clusters of x with different y: draws at x near the first cluster have its y.
  Matrix TX(40, 1), TY(40, 1);
  for (Index i = 0; i < 40; ++i) {
    TX(i, 0) = i < 20 ? 0.01 * i : 5.0 + 0.01 * i;
    TY(i, 0) = i < 20 ? -3.0 : 3.0;
  }
  const EpsKdeModel m(TX, TY, 0.5, 0.1);
  const Index N = 20000;
  RandomStream rng(4, "draws");
  const Matrix Y = m.sample(Matrix::Constant(N, 1, 0.1), rng);
  EXPECT_NEAR(Y.mean(), -3.0, 4 * 0.1 / std::sqrt(static_cast<double>(N)));
  const Matrix far = m.sample(Matrix::Constant(N, 1, 100.0), rng);  // fallback: both clusters
  EXPECT_NEAR(far.mean(), 0.0, 4 * 3.0 / std::sqrt(static_cast<double>(N)));
}

FitReport fit(const Matrix& R, const std::string& keys, ModelPtr* out) {
  eps_kde::EpsKdeEstimator est(test::config_from(keys));
  FitReport report;
  Context context = Context(5, 1).child("model.m.fit");
  const Matrix empty(0, R.cols());
  FitInput in{R, empty, context, report, make_column_roles({1}, 2)};
  *out = est.fit(in);
  return report;
}

TEST(EpsKde, CrossValidationMaximisesTheHeldOutLikelihoodOfABruteForceTwin) {
  const Matrix R = sine_rows(120, 6);
  ModelPtr model;
  const FitReport report =
      fit(R, "epsilon_grid = [0.02, 0.1, 0.3, 1.0]\nbandwidth_grid = [0.05, 0.2, 0.8]", &model);
  const auto& m = dynamic_cast<const EpsKdeModel&>(*model);
  // The twin: the same folds (same stream), the direct formula per held-out pair.
  RandomStream fold_rng = Context(5, 1).child("model.m.fit").rng().derive("folds");
  const std::vector<Index> folds = random_folds(120, 5, fold_rng);
  const double median = median_pairwise_distance(R.leftCols(1));
  double best = -1e300, best_e = 0, best_s = 0;
  for (double g : {0.02, 0.1, 0.3, 1.0})
    for (double s : {0.05, 0.2, 0.8}) {
      double total = 0.0;
      for (Index k = 0; k < 5; ++k) {
        const auto tr = rows_outside_fold(folds, k), te = rows_in_fold(folds, k);
        const Matrix TX = gather_rows(R.leftCols(1), tr), TY = gather_rows(R.rightCols(1), tr);
        for (Index j : te)
          total += direct(TX, TY, R.row(j).head(1).transpose(), R.row(j).tail(1).transpose(), g * median, s);
      }
      if (total > best) {
        best = total;
        best_e = g * median;
        best_s = s;
      }
    }
  EXPECT_EQ(m.epsilon(), best_e);
  EXPECT_EQ(m.sigma(), best_s);
  EXPECT_NEAR(report.values.at("cv_log_likelihood"), best / 120.0, 1e-10);
}

TEST(EpsKde, SavedAndReloadedBitwise) {
  ModelPtr model;
  fit(sine_rows(80, 7), "", &model);
  const std::filesystem::path dir = test::temp_dir("eps-kde-save");
  ModelWriter w(dir / "m", "eps_kde");
  model->save(w);
  w.finish();
  const ModelPtr back = EpsKdeModel::load(ModelReader(dir / "m"), test::plugin_registry());
  const Matrix T = sine_rows(40, 8);
  const Matrix X = T.leftCols(1), Y = T.rightCols(1);
  EXPECT_EQ(back->conditional()->log_unnormalized(X, Y), model->conditional()->log_unnormalized(X, Y));
  EXPECT_EQ(back->conditional()->score(X, Y), model->conditional()->score(X, Y));
}

TEST(EpsKde, BadKeysNameTheKey) {
  std::string msg =
      test::message_of<ConfigError>([] { eps_kde::EpsKdeEstimator(test::config_from("epsilon = 0.0")); });
  EXPECT_NE(msg.find("epsilon"), std::string::npos) << msg;
  msg = test::message_of<ConfigError>([] { eps_kde::EpsKdeEstimator(test::config_from("epsilon = -0.5")); });
  EXPECT_NE(msg.find("epsilon"), std::string::npos) << msg;
  msg = test::message_of<ConfigError>([] { eps_kde::EpsKdeEstimator(test::config_from("bandwidth = 0.0")); });
  EXPECT_NE(msg.find("bandwidth"), std::string::npos) << msg;
  msg = test::message_of<ConfigError>(
      [] { eps_kde::EpsKdeEstimator(test::config_from("bandwidth_grid = [1.0, -2.0]")); });
  EXPECT_NE(msg.find("bandwidth_grid"), std::string::npos) << msg;
  msg =
      test::message_of<ConfigError>([] { eps_kde::EpsKdeEstimator(test::config_from("epsilon_grid = []")); });
  EXPECT_NE(msg.find("epsilon_grid"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kef
