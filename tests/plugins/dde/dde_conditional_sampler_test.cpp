// The conditional DDE's sampler correction and diagnostic (plugins/dde/sampler_correction.hpp): the log
// weights are λ f − ν on the pairs (x, y) and −∞ where a uniform p0 of y is 0; a corrected draw for x is
// one of the candidates drawn given that x, never a zero-weight one, and the setting survives save and
// load; the diagnostic is its definition per input x; the estimator reports it; and on a trained model
// the correction brings the draws' moments closer to the model's own (by quadrature in y).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

#include "dde_conditional_model.hpp"
#include "dde_estimator.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/model_archive.hpp"
#include "conditional_fit.hpp"
#include "test_support.hpp"

namespace kef::dde {
namespace {

// Inputs of 2 columns, targets of 1; random f, sampler and dual; p0 as given.
DdeConditionalModel random_model(std::uint64_t seed, BaseMeasure p0) {
  RandomStream rng(seed, "dde-conditional-sampler");
  const Architecture a{1, 4, 8, 3, 3, 2};
  KernelExpansion f{rng.normal_matrix(15, 3), rng.normal_matrix(15, 1).col(0), 0.8};
  network::Network g = make_generator(a), nu = make_dual(a);
  g.initialize(rng);
  nu.initialize(rng);
  return DdeConditionalModel(f, 1.5, a, g, nu, std::move(p0));
}

BaseMeasure gaussian_p0() { return BaseMeasure::gaussian(Vector::Constant(1, 0.1), Vector::Constant(1, 1.2)); }

Matrix inputs(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "inputs");
  return rng.normal_matrix(n, 2);
}

Matrix repeat_rows(const Matrix& X, Index k) {
  Matrix out(X.rows() * k, X.cols());
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < k; ++j) out.row(i * k + j) = X.row(i);
  return out;
}

TEST(DdeConditionalSampler, LogWeightsAreLambdaFMinusNuAndMinusInfinityWhereP0IsZero) {
  const DdeConditionalModel m = random_model(1, gaussian_p0());
  const Matrix X = inputs(4, 2);
  Matrix Y(4, 1);
  Y << -0.5, 0.0, 0.7, 3.0;
  const Vector lw = m.log_importance_weights(X, Y);
  for (Index i = 0; i < 4; ++i) {
    Matrix z(1, 3);
    z << X.row(i), Y.row(i);
    const double direct = 1.5 * m.expansion().values(z)[0] - m.dual().value(z)(0, 0);
    EXPECT_NEAR(lw[i], direct, 1e-14 * (1 + std::abs(direct))) << i;
  }
  const DdeConditionalModel box = random_model(1, BaseMeasure::box(Vector::Constant(1, -1.0), Vector::Constant(1, 1.0)));
  const Vector lb = box.log_importance_weights(X, Y);
  EXPECT_EQ(lb.head(3), lw.head(3));  // the same f and ν; inside the box p0 cancels
  EXPECT_EQ(lb[3], -std::numeric_limits<double>::infinity());
}

TEST(DdeConditionalSampler, CorrectedDrawsAreCandidatesOfTheirOwnInputAndReload) {
  DdeConditionalModel m = random_model(3, gaussian_p0());
  m.set_correction(SamplerCorrection{true, 5});
  const Matrix X = inputs(30, 4);
  RandomStream a(8, "draw"), b(8, "draw");
  const Matrix out = m.sample(X, a);
  ASSERT_EQ(out.rows(), 30);
  // The candidates: 5 sampler draws given each x, all rows' noise first, in row order.
  const Matrix cand = m.sampler_draws(repeat_rows(X, 5), b);
  for (Index n = 0; n < 30; ++n) {
    bool found = false;
    for (Index j = 0; j < 5 && !found; ++j) found = cand(n * 5 + j, 0) == out(n, 0);
    EXPECT_TRUE(found) << n;
  }
  // Uncorrected, the same stream gives the first draws directly.
  m.set_correction(SamplerCorrection{});
  RandomStream c(8, "draw"), d(8, "draw");
  EXPECT_EQ(m.sample(X, c), m.sampler_draws(X, d));
  m.set_correction(SamplerCorrection{true, 5});
  const auto dir = test::temp_dir("dde-conditional-corrected") / "m";
  save_model(m, dir);
  const ModelPtr back = DdeConditionalModel::load(ModelReader(dir), test::plugin_registry());
  const auto& mb = dynamic_cast<const DdeConditionalModel&>(*back);
  EXPECT_TRUE(mb.correction().importance);
  EXPECT_EQ(mb.correction().candidates, 5);
  RandomStream e(8, "draw");
  EXPECT_EQ(back->conditional()->sample(X, e), out);
}

