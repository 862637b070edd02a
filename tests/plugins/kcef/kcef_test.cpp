// KCEF (plugins/kcef, docs/math.md §17.4): the system's entries against central differences of the
// product kernel, the model's score and Laplacian against central differences of its log density, the
// closed form against a brute-force minimisation of the empirical objective over a wider family, a
// heteroscedastic sine with a known p(y | x), save/reload, thread-count independence through the
// pipeline and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "kcef_estimator.hpp"
#include "kcef_model.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/pipeline.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using kcef::KcefModel;
using kcef::KcefParameters;
using Json = nlohmann::json;

// k((x, y), (x', y')) written out from its definition, for the finite differences.
double kernel(const Vector& x, const Vector& y, const Vector& x2, const Vector& y2, const Vector& sx,
              double sy) {
  double t = 0.0;
  for (Index d = 0; d < x.size(); ++d) t += std::pow((x[d] - x2[d]) / sx[d], 2);
  return std::exp(-0.5 * t - 0.5 * (y - y2).squaredNorm() / (sy * sy));
}

// y = sin(x) + (0.2 + 0.1 |x|) ξ, x ~ U(−3, 3).
double noise_sd(double x) { return 0.2 + 0.1 * std::abs(x); }
Matrix sine_rows(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "sine");
  Matrix R(n, 2);
  for (Index i = 0; i < n; ++i) {
    const double x = -3.0 + 6.0 * rng.uniform();
    R(i, 0) = x;
    R(i, 1) = std::sin(x) + noise_sd(x) * rng.normal();
  }
  return R;
}

KcefParameters random_parameters(Index n, Index dx, Index dy, std::uint64_t seed) {
  RandomStream rng(seed, "params");
  KcefParameters p;
  p.basis_inputs = rng.normal_matrix(n, dx);
  p.basis_targets = rng.normal_matrix(n, dy);
  p.coefficients = rng.normal_matrix(n, dy);
  p.xi_weight = -0.3;
  p.sigma_x = Vector::LinSpaced(dx, 0.8, 1.5);
  p.sigma_y = 0.9;
  p.q0_sd = 2.0;
  return p;
}

TEST(Kcef, SystemEntriesAreMixedYDerivativesOfTheKernel) {
  RandomStream rng(1, "system");
  const Index n = 6, dx = 2, dy = 2;
  const Matrix X = rng.normal_matrix(n, dx), Y = rng.normal_matrix(n, dy);
  Vector sx(2);
  sx << 0.7, 1.3;
  // Steps: 1e-4 for the second differences (truncation and rounding ~1e-8), 1e-3 for the third
  // (rounding grows as h⁻³).
  const double sy = 0.8, q0 = 2.0, h1 = 1e-4, h = 1e-3;
  const kcef::KcefSystem sys = kcef::kcef_system(X, Y, sx, sy, q0);
  // k with y-perturbations of the first and second argument.
  const auto k = [&](Index a, Index b, Index i, double di, Index j, double dj) {
    Vector ya = Y.row(a).transpose(), yb = Y.row(b).transpose();
    ya[i] += di;
    yb[j] += dj;
    return kernel(X.row(a).transpose(), ya, X.row(b).transpose(), yb, sx, sy);
  };
  // ∂_(1,i) ∂_(2,j) k(z_a, z_b).
  const auto d11 = [&](Index a, Index b, Index i, Index j) {
    return (k(a, b, i, h1, j, h1) - k(a, b, i, h1, j, -h1) - k(a, b, i, -h1, j, h1) +
            k(a, b, i, -h1, j, -h1)) /
           (4 * h1 * h1);
  };
  // ∂_(1,j) ∂²_(2,i) k(z_b, z_a).
  const auto d12 = [&](Index b, Index a, Index j, Index i) {
    const auto second = [&](double dj) {
      return (k(b, a, j, dj, i, h) - 2 * k(b, a, j, dj, i, 0.0) + k(b, a, j, dj, i, -h)) / (h * h);
    };
    return (second(h) - second(-h)) / (2 * h);
  };
  for (Index a = 0; a < n; ++a)
    for (Index b = 0; b < n; ++b)
      for (Index i = 0; i < dy; ++i)
        for (Index j = 0; j < dy; ++j)
          EXPECT_NEAR(sys.G(i * n + a, j * n + b), d11(a, b, i, j), 1e-6) << a << b << i << j;
  for (Index b = 0; b < n; ++b)
    for (Index j = 0; j < dy; ++j) {
      double expected = 0.0;
      for (Index a = 0; a < n; ++a)
        for (Index i = 0; i < dy; ++i) expected += d12(b, a, j, i) + (-Y(a, i) / (q0 * q0)) * d11(b, a, j, i);
      EXPECT_NEAR(sys.h[j * n + b], expected / n, 2e-5) << b << j;
    }
}

