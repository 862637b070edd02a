// The conditional DDE (plugins/dde, dde_conditional): the conditional saddle point's gradients (f, the
// sampler g(ξ, x), the dual ν(x, y)) against central differences with the shared harness; the rows f and ν
// see are (x, y) with x the batch's inputs; the fit depends on the seed and not on the thread count and the
// model reloads bitwise; on a Gaussian linear model p(y | x) = N(a x + b, s²) a short deterministic fit's
// held-out conditional log-likelihood (normalised by quadrature in y) approaches the truth's; the model's
// score is the y block of λ∇f plus p0's; and bad input is refused clearly.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "dde_conditional_model.hpp"
#include "dde_core.hpp"
#include "dde_estimator.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "conditional_fit.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using dde::Architecture;
using dde::BaseMeasure;
using dde::Trainer;

// Inputs x of 2 columns, targets y of 1: the trainer's rows are (x, y).
Trainer make_conditional_trainer(const Matrix& rows, std::uint64_t seed, BaseMeasure p0) {
  RandomStream rng(seed, "dde-conditional-gradient");
  const Architecture arch{1, 5, 8, 3, 3, 2};
  dde::KernelExpansion f{rows, 0.5 * rng.normal_matrix(rows.rows(), 1).col(0), 0.7};
  network::Network g = dde::make_generator(arch), nu = dde::make_dual(arch);
  g.initialize(rng);
  nu.initialize(rng);
  Vector gp = g.parameters(), np = nu.parameters();
  gp += 0.1 * rng.normal_matrix(gp.size(), 1).col(0);
  np += 0.1 * rng.normal_matrix(np.size(), 1).col(0);
  g.set_parameters(gp);
  nu.set_parameters(np);
  dde::TrainerOptions o;
  o.lambda = 2.0;
  o.eta = 0.3;
  o.cond_dim = 2;
  o.base = p0.kind;
  return Trainer(f, g, nu, std::move(p0), o, "test");
}

double relative(const Vector& a, const Vector& b) { return (a - b).norm() / b.norm(); }

BaseMeasure gaussian_p0() {
  return BaseMeasure::gaussian(Vector::Constant(1, 0.2), Vector::Constant(1, 1.3));
}

TEST(DdeConditionalGradient, SamplerLossInGeneratorParametersGivenInputs) {
  RandomStream rng(11, "data");
  const Matrix rows = rng.normal_matrix(30, 3), xi = rng.normal_matrix(11, 5),
               cond = rng.normal_matrix(11, 2);
  Trainer t = make_conditional_trainer(rows, 12, gaussian_p0());
  Vector g;
  t.generator_loss(xi, &g, cond);
  const Vector theta = t.generator().parameters();
  const Vector num = test::numerical_gradient(
      [&](const Vector& p) {
        t.generator().set_parameters(p);
        return t.generator_loss(xi, nullptr, cond);
      },
      theta);
  EXPECT_LT(relative(g, num), 1e-8);
  EXPECT_GT(g.norm(), 0.0);
  // The loss is −mean f(x, g(ξ, x)) + (1/λ) mean ν(x, g(ξ, x)) with x the given inputs, first.
  t.generator().set_parameters(theta);
  const Matrix q = t.sampler_rows(xi, cond);
  ASSERT_EQ(q.cols(), 3);
  EXPECT_EQ(Matrix(q.leftCols(2)), cond);
  Matrix input(11, 7);
  input << xi, cond;
  EXPECT_EQ(Matrix(q.rightCols(1)), t.generator().value(input));
  const double direct = -t.f().values(q).mean() + 0.5 * t.dual().value(q).col(0).mean();
  EXPECT_NEAR(t.generator_loss(xi, nullptr, cond), direct, 1e-13 * (1 + std::abs(direct)));
}

TEST(DdeConditionalGradient, DualAndFStepOnConditionalRows) {
  RandomStream rng(13, "data");
  const Matrix rows = rng.normal_matrix(30, 3), batch = rng.normal_matrix(10, 3), cond = batch.leftCols(2);
  Trainer t = make_conditional_trainer(rows, 14, gaussian_p0());
  const Matrix xq = t.sampler_rows(rng.normal_matrix(10, 5), cond);
  const Matrix xu = t.base_rows(rng.normal_matrix(10, 1), cond);
  // p0's draws are y = mean + sd · N(0, 1) beside the batch's own inputs.
  EXPECT_EQ(Matrix(xu.leftCols(2)), cond);
  Vector g;
  t.dual_loss(xq, xu, &g);
  const Vector theta = t.dual().parameters();
  const Vector num = test::numerical_gradient(
      [&](const Vector& p) {
        t.dual().set_parameters(p);
        return t.dual_loss(xq, xu, nullptr);
      },
      theta);
  EXPECT_LT(relative(g, num), 1e-8);
  t.dual().set_parameters(theta);
  Vector ga;
  t.f_loss(batch, xq, &ga);
  const Vector alpha = t.f().alpha;
  const Vector numa = test::numerical_gradient(
      [&](const Vector& a) {
        t.f().alpha = a;
        return t.f_loss(batch, xq, nullptr);
      },
      alpha);
  EXPECT_LT(relative(ga, numa), 1e-8);
}