TEST(DdeConditionalSampler, EveryCandidateOutsideTheBoxIsAnErrorNamingTheInputRow) {
  // A box far from where the sampler draws: every candidate has weight 0.
  DdeConditionalModel m = random_model(5, BaseMeasure::box(Vector::Constant(1, 50.0), Vector::Constant(1, 51.0)));
  m.set_correction(SamplerCorrection{true, 3});
  RandomStream rng(1, "draw");
  const std::string msg = test::message_of<NumericalError>([&] { m.sample(inputs(4, 6), rng); });
  EXPECT_TRUE(test::contains(msg, "input row 0")) << msg;
  EXPECT_TRUE(test::contains(msg, "every candidate has weight 0")) << msg;
}

TEST(DdeConditionalSampler, DiagnosticIsTheDefinitionPerInput) {
  const DdeConditionalModel m = random_model(7, BaseMeasure::box(Vector::Constant(1, -1.0), Vector::Constant(1, 1.0)));
  const Matrix X = inputs(6, 8);
  const Index k = 400;
  RandomStream a(2, "diag"), b(2, "diag");
  const DdeConditionalModel::Diagnostic d = m.diagnose(X, k, a);
  const Matrix Xk = repeat_rows(X, k);
  const Vector lw = m.log_importance_weights(Xk, m.sampler_draws(Xk, b));
  double ess = 0, kl = 0, worst = 1, outside = 0;
  for (Index n = 0; n < 6; ++n) {
    double in = 0, s1 = 0, s2 = 0, sl = 0;
    for (Index j = 0; j < k; ++j) {
      const double l = lw[n * k + j];
      if (!std::isfinite(l)) {
        outside += 1;
        continue;
      }
      in += 1;
      s1 += std::exp(l);
      s2 += std::exp(2 * l);
      sl += l;
    }
    ASSERT_GT(in, 0) << n;
    ess += s1 * s1 / (in * s2) / 6;
    worst = std::min(worst, s1 * s1 / (in * s2));
    kl += (std::log(s1 / in) - sl / in) / 6;
  }
  EXPECT_GT(outside, 0);  // the check below covers the −∞ rows
  EXPECT_NEAR(d.mean.outside_box, outside / (6.0 * k), 1e-15);
  EXPECT_NEAR(d.mean.ess_fraction, ess, 1e-12);
  EXPECT_NEAR(d.ess_fraction_min, worst, 1e-12);
  EXPECT_NEAR(d.mean.kl, kl, 1e-10);
}

using test::Fitted;
using test::linear_gaussian;

Fitted fit(const std::string& keys, const Matrix& train, std::uint64_t seed) {
  return test::fit_dde_conditional(keys, train, seed, 1);
}

TEST(DdeConditionalSampler, TheEstimatorSetsTheCorrectionAndReportsTheDiagnostic) {
  const Matrix train = linear_gaussian(150, 1);
  const std::string keys =
      "type = \"dde_conditional\"\niterations = 20\nwidth = 16\nnoise_dim = 8\nbatch_size = 40\n"
      "learning_rate = 1e-3\n";
  const Fitted a = fit(keys + "sampler_correction = \"importance\"\ncorrection_candidates = 4\n"
                              "diagnostic_samples = 1000\n",
                       train, 5);
  const auto& m = dynamic_cast<const DdeConditionalModel&>(*a.model);
  EXPECT_TRUE(m.correction().importance);
  EXPECT_EQ(m.correction().candidates, 4);
  // The same inputs and draws as the fit: 100 training inputs picked by the "diagnostic" stream, 10 each.
  RandomStream rng(Context(5, 1).child("fit").rng().derive("diagnostic"));
  const Matrix X = train.rightCols(2);
  const Matrix picked = random_rows(X, 100, rng);
  const DdeConditionalModel::Diagnostic d = m.diagnose(picked, 10, rng);
  EXPECT_EQ(a.report.values.at("sampler_ess_fraction"), d.mean.ess_fraction);
  EXPECT_EQ(a.report.values.at("sampler_ess_fraction_min"), d.ess_fraction_min);
  EXPECT_EQ(a.report.values.at("sampler_kl_estimate"), d.mean.kl);
  EXPECT_EQ(a.report.values.at("sampler_outside_box"), 0.0);  // a Gaussian p0 is positive everywhere
  ASSERT_EQ(a.report.notes.size(), 1u);
  EXPECT_TRUE(test::contains(a.report.notes[0], "10 draws given each of 100 training inputs")) << a.report.notes[0];
  const Fitted b = fit(keys + "diagnostic_samples = 0\n", train, 5);
  EXPECT_EQ(b.report.values.count("sampler_ess_fraction"), 0u);
  EXPECT_FALSE(dynamic_cast<const DdeConditionalModel&>(*b.model).correction().importance);
  // The correction changes how the model samples, not the fit.
  EXPECT_EQ(dynamic_cast<const DdeConditionalModel&>(*b.model).generator().parameters(),
            m.generator().parameters());
}