TEST(Kcef, ScoreAndLaplacianMatchCentralDifferences) {
  const KcefModel m(random_parameters(9, 2, 2, 2));
  RandomStream rng(3, "query");
  const Matrix X = rng.normal_matrix(6, 2), Y = rng.normal_matrix(6, 2);
  Matrix s, lap;
  m.score_and_laplacian(X, Y, s, lap);
  EXPECT_EQ(m.score(X, Y), s);
  const Vector f0 = m.log_unnormalized(X, Y);
  const double h = 1e-4;
  for (Index d = 0; d < 2; ++d) {
    Matrix Yp = Y, Ym = Y;
    Yp.col(d).array() += h;
    Ym.col(d).array() -= h;
    const Vector fp = m.log_unnormalized(X, Yp), fm = m.log_unnormalized(X, Ym);
    const Matrix sp = m.score(X, Yp), sm = m.score(X, Ym);
    for (Index r = 0; r < 6; ++r) {
      EXPECT_NEAR(s(r, d), (fp[r] - fm[r]) / (2 * h), 1e-7 * (1 + std::abs(s(r, d))));
      EXPECT_NEAR(lap(r, d), (sp(r, d) - sm(r, d)) / (2 * h), 1e-7 * (1 + std::abs(lap(r, d))));
      EXPECT_NEAR(lap(r, d), (fp[r] - 2 * f0[r] + fm[r]) / (h * h), 1e-4 * (1 + std::abs(lap(r, d))));
    }
  }
  // The base measure alone: log N(y; 0, σ0² I).
  KcefParameters zero = random_parameters(9, 2, 2, 2);
  zero.coefficients.setZero();
  zero.xi_weight = 0.0;
  const Vector lq = KcefModel(zero).log_unnormalized(X, Y);
  for (Index r = 0; r < 6; ++r)
    EXPECT_NEAR(lq[r], -Y.row(r).squaredNorm() / 8.0 - 2 * std::log(2.0) - std::log(2 * std::numbers::pi),
                1e-14);
}