// log p0 and its derivatives for both base measures against the formulas and central differences.
TEST(DdeConditionalGradient, BaseMeasureDensityScoreAndLaplacian) {
  const BaseMeasure gauss =
      BaseMeasure::gaussian((Vector(2) << 0.5, -1.0).finished(), (Vector(2) << 2.0, 0.5).finished());
  Matrix Y(2, 2);
  Y << 0.1, 0.3, -2.0, 1.0;
  const Vector lp = gauss.log_density(Y);
  for (Index i = 0; i < 2; ++i) {
    const double z0 = (Y(i, 0) - 0.5) / 2.0, z1 = (Y(i, 1) + 1.0) / 0.5;
    EXPECT_NEAR(lp[i], -std::log(2 * std::numbers::pi) - std::log(1.0) - 0.5 * (z0 * z0 + z1 * z1), 1e-14);
  }
  Matrix s, l;
  gauss.score_and_laplacian(Y, s, l);
  const double h = 1e-5;
  for (Index i = 0; i < 2; ++i)
    for (Index d = 0; d < 2; ++d) {
      Matrix p = Y.row(i), m = Y.row(i);
      p(0, d) += h;
      m(0, d) -= h;
      EXPECT_NEAR(s(i, d), (gauss.log_density(p)[0] - gauss.log_density(m)[0]) / (2 * h), 1e-7);
    }
  EXPECT_EQ(l(1, 0), -0.25);
  EXPECT_EQ(l(0, 1), -4.0);
  const BaseMeasure box = BaseMeasure::box(Vector::Zero(2), Vector::Constant(2, 2.0));
  const Vector lb = box.log_density(Y);
  EXPECT_EQ(lb[0], -std::log(4.0));
  EXPECT_TRUE(std::isinf(lb[1]) && lb[1] < 0);
}

using test::Fitted;
using test::linear_gaussian;

// y (column 0) given x (columns 1, 2): the estimator must reorder the data's columns to (x, y).
Fitted fit(const std::string& keys, const Matrix& train, std::uint64_t seed, int threads,
           std::vector<Index> targets = {0}) {
  return test::fit_dde_conditional(keys, train, seed, threads, std::move(targets));
}

const char* kSmall =
    "type = \"dde_conditional\"\niterations = 30\nreport_every = 10\nwidth = 16\nnoise_dim = 8\n"
    "batch_size = 40\nlearning_rate = 1e-3\n";

TEST(DdeConditionalEstimator, SeedNotThreadsDecidesAndTheModelReloadsBitwise) {
  const Matrix train = linear_gaussian(120, 1), probe = linear_gaussian(25, 2);
  const Matrix X = probe.rightCols(2), Y = probe.leftCols(1);
  const Fitted a = fit(kSmall, train, 5, 1), b = fit(kSmall, train, 5, 2), c = fit(kSmall, train, 6, 2);
  const ConditionalModel& ca = *a.model->conditional();
  EXPECT_EQ(ca.log_unnormalized(X, Y), b.model->conditional()->log_unnormalized(X, Y));
  EXPECT_EQ(a.report.curves, b.report.curves);
  EXPECT_NE(ca.log_unnormalized(X, Y), c.model->conditional()->log_unnormalized(X, Y));
  ASSERT_EQ(a.report.curves.at("f_loss").size(), 3u);
  const auto& m = dynamic_cast<const dde::DdeConditionalModel&>(*a.model);
  EXPECT_EQ(m.generator().parameters(),
            dynamic_cast<const dde::DdeConditionalModel&>(*b.model).generator().parameters());
  // The kernel centres are the (x, y) rows: the data's columns 1, 2 then 0.
  EXPECT_EQ(Matrix(m.expansion().points.leftCols(2)), Matrix(train.rightCols(2)));
  EXPECT_EQ(Matrix(m.expansion().points.rightCols(1)), Matrix(train.leftCols(1)));
  EXPECT_EQ(m.input_dim(), 2);
  EXPECT_EQ(m.target_dim(), 1);

  const auto dir = test::temp_dir("dde-conditional-save") / "m";
  save_model(*a.model, dir);
  const ModelPtr back = load_model(dir, test::plugin_registry());  // through the plugin's loader
  EXPECT_EQ(back->type_name(), "dde_conditional");
  const ConditionalModel& cb = *back->conditional();
  EXPECT_EQ(cb.log_unnormalized(X, Y), ca.log_unnormalized(X, Y));
  Matrix s1, l1, s2, l2;
  cb.score_and_laplacian(X, Y, s1, l1);
  ca.score_and_laplacian(X, Y, s2, l2);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(l1, l2);
  RandomStream r1(9, "draw"), r2(9, "draw");
  EXPECT_EQ(cb.sample(X, r1), ca.sample(X, r2));
  EXPECT_EQ(back->facets(), a.model->facets());
}