// With the exact dual the correction draws from the model: a linear sampler g(ξ, x) = c + s ξ (q(y | x)
// = N(c, s²), whatever x) and p0 = N(m0, s²) make log(q / p0) linear in y, which a one-layer dual
// represents exactly: ν = y (c − m0)/s² − (c² − m0²)/(2 s²). The model p(y | x) ∝ p0(y) e^{λ f(x, y)}
// with f a few Gaussian bumps; its mean and variance at x by quadrature. Corrected draws (200 candidates
// each) match them; the sampler's own draws (q) do not.
TEST(DdeConditionalSampler, WithTheExactDualCorrectedDrawsFollowTheModel) {
  const double c = 0.4, s = 0.9, m0 = -0.2, lambda = 1.3;
  const Architecture arch{1, 1, 4, 1, 1, 1};  // y of 1, ξ of 1, one linear layer each, x of 1
  network::Network g = make_generator(arch), nu = make_dual(arch);
  Vector gp(3), np(3);
  gp << s, 0.0, c;  // W = [w_ξ, w_x], then b
  np << 0.0, (c - m0) / (s * s), -(c * c - m0 * m0) / (2 * s * s);  // W = [w_x, w_y], then b
  g.set_parameters(gp);
  nu.set_parameters(np);
  Matrix probe(2, 2);
  probe << 1.0, 7.0, 0.0, -3.0;  // rows [ξ, x]
  ASSERT_NEAR(g.value(probe)(0, 0), c + s, 1e-15);
  ASSERT_NEAR(g.value(probe)(1, 0), c, 1e-15);
  Matrix points(3, 2);
  points << -1.0, 0.8, 0.0, -0.5, 1.0, 1.5;  // rows (x, y)
  Vector alpha(3);
  alpha << 1.2, -0.7, 0.9;
  DdeConditionalModel m(KernelExpansion{points, alpha, 1.1}, lambda, arch, g, nu,
                        BaseMeasure::gaussian(Vector::Constant(1, m0), Vector::Constant(1, s)));
  // ν is log(q / p0) exactly: check it on a few pairs.
  for (double y : {-1.0, 0.3, 2.0}) {
    Matrix z(1, 2);
    z << 0.5, y;
    const double log_q = -0.5 * (y - c) * (y - c) / (s * s), log_p0 = -0.5 * (y - m0) * (y - m0) / (s * s);
    ASSERT_NEAR(nu.value(z)(0, 0), log_q - log_p0, 1e-13);
  }
  const Index n = 4000, G = 4001;
  const double lo = -8, hi = 8, h = (hi - lo) / (G - 1);
  Matrix grid(G, 1);
  for (Index k = 0; k < G; ++k) grid(k, 0) = lo + h * static_cast<double>(k);
  m.set_correction(SamplerCorrection{true, 200});
  for (double x : {-1.0, 0.5}) {
    const Vector lg = m.log_unnormalized(Matrix::Constant(G, 1, x), grid);
    const double top = lg.maxCoeff();
    double z = 0, s1 = 0, s2 = 0;
    for (Index k = 0; k < G; ++k) {
      const double w = std::exp(lg[k] - top), y = grid(k, 0);
      z += w;
      s1 += w * y;
      s2 += w * y * y;
    }
    const double mean = s1 / z, var = s2 / z - mean * mean;
    RandomStream rng(11, "corrected");
    const Matrix y = m.sample(Matrix::Constant(n, 1, x), rng);
    const double ym = y.mean(), yv = (y.array() - ym).square().mean();
    // 5 standard errors of the mean and of the variance (a normal's), plus the self-normalised
    // weights' O(1/K) bias, which at K = 200 is far below them.
    EXPECT_NEAR(ym, mean, 5 * std::sqrt(var / n)) << "x " << x;
    EXPECT_NEAR(yv, var, 5 * var * std::sqrt(2.0 / n)) << "x " << x;
    // The uncorrected sampler is q = N(c, s²), far from the model here.
    EXPECT_GT(std::abs(c - mean), 10 * std::sqrt(var / n)) << "x " << x;
  }
}

}  // namespace
}  // namespace kef::dde