// The brute-force twin: the empirical objective (1/n) Σ_t Σ_j [∂²_j f + ½ (∂_j f)² + ∂_j log q0 ∂_j f](z_t)
// + (λ/2)‖f‖² minimised by a dense solve over f = Σ_(a,i) c_ai ∂_(y_i) k(z_a, ·) + Σ_a e_a Σ_i ∂²_(y_i)
// k(z_a, ·), a family with one ξ-weight per pair instead of the closed form's single e. Every atom is a
// one-pair KcefModel, its derivatives come from the model (checked above), and its RKHS inner products from
// the reproducing property: ⟨g, ∂_(y_i) k(z_t, ·)⟩ = ∂_(y_i) g(z_t), ⟨g, Σ_i ∂²_(y_i) k(z_t, ·)⟩ = Σ_i
// ∂²_(y_i) g(z_t).
TEST(Kcef, ClosedFormMinimisesTheEmpiricalObjectiveOverAWiderFamily) {
  RandomStream rng(4, "twin");
  const Index n = 10, dx = 1, dy = 2, A = n * dy + n;
  const Matrix X = rng.normal_matrix(n, dx), Y = rng.normal_matrix(n, dy);
  const Vector sx = Vector::Constant(1, 1.1);
  const double sy = 1.2, q0 = 2.0, lambda = 0.05;
  const KcefModel closed = kcef::kcef_solve(kcef::kcef_system(X, Y, sx, sy, q0), X, Y, sx, sy, q0, lambda);
  const auto atom = [&](Index index) {
    KcefParameters p;
    p.sigma_x = sx;
    p.sigma_y = sy;
    p.q0_sd = q0;
    p.coefficients = Matrix::Zero(1, dy);
    const Index a = index < n * dy ? index % n : index - n * dy;
    p.basis_inputs = X.row(a);
    p.basis_targets = Y.row(a);
    if (index < n * dy)
      p.coefficients(0, index / n) = 1.0;
    else
      p.xi_weight = 1.0;
    return KcefModel(p);
  };
  KcefParameters none;
  none.basis_inputs = X.topRows(1);
  none.basis_targets = Y.topRows(1);
  none.coefficients = Matrix::Zero(1, dy);
  none.sigma_x = sx;
  none.sigma_y = sy;
  none.q0_sd = q0;
  Matrix s0, l0;
  KcefModel(none).score_and_laplacian(X, Y, s0, l0);
  // D1[(t, j), atom] = ∂_j atom(z_t), D2 the second derivative; f's part only (the q0 terms removed).
  Matrix D1(n * dy, A), D2(n * dy, A);
  for (Index c = 0; c < A; ++c) {
    Matrix s, l;
    atom(c).score_and_laplacian(X, Y, s, l);
    s -= s0;
    l -= l0;
    for (Index j = 0; j < dy; ++j)
      for (Index t = 0; t < n; ++t) {
        D1(j * n + t, c) = s(t, j);
        D2(j * n + t, c) = l(t, j);
      }
  }
  Matrix K(A, A);  // ⟨atom_c, atom_c'⟩ by the reproducing property
  for (Index c = 0; c < n * dy; ++c) K.row(c) = D1.row(c);
  for (Index a = 0; a < n; ++a) {
    K.row(n * dy + a).setZero();
    for (Index j = 0; j < dy; ++j) K.row(n * dy + a) += D2.row(j * n + a);
  }
  EXPECT_LT((K - K.transpose()).cwiseAbs().maxCoeff(), 1e-10 * K.cwiseAbs().maxCoeff());
  const Matrix Ks = 0.5 * (K + K.transpose());
  Vector q(n * dy);
  for (Index j = 0; j < dy; ++j)
    for (Index t = 0; t < n; ++t) q[j * n + t] = -Y(t, j) / (q0 * q0);
  const Matrix H = D1.transpose() * D1 / n + lambda * Ks;
  const Vector b = (D2.transpose() * Vector::Ones(n * dy) + D1.transpose() * q) / n;
  const Vector theta = H.ldlt().solve(-b);
  const auto objective = [&](const Vector& th) {
    const Vector g = D1 * th, l = D2 * th;
    return (l.sum() + 0.5 * g.squaredNorm() + q.dot(g)) / n + 0.5 * lambda * th.dot(Ks * th);
  };
  // The closed form in the same coordinates: c as fitted, e_a = e for every pair.
  Vector closed_theta(A);
  for (Index i = 0; i < dy; ++i)
    for (Index a = 0; a < n; ++a) closed_theta[i * n + a] = closed.parameters().coefficients(a, i);
  closed_theta.tail(n).setConstant(closed.parameters().xi_weight);
  EXPECT_NEAR(closed.parameters().xi_weight, -1.0 / (n * lambda), 1e-15);
  const double j_closed = objective(closed_theta), j_brute = objective(theta);
  EXPECT_NEAR(j_closed, j_brute, 1e-9 * (1 + std::abs(j_brute)));
  // The minimiser is unique in f: the brute-force e_a agree with the closed form's single e, and f agrees
  // at new points.
  for (Index a = 0; a < n; ++a)
    EXPECT_NEAR(theta[n * dy + a], closed.parameters().xi_weight, 1e-6 * 2.0 / lambda);
  const Matrix Xq = rng.normal_matrix(7, dx), Yq = rng.normal_matrix(7, dy);
  Vector f_brute = Vector::Zero(7);
  KcefParameters none_q = none;
  const Vector base = KcefModel(none_q).log_unnormalized(Xq, Yq);
  for (Index c = 0; c < A; ++c) f_brute += theta[c] * (atom(c).log_unnormalized(Xq, Yq) - base);
  const Vector f_closed = closed.log_unnormalized(Xq, Yq) - base;
  for (Index r = 0; r < 7; ++r) EXPECT_NEAR(f_closed[r], f_brute[r], 1e-6 * (1 + std::abs(f_brute[r]))) << r;
}