// log p~(y | x) = λ f(x, y) + log p0(y), the score its y derivative (central differences), the
// Laplacian its second; draws y = g(ξ, x); the sampler is flagged approximate.
TEST(DdeConditionalEstimator, ModelIsLambdaFPlusLogP0InY) {
  const Matrix train = linear_gaussian(120, 3);
  const Fitted a = fit(std::string(kSmall) + "lambda = 0.5\nbase_sd = 2\n", train, 5, 1);
  const auto& m = dynamic_cast<const dde::DdeConditionalModel&>(*a.model);
  const double mean = train.col(0).mean();
  const double sd = std::sqrt((train.col(0).array() - mean).square().sum() / 119.0);
  EXPECT_NEAR(m.base().a[0], mean, 1e-14);
  EXPECT_NEAR(m.base().b[0], 2.0 * sd, 1e-14);
  const Matrix probe = linear_gaussian(6, 4), X = probe.rightCols(2), Y = probe.leftCols(1);
  Matrix Z(6, 3);
  Z << X, Y;
  const Vector lp = m.log_unnormalized(X, Y);
  for (Index i = 0; i < 6; ++i) {
    const double z = (Y(i, 0) - mean) / (2 * sd);
    EXPECT_NEAR(lp[i],
                0.5 * m.expansion().values(Z.row(i))[0] - 0.5 * std::log(2 * std::numbers::pi) -
                    std::log(2 * sd) - 0.5 * z * z,
                1e-12);
  }
  Matrix s, l;
  m.score_and_laplacian(X, Y, s, l);
  const double h = 1e-4;
  for (Index i = 0; i < 6; ++i) {
    Matrix yp = Y.row(i), ym = Y.row(i);
    yp(0, 0) += h;
    ym(0, 0) -= h;
    const double fp = m.log_unnormalized(X.row(i), yp)[0], fm = m.log_unnormalized(X.row(i), ym)[0];
    EXPECT_NEAR(s(i, 0), (fp - fm) / (2 * h), 1e-7 * (1 + std::abs(s(i, 0))));
    EXPECT_NEAR(l(i, 0), (fp - 2 * lp[i] + fm) / (h * h), 1e-4 * (1 + std::abs(l(i, 0))));
  }
  RandomStream r(3, "draw");
  const Matrix draws = m.sample(X, r);
  ASSERT_EQ(draws.rows(), 6);
  ASSERT_EQ(draws.cols(), 1);
  EXPECT_TRUE(m.facets().has(Facet::ConditionalSampler));
  EXPECT_TRUE(m.facets().has(Facet::ApproximateSampler));
  EXPECT_FALSE(m.facets().has(Facet::Sampler));
  EXPECT_FALSE(m.facets().has(Facet::LogDensity));
}

// log Z(x) by a fine trapezoid sum over y (the brute force; p~ is smooth and Gaussian-tailed here).
Vector held_out_log_likelihood(const ConditionalModel& m, const Matrix& X, const Matrix& Y) {
  const Index G = 2001;
  const double lo = -8.0, hi = 8.0, h = (hi - lo) / (G - 1);
  Matrix grid(G, 1);
  for (Index g = 0; g < G; ++g) grid(g, 0) = lo + h * static_cast<double>(g);
  const Vector lu = m.log_unnormalized(X, Y);
  Vector out(X.rows());
  for (Index n = 0; n < X.rows(); ++n) {
    const Vector lg = m.log_unnormalized(X.row(n).replicate(G, 1), grid);
    const double top = lg.maxCoeff();
    double z = 0.0;
    for (Index g = 0; g < G; ++g) z += (g == 0 || g + 1 == G ? 0.5 : 1.0) * std::exp(lg[g] - top);
    out[n] = lu[n] - (top + std::log(z * h));
  }
  return out;
}

