// DDE's f step is the penalised-MLE gradient when the sampler is exact:
// with q the model's own density q*(x) ∝ p0(x) e^{λ f(x)} (what the sampler's saddle point converges
// to, and what the fitted model is: log p~ = λ f + log p0), the f step's gradient in α,
//   −mean_b k(x_b, z) + mean_q k(x_q, z) + η K α,
// is an unbiased estimate of the gradient of the penalised log-likelihood objective
//   L(α) = −mean_b f(x_b) + (1/λ) log ∫ p0 e^{λ f} + (η/2) αᵀ K α,
// whose λ-scaled minimiser is the penalised MLE of the exponential family p0 e^{λ f}. Here, in 1-D on
// a box, q* is sampled exactly by rejection from p0 and ∫ by fine midpoint quadrature; the two
// gradients must agree within the Monte Carlo error, and the quadrature gradient must be L's (central
// differences).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dde_core.hpp"
#include "dde_estimator.hpp"
#include "dde_model.hpp"
#include "kef/context.hpp"
#include "test_support.hpp"

namespace kef::dde {
namespace {

struct Problem {
  double lo = -3.0, hi = 3.0;
  KernelExpansion f;
  Matrix batch;  // the data term's rows
  double eta = 0.2;
};

Problem make_problem(std::uint64_t seed) {
  RandomStream rng(seed, "dde-pmle");
  Problem p;
  p.f.points = Matrix(6, 1);
  p.f.points.col(0) << -2.0, -1.1, -0.3, 0.4, 1.2, 2.1;
  p.f.alpha = 0.6 * rng.normal_matrix(6, 1).col(0);
  p.f.gamma = 0.7;
  p.batch = 0.8 * rng.normal_matrix(50, 1);
  return p;
}

// Midpoint rule on [lo, hi]: the nodes and the common weight.
struct Quadrature {
  Matrix x;
  double h;
};
Quadrature quadrature(const Problem& p, Index cells) {
  Quadrature q{Matrix(cells, 1), (p.hi - p.lo) / static_cast<double>(cells)};
  for (Index i = 0; i < cells; ++i) q.x(i, 0) = p.lo + (static_cast<double>(i) + 0.5) * q.h;
  return q;
}

// L(α) by quadrature (p0 = U(lo, hi): ∫ p0 e^{λf} = mean over the box of e^{λf}).
double objective(const Problem& p, const Vector& alpha, double lambda, const Quadrature& q) {
  KernelExpansion f = p.f;
  f.alpha = alpha;
  const Vector fx = f.values(q.x);
  const double m = fx.maxCoeff();
  const double log_z = lambda * m + std::log((lambda * (fx.array() - m)).exp().sum() * q.h / (p.hi - p.lo));
  return -f.values(p.batch).mean() + log_z / lambda + 0.5 * p.eta * alpha.dot(f.gram(f.points) * alpha);
}

// ∇L by quadrature: −mean_b k + E_{q*} k + η K α.
Vector objective_gradient(const Problem& p, double lambda, const Quadrature& q) {
  const Vector fx = p.f.values(q.x);
  const Vector w = (lambda * (fx.array() - fx.maxCoeff())).exp();
  const Matrix Kq = p.f.gram(q.x);
  return Kq.transpose() * (w / w.sum()) - p.f.gram(p.batch).colwise().mean().transpose() +
         p.eta * (p.f.gram(p.f.points) * p.f.alpha);
}

// Exact draws of q* ∝ 1_box e^{λ f} by rejection from U(lo, hi), with an upper bound of f: its maximum
// on a fine grid plus the Lipschitz bound over half a grid step (|f'| ≤ Σ|α_i| √(2γ/e)).
Matrix exact_draws(const Problem& p, double lambda, Index n, RandomStream& rng) {
  const Quadrature grid = quadrature(p, 100000);
  const double lipschitz = p.f.alpha.cwiseAbs().sum() * std::sqrt(2.0 * p.f.gamma / std::exp(1.0));
  const double f_max = p.f.values(grid.x).maxCoeff() + lipschitz * grid.h;
  Matrix out(n, 1);
  Index k = 0;
  while (k < n) {
    Matrix u(4096, 1);
    for (Index i = 0; i < u.rows(); ++i) u(i, 0) = p.lo + (p.hi - p.lo) * rng.uniform();
    const Vector fu = p.f.values(u);
    for (Index i = 0; i < u.rows() && k < n; ++i)
      if (rng.uniform() < std::exp(lambda * (fu(i) - f_max))) out(k++, 0) = u(i, 0);
  }
  return out;
}

Trainer trainer_for(const Problem& p, double lambda) {
  Architecture arch{1, 4, 8, 2, 2};
  TrainerOptions o;
  o.lambda = lambda;
  o.eta = p.eta;
  return Trainer(p.f, make_generator(arch), make_dual(arch), Vector::Constant(1, p.lo),
                 Vector::Constant(1, p.hi), o, "test");
}

TEST(DdePenalisedMle, QuadratureGradientIsTheObjectivesGradient) {
  const Problem p = make_problem(1);
  const Quadrature q = quadrature(p, 20000);
  for (const double lambda : {1.0, 2.0}) {
    const Vector analytic = objective_gradient(p, lambda, q);
    const Vector numeric =
        test::numerical_gradient([&](const Vector& a) { return objective(p, a, lambda, q); }, p.f.alpha);
    EXPECT_LT((analytic - numeric).norm(), 1e-8 * analytic.norm()) << "lambda " << lambda;
  }
}

TEST(DdePenalisedMle, FStepWithExactModelDrawsIsThePenalisedMleGradient) {
  const Problem p = make_problem(1);
  const Quadrature q = quadrature(p, 20000);
  RandomStream rng(2, "exact-draws");
  for (const double lambda : {1.0, 2.0}) {
    const Index n = 400000;
    const Matrix xq = exact_draws(p, lambda, n, rng);
    const Trainer t = trainer_for(p, lambda);
    Vector step;
    t.f_loss(p.batch, xq, &step);
    const Vector expected = objective_gradient(p, lambda, q);
    // The Monte Carlo standard error of each component: sd of k(x_q, z_j) over the draws, / √n.
    const Matrix Kq = p.f.gram(xq);
    const Vector mean = Kq.colwise().mean().transpose();
    const Vector sd =
        ((Kq.rowwise() - mean.transpose()).array().square().colwise().sum() / static_cast<double>(n - 1))
            .sqrt()
            .transpose();
    for (Index j = 0; j < step.size(); ++j)
      EXPECT_LT(std::abs(step(j) - expected(j)), 5.0 * sd(j) / std::sqrt(static_cast<double>(n)))
          << "lambda " << lambda << ", component " << j << ": f step " << step(j) << ", penalised MLE "
          << expected(j);
    // Draws of the wrong density (e^{f} instead of e^{λf} when λ ≠ 1) are told apart: the test can fail.
    if (lambda != 1.0) {
      const Matrix wrong = exact_draws(p, 1.0, n, rng);
      Vector off;
      t.f_loss(p.batch, wrong, &off);
      EXPECT_GT((off - expected).cwiseAbs().maxCoeff(),
                20.0 * sd.maxCoeff() / std::sqrt(static_cast<double>(n)));
    }
  }
}

// The penalised MLE of a problem: the minimiser of L by damped Newton steps on the quadrature
// gradient and Hessian (λ Cov_{q*}(k) + η K), from α = 0.
Vector penalised_mle(Problem p, double lambda, const Quadrature& q) {
  p.f.alpha = Vector::Zero(p.f.points.rows());
  const Matrix K = p.f.gram(p.f.points), Kq = p.f.gram(q.x);
  for (int it = 0; it < 100; ++it) {
    const Vector g = objective_gradient(p, lambda, q);
    if (g.norm() < 1e-12) break;
    const Vector fx = p.f.values(q.x);
    Vector w = (lambda * (fx.array() - fx.maxCoeff())).exp();
    w /= w.sum();
    const Vector mean = Kq.transpose() * w;
    const Matrix H = lambda * (Kq.transpose() * w.asDiagonal() * Kq - mean * mean.transpose()) + p.eta * K;
    const Vector step = H.ldlt().solve(g);
    double t = 1.0;
    const double l0 = objective(p, p.f.alpha, lambda, q);
    while (t > 1e-8 && objective(p, p.f.alpha - t * step, lambda, q) > l0) t *= 0.5;
    p.f.alpha -= t * step;
  }
  return p.f.alpha;
}

// A density on the quadrature nodes, normalised: ∝ e^{λ f} on the box.
Vector box_density(const KernelExpansion& f, double lambda, const Quadrature& q) {
  const Vector fx = f.values(q.x);
  Vector p = (lambda * (fx.array() - fx.maxCoeff())).exp();
  return p / (p.sum() * q.h);
}

double hellinger(const Vector& p, const Vector& r, double h) {
  return std::sqrt(std::max(0.0, 1.0 - (p.array() * r.array()).sqrt().sum() * h));
}

// On a Gaussian target, DDE (sampler and dual learned, not exact) approaches the penalised MLE of its
// own problem (the same kernel centres, bandwidth, η, λ and data), computed here by Newton's method on
// the quadrature objective, and with it the target N(0.5, 0.8²) (truncated to the box: p0's support).
TEST(DdePenalisedMle, OnAGaussianTargetDdeApproachesThePenalisedMle) {
  RandomStream rng(3, "gaussian-target");
  const Matrix train = (0.8 * rng.normal_matrix(1000, 1)).array() + 0.5;
  const double eta = 1e-3;
  const auto fit = [&](long iterations) {
    const std::string keys = "type = \"dde\"\niterations = " + std::to_string(iterations) +
                             "\nwidth = 32\nnoise_dim = 8\ngenerator_depth = 3\ndual_depth = 3\n"
                             "learning_rate = 1e-3\ninducing_points = 30\neta = 0.001\n"
                             "diagnostic_samples = 0\nreport_every = 1000\n";
    auto est = std::make_unique<DdeEstimator>(test::config_from(keys));
    Context context = Context(7, 1).child("fit");
    FitReport report;
    const Matrix none(0, 1);
    FitInput in{train, none, context, report};
    return est->fit(in);
  };
  const ModelPtr start = fit(1), trained = fit(6000);
  const auto& m0 = dynamic_cast<const DdeModel&>(*start);
  const auto& m = dynamic_cast<const DdeModel&>(*trained);
  Problem p;
  p.lo = m.lo()(0);
  p.hi = m.hi()(0);
  p.f = m.expansion();
  p.batch = train;
  p.eta = eta;
  const Quadrature q = quadrature(p, 4000);
  const Vector alpha_star = penalised_mle(p, 1.0, q);
  KernelExpansion f_star = p.f;
  f_star.alpha = alpha_star;
  const Vector pmle = box_density(f_star, 1.0, q), dde = box_density(m.expansion(), 1.0, q),
               initial = box_density(m0.expansion(), 1.0, q);
  Vector target(q.x.rows());
  for (Index i = 0; i < q.x.rows(); ++i) target(i) = std::exp(-0.5 * std::pow((q.x(i, 0) - 0.5) / 0.8, 2));
  target /= target.sum() * q.h;
  const double h_start = hellinger(initial, pmle, q.h), h_end = hellinger(dde, pmle, q.h);
  const double h_pmle_target = hellinger(pmle, target, q.h), h_dde_target = hellinger(dde, target, q.h);
  // Measured (seed 7, 1 thread; 2026-11-25): Hellinger distance to the penalised MLE 0.416 after one
  // iteration, 0.045 after 3000 and 0.027 after 6000; the penalised MLE is 0.077 from the target (its
  // finite-sample error: 1000 rows, 30 centres), the trained DDE 0.081. The bounds leave about twice
  // the measured margin for other CPUs' rounding of the stochastic training.
  EXPECT_LT(h_end, 0.05) << "DDE vs the penalised MLE, after 6000 iterations (started at " << h_start << ")";
  EXPECT_LT(h_end, 0.15 * h_start);
  EXPECT_LT(h_pmle_target, 0.12) << "the penalised MLE vs the Gaussian target";
  EXPECT_LT(h_dde_target, h_pmle_target + 0.03) << "DDE vs the target, the penalised MLE's " << h_pmle_target;
  EXPECT_LT(h_dde_target, 0.3 * hellinger(initial, target, q.h));
}

}  // namespace
}  // namespace kef::dde