KcefModel fitted_model(const Matrix& R, const std::string& keys, FitReport* report_out = nullptr,
                       int threads = 1) {
  kcef::KcefEstimator est(test::config_from(keys));
  FitReport report;
  Context context = Context(7, threads).child("model.m.fit");
  const Matrix empty(0, R.cols());
  FitInput in{R, empty, context, report, make_column_roles({1}, 2)};
  const ModelPtr m = est.fit(in);
  if (report_out) *report_out = report;
  return dynamic_cast<const KcefModel&>(*m);
}

// log p(y | x) of a KCEF, normalised by the trapezoid rule on a fine y grid (the density is negligible
// beyond ±6 for these data).
Vector normalised_log_density(const KcefModel& m, const Matrix& X, const Matrix& Y) {
  const int G = 2401;
  const double lo = -6.0, step = 12.0 / (G - 1);
  Matrix grid(G, 1);
  for (int g = 0; g < G; ++g) grid(g, 0) = lo + step * g;
  const Vector lu = m.log_unnormalized(X, Y);
  Vector out(X.rows());
  for (Index r = 0; r < X.rows(); ++r) {
    const Vector v = m.log_unnormalized(Matrix::Constant(G, 1, X(r, 0)), grid);
    const double mx = v.maxCoeff();
    double z = 0.0;
    for (int g = 0; g < G; ++g) z += ((g == 0 || g == G - 1) ? 0.5 : 1.0) * step * std::exp(v[g] - mx);
    out[r] = lu[r] - mx - std::log(z);
  }
  return out;
}

TEST(Kcef, RecoversAHeteroscedasticSine) {
  FitReport report;
  const KcefModel m = fitted_model(sine_rows(250, 5), "folds = 5", &report);
  EXPECT_GT(report.values.at("cv_loss"), -1e6);
  const Matrix T = sine_rows(200, 6);
  const Matrix X = T.leftCols(1), Y = T.rightCols(1);
  // The score in y against the truth −(y − sin x)/s(x)²: relative mean squared error.
  const Matrix s = m.score(X, Y);
  double err = 0.0, norm = 0.0;
  for (Index r = 0; r < 200; ++r) {
    const double truth = -(Y(r, 0) - std::sin(X(r, 0))) / std::pow(noise_sd(X(r, 0)), 2);
    err += std::pow(s(r, 0) - truth, 2);
    norm += truth * truth;
  }
  EXPECT_LT(err / norm, 0.15) << "relative squared score error " << err / norm;
  // The held-out conditional log-likelihood close to the truth's, far above a marginal Gaussian's.
  double truth_ll = 0.0;
  for (Index r = 0; r < 200; ++r) {
    const double sd = noise_sd(X(r, 0));
    truth_ll += -0.5 * std::pow((Y(r, 0) - std::sin(X(r, 0))) / sd, 2) - std::log(sd) -
                0.5 * std::log(2 * std::numbers::pi);
  }
  truth_ll /= 200;
  const double ll = normalised_log_density(m, X, Y).mean();
  EXPECT_GT(ll, truth_ll - 0.15) << "kcef " << ll << ", truth " << truth_ll;
  EXPECT_LT(ll, truth_ll + 0.1) << "kcef " << ll << ", truth " << truth_ll;
}