// On y | x ~ N(0.8 x1 − 0.3 x2, 0.5²), a deterministic fit of 3000 iterations on 400 pairs: the held-out
// mean log-likelihood is within 0.15 nats of the truth's (−0.73 in expectation) and far above p0's alone
// (the Gaussian of the marginal of y, which ignores x: −1.47 on this test set; the fit gave −0.79 against
// the truth's −0.73 when written). The tolerance: with 400 pairs, a
// bandwidth from the median heuristic and a short run, the fit is not the truth; 0.15 nats is a fifth of
// the gap between knowing x and ignoring it, and the run is the same on every machine (the seed decides).
TEST(DdeConditionalEstimator, ApproachesTheTrueConditionalLogLikelihood) {
  const Matrix train = linear_gaussian(400, 7), test = linear_gaussian(400, 8);
  const Fitted a =
      fit("type = \"dde_conditional\"\niterations = 3000\nreport_every = 500\nwidth = 32\nnoise_dim = 8\n"
          "learning_rate = 1e-3\nf_bd = 0.5\n",
          train, 3, 1);
  const Matrix X = test.rightCols(2), Y = test.leftCols(1);
  const double fitted = held_out_log_likelihood(*a.model->conditional(), X, Y).mean();
  double truth = 0.0, marginal = 0.0;
  const double my = train.col(0).mean();
  const double vy = (train.col(0).array() - my).square().sum() / 399.0;
  for (Index i = 0; i < 400; ++i) {
    const double r = Y(i, 0) - (0.8 * X(i, 0) - 0.3 * X(i, 1));
    truth += -0.5 * std::log(2 * std::numbers::pi * 0.25) - 0.5 * r * r / 0.25;
    marginal += -0.5 * std::log(2 * std::numbers::pi * vy) - 0.5 * (Y(i, 0) - my) * (Y(i, 0) - my) / vy;
  }
  truth /= 400.0;
  marginal /= 400.0;
  std::cout << "held-out mean log p(y | x): fitted " << fitted << ", truth " << truth << ", p0 alone "
            << marginal << "\n";
  EXPECT_GT(fitted, truth - 0.15);
  EXPECT_LT(fitted, truth + 0.15);
  EXPECT_GT(fitted, marginal + 0.4);
}

TEST(DdeConditionalEstimator, BadInputIsRefusedClearly) {
  const Matrix train = linear_gaussian(60, 9);
  // A conditional estimator on data without targets (the same error as lscde's and eps_kde's).
  const std::string msg = test::message_of<ConfigError>([&] { fit(kSmall, train, 5, 1, {}); });
  EXPECT_TRUE(test::contains(msg, "no target columns")) << msg;
  dde::DdeConditionalEstimator est(test::config_from(kSmall));
  DataShape shape;
  shape.dim = 3;
  shape.train_rows = 60;
  const std::string msg2 = test::message_of<ConfigError>([&] { est.check(shape); });
  EXPECT_TRUE(test::contains(msg2, "set [data] targets")) << msg2;
  // The unconditional estimator on data with targets.
  dde::DdeEstimator plain(test::config_from("type = \"dde\"\n"));
  shape.target_dim = 1;
  const std::string msg3 = test::message_of<ConfigError>([&] { plain.check(shape); });
  EXPECT_TRUE(test::contains(msg3, "takes no [data] targets")) << msg3;
  // Keys: the unconditional-only ones are unknown here, bad values name the key.
  Registry& reg = test::plugin_registry();
  for (const std::string bad :
       {"box_margin = 0.1", "sampler_correction = \"mcmc\"", "correction_candidates = 1",
        "base_measure = \"laplace\"", "base_sd = 0", "width = 0"}) {
    const std::string key = bad.substr(0, bad.find(' '));
    const std::string m = test::message_of<ConfigError>([&] {
      reg.make_estimator(test::config_from("type = \"dde_conditional\"\n" + bad + "\n"),
                         EstimatorParts{nullptr, nullptr, &reg}, {});
    });
    EXPECT_TRUE(test::contains(m, key)) << bad << ": " << m;
  }
  // A constant target column: p0 of y has no density.
  Matrix flat = train;
  flat.col(0).setConstant(1.0);
  const std::string msg4 = test::message_of<DataError>([&] { fit(kSmall, flat, 5, 1); });
  EXPECT_TRUE(test::contains(msg4, "target column 0")) << msg4;
  // Inputs of the wrong width when evaluating or sampling.
  const Fitted a = fit(kSmall, train, 5, 1);
  const std::string msg5 = test::message_of<DataError>([&] {
    RandomStream r(1, "x");
    a.model->conditional()->sample(Matrix::Zero(3, 5), r);
  });
  EXPECT_TRUE(test::contains(msg5, "dde_conditional")) << msg5;
}

}  // namespace
}  // namespace kef