// The grids are continued past an end while the best candidate lies there: the search scores a superset
// of the given grid's candidates, so its best held-out loss is never worse; with grid_extensions = 0
// it is the given grid alone (the default), and a best value at an end is noted. On these data the best
// σ_y scale runs to the top of the continued grid (the truth is Gaussian in y: a wide k_y fits a
// quadratic).
TEST(Kcef, CrossValidationContinuesAGridPastTheEndWhereTheBestLies) {
  const Matrix R = sine_rows(250, 5);
  FitReport fixed, extended;
  const KcefModel a = fitted_model(R, "folds = 5", &fixed);
  const KcefModel b = fitted_model(R, "folds = 5\ngrid_extensions = 3", &extended);
  EXPECT_EQ(fixed.values.at("cv_candidates"), 125.0);
  EXPECT_GT(extended.values.at("cv_candidates"), 125.0);
  EXPECT_LE(extended.values.at("cv_loss"), fixed.values.at("cv_loss"));
  auto noted = [](const FitReport& r, const std::string& text) {
    for (const auto& n : r.notes)
      if (test::contains(n, text)) return true;
    return false;
  };
  EXPECT_TRUE(noted(fixed, "end of its grid; extend it (grid_extensions)"));
  EXPECT_TRUE(noted(extended, "the search continued the sigma_y scale grid 0 step(s) down and 3 up; chosen 32"));
  // σ_y = 32 · sd_y/√2: three doublings past the grid's 4.
  const double sd = std::sqrt((R.col(1).array() - R.col(1).mean()).square().sum() / static_cast<double>(R.rows()));
  EXPECT_NEAR(b.parameters().sigma_y, 32.0 * sd / std::sqrt(2.0), 1e-9 * b.parameters().sigma_y);
  EXPECT_NE(a.parameters().sigma_y, b.parameters().sigma_y);
}

TEST(Kcef, FitIsIndependentOfTheContextThreadCount) {
  const Matrix R = sine_rows(120, 7);
  const KcefModel a = fitted_model(R, "folds = 4", nullptr, 1), b = fitted_model(R, "folds = 4", nullptr, 2);
  EXPECT_EQ(a.parameters().coefficients, b.parameters().coefficients);
  EXPECT_EQ(a.parameters().sigma_x, b.parameters().sigma_x);
  EXPECT_EQ(a.parameters().sigma_y, b.parameters().sigma_y);
}

// crabs' y is binary: more than half of the target pairs tie, so a median heuristic on y gives 0. The
// default σ_y is sd_y/√2 times a grid scale (the reference code's start), finite for tied targets.
TEST(Kcef, TiedBinaryTargetsGetTheReferenceBandwidth) {
  RandomStream rng(12, "binary");
  Matrix R(60, 2);
  for (Index i = 0; i < 60; ++i) {
    R(i, 0) = rng.normal();
    R(i, 1) = i % 10 < 7 ? 1.0 : 0.0;  // 70% ones: 58% of the pairs tie
  }
  FitReport report;
  fitted_model(R, "folds = 3\nscale_grid = [1.0]\nlambda = 1e-3", &report);
  const double mean = R.col(1).mean(), sd = std::sqrt((R.col(1).array() - mean).square().mean());
  EXPECT_NEAR(report.values.at("sigma_y"), sd / std::sqrt(2.0), 1e-15);
}

// An input column of values near 1e-200 is not constant, although its squared deviations underflow:
// its sd comes from the column summary, and the fit is the fit of the column in units 1e200 times
// larger (bandwidth scaled, log density the same up to rounding).
TEST(Kcef, AnInputColumnNear1eMinus200IsNotConstant) {
  const Matrix R = sine_rows(80, 8);
  Matrix tiny = R;
  tiny.col(0) *= 1e-200;
  const std::string keys = "folds = 3\nscale_grid = [1.0]\nlambda = 1e-3";
  FitReport report, tiny_report;
  const KcefModel m = fitted_model(R, keys, &report);
  const KcefModel t = fitted_model(tiny, keys, &tiny_report);
  EXPECT_NEAR(tiny_report.values.at("sigma_x_0") * 1e200 / report.values.at("sigma_x_0"), 1.0, 1e-12);
  const Matrix T = sine_rows(30, 9);
  Matrix T_tiny = T;
  T_tiny.col(0) *= 1e-200;
  const Vector a = m.log_unnormalized(T.leftCols(1), T.rightCols(1));
  const Vector b = t.log_unnormalized(T_tiny.leftCols(1), T_tiny.rightCols(1));
  ASSERT_TRUE(b.allFinite());
  for (Index i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-8 * (1.0 + std::abs(a[i]))) << "row " << i;
}

// A target column near 1e-200 is not called constant either: its bandwidth is on its scale, and since
// the model's derivatives carry 1/σ_y⁴, which no double holds at that scale, the fit is refused before
// any work, naming `sigma_y`, the bandwidth and the remedy. Narrow targets whose 1/σ_y⁴ is finite
// (1e-60) still fit, to finite values.
TEST(Kcef, ATargetColumnNear1eMinus200IsRefusedByItsScaleNotCalledConstant) {
  const std::string keys = "folds = 3\nscale_grid = [1.0]\nlambda = 1e-3";
  Matrix tiny = sine_rows(80, 8);
  tiny.col(1) *= 1e-200;
  const std::string msg = test::message_of<ConfigError>([&] { fitted_model(tiny, keys); });
  EXPECT_NE(msg.find("sigma_y"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rescale the targets"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("constant"), std::string::npos) << msg;
  // The bandwidth named is the targets' own scale (sd/√2 of values of order 1e-200).
  EXPECT_NE(msg.find("e-20"), std::string::npos) << msg;
  Matrix narrow = sine_rows(80, 8);
  narrow.col(1) *= 1e-60;
  FitReport report;
  const KcefModel m = fitted_model(narrow, keys, &report);
  EXPECT_GT(report.values.at("sigma_y"), 1e-62);
  EXPECT_LT(report.values.at("sigma_y"), 1e-59);
  Matrix T = sine_rows(30, 9);
  T.col(1) *= 1e-60;
  EXPECT_TRUE(m.log_unnormalized(T.leftCols(1), T.rightCols(1)).allFinite());
}

TEST(Kcef, SavedAndReloadedBitwise) {
  const KcefModel m = fitted_model(sine_rows(80, 8), "sigma_x = [0.6]\nsigma_y = 0.4\nlambda = 1e-3");
  const std::filesystem::path dir = test::temp_dir("kcef-save");
  ModelWriter w(dir / "m", "kcef");
  m.save(w);
  w.finish();
  const ModelReader r(dir / "m");
  const ModelPtr back = KcefModel::load(r, test::plugin_registry());
  const Matrix R = sine_rows(40, 9);
  const Matrix X = R.leftCols(1), Y = R.rightCols(1);
  const ConditionalModel& c = *back->conditional();
  EXPECT_EQ(c.log_unnormalized(X, Y), m.log_unnormalized(X, Y));
  Matrix s1, l1, s2, l2;
  c.score_and_laplacian(X, Y, s1, l1);
  m.score_and_laplacian(X, Y, s2, l2);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(l1, l2);
}

TEST(Kcef, BadInputNamesTheKey) {
  std::string msg =
      test::message_of<ConfigError>([] { kcef::KcefEstimator(test::config_from("lambda = 0.0")); });
  EXPECT_NE(msg.find("lambda"), std::string::npos) << msg;
  msg =
      test::message_of<ConfigError>([] { kcef::KcefEstimator(test::config_from("sigma_x = [1.0, -2.0]")); });
  EXPECT_NE(msg.find("sigma_x"), std::string::npos) << msg;
  msg = test::message_of<ConfigError>(
      [] { kcef::KcefEstimator(test::config_from("lambda_grid = [1e-3, 0.0]")); });
  EXPECT_NE(msg.find("lambda_grid"), std::string::npos) << msg;
  const kcef::KcefEstimator small(test::config_from("max_system = 100"));
  msg = test::message_of<ConfigError>([&] { small.check(DataShape{3, 60, 0, 60, false, 2}); });
  EXPECT_NE(msg.find("max_system"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GB"), std::string::npos) << msg;
  EXPECT_NO_THROW(small.check(DataShape{3, 50, 0, 50, false, 2}));
  const kcef::KcefEstimator two(test::config_from("sigma_x = [1.0, 2.0]"));
  msg = test::message_of<ConfigError>([&] { two.check(DataShape{4, 60, 0, 60, false, 1}); });
  EXPECT_NE(msg.find("sigma_x"), std::string::npos) << msg;
  // Data without targets.
  msg = test::message_of<ConfigError>([] {
    kcef::KcefEstimator est(test::config_from(""));
    FitReport report;
    Context context = Context(1, 1).child("model.m.fit");
    const Matrix R = sine_rows(30, 1), empty(0, 2);
    est.fit(FitInput{R, empty, context, report, {}});
  });
  EXPECT_NE(msg.find("targets"), std::string::npos) << msg;
}

// Through the kef command: conditional_log_likelihood by quadrature, and exit 2 naming the key.
std::string csv_text(const Matrix& R) {
  std::ostringstream csv;
  csv.precision(17);
  csv << "x,y\n";
  for (Index n = 0; n < R.rows(); ++n) csv << R(n, 0) << "," << R(n, 1) << "\n";
  return csv.str();
}

std::string pipeline(const std::string& data, const std::string& keys) {
  return "schema_version = 1\nseed = 3\n[data]\ntype = \"file\"\npath = \"data.csv\"\n" + data +
         "\n[[model]]\nname = \"kc\"\n[model.estimator]\ntype = \"kcef\"\n" + keys +
         "\n[[evaluate]]\ntype = \"conditional_log_likelihood\"\n[plugins]\npaths = [\"" +
         test::plugin_dir().string() + "\"]\n";
}

TEST(KcefPipeline, LikelihoodThroughTheCommandIsIndependentOfTheThreadCount) {
  const std::filesystem::path dir = test::temp_dir("kcef-pipeline");
  test::write_file(dir, "data.csv", csv_text(sine_rows(160, 10)));
  const std::filesystem::path cfg = test::write_file(
      dir, "p.toml",
      pipeline("targets = [\"y\"]\nstandardize = true\nsplit = { test = 0.5 }\n", "folds = 5"));
  Json results[2];
  for (int t = 1; t <= 2; ++t) {
    const std::filesystem::path out = dir / ("out" + std::to_string(t));
    const test::CommandResult r = test::kef_cmd("run " + cfg.string() + " --quiet --threads " +
                                                std::to_string(t) + " --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.output;
    results[t - 1] = test::read_json(out / "results.json");
  }
  const Json& m = results[0]["models"]["kc"]["metrics"];
  EXPECT_EQ(m, results[1]["models"]["kc"]["metrics"]);
  ASSERT_TRUE(m.contains("conditional_nll")) << m.dump();
  // Standardised y of a sine with noise sd 0.2–0.5 around an amplitude-1 curve: well below the
  // 1.42 nats of a standard normal.
  EXPECT_LT(m["conditional_nll"].get<double>(), 1.0) << m.dump();
  EXPECT_LT(m["log_normalizer_error_max"].get<double>(), 1e-6) << m.dump();
}

TEST(KcefPipeline, BadInputExitsWithStatusTwoNamingTheKey) {
  const std::filesystem::path dir = test::temp_dir("kcef-bad");
  test::write_file(dir, "data.csv", csv_text(sine_rows(60, 11)));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"split = { test = 0.5 }\n", "targets"},
      {"targets = [\"y\"]\nsplit = { test = 0.5 }\n", "max_system = 10"},
      {"targets = [\"y\"]\n", "lambda = 0.0"},
      {"targets = [\"y\"]\n", "sigma_y = -1.0"},
  };
  for (const auto& [data, keys] : cases) {
    const std::string key = keys.empty() ? "targets" : keys.substr(0, keys.find(' '));
    const std::filesystem::path cfg =
        test::write_file(dir, "p.toml", pipeline(data, keys == "targets" ? "" : keys));
    for (const std::string command : {"validate ", "run "}) {
      const std::string args = command == "run " ? " --quiet --output " + (dir / "out").string() : "";
      const test::CommandResult r = test::kef_cmd(command + cfg.string() + args);
      EXPECT_EQ(r.status, 2) << command << key << ": " << r.output;
      EXPECT_NE(r.output.find(key), std::string::npos) << command << key << ": " << r.output;
    }
  }
}

}  // namespace
}  // namespace kef
