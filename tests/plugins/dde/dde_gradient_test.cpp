// Every analytic gradient of DDE against central differences: the f step's in α (with the RKHS
// penalty), the dual's loss in ν's parameters, the sampler's loss in g's parameters (through f's kernel
// and ν, with λ ≠ 1), and the expansion's input gradient and diagonal second derivatives that the
// sampler's gradient and the model's score and Laplacian use.
#include <gtest/gtest.h>

#include "dde_core.hpp"
#include "expansion_check.hpp"
#include "test_support.hpp"

namespace kef::dde {
namespace {

Trainer make_trainer(const Architecture& arch, const Matrix& X, std::uint64_t seed) {
  RandomStream rng(seed, "dde-gradient");
  KernelExpansion f{X, 0.5 * rng.normal_matrix(X.rows(), 1).col(0), 0.7};
  network::Network g = make_generator(arch), nu = make_dual(arch);
  g.initialize(rng);
  nu.initialize(rng);
  // Non-zero biases, so that the gradient in every parameter is exercised.
  Vector gp = g.parameters(), np = nu.parameters();
  gp += 0.1 * rng.normal_matrix(gp.size(), 1).col(0);
  np += 0.1 * rng.normal_matrix(np.size(), 1).col(0);
  g.set_parameters(gp);
  nu.set_parameters(np);
  TrainerOptions o;
  o.lambda = 2.0;
  o.eta = 0.3;
  return Trainer(f, g, nu, X.colwise().minCoeff().transpose(), X.colwise().maxCoeff().transpose(), o, "test");
}

double relative(const Vector& a, const Vector& b) { return (a - b).norm() / b.norm(); }

TEST(DdeGradient, FStepInAlpha) {
  RandomStream rng(1, "data");
  const Matrix X = rng.normal_matrix(30, 2), batch = rng.normal_matrix(10, 2), xq = rng.normal_matrix(12, 2);
  Trainer t = make_trainer(Architecture{2, 5, 8, 4, 3}, X, 2);
  Vector g;
  t.f_loss(batch, xq, &g);
  const Vector alpha = t.f().alpha;
  const Vector num = test::numerical_gradient(
      [&](const Vector& a) {
        t.f().alpha = a;
        return t.f_loss(batch, xq, nullptr);
      },
      alpha);
  EXPECT_LT(relative(g, num), 1e-8);
}

TEST(DdeGradient, DualLossInNuParameters) {
  RandomStream rng(3, "data");
  const Matrix X = rng.normal_matrix(30, 2), xq = rng.normal_matrix(12, 2), xu = rng.normal_matrix(9, 2);
  Trainer t = make_trainer(Architecture{2, 5, 8, 4, 3}, X, 4);
  Vector g;
  t.dual_loss(xq, xu, &g);
  const Vector theta = t.dual().parameters();  // a copy: the differences move the network's
  const Vector num = test::numerical_gradient(
      [&](const Vector& p) {
        t.dual().set_parameters(p);
        return t.dual_loss(xq, xu, nullptr);
      },
      theta);
  EXPECT_LT(relative(g, num), 1e-8);
}

TEST(DdeGradient, SamplerLossInGeneratorParametersThroughKernelAndDual) {
  RandomStream rng(5, "data");
  const Matrix X = rng.normal_matrix(30, 2), xi = rng.normal_matrix(11, 5);
  Trainer t = make_trainer(Architecture{2, 5, 8, 4, 3}, X, 6);
  Vector g;
  t.generator_loss(xi, &g);
  const Vector theta = t.generator().parameters();  // a copy: the differences move the network's
  const Vector num = test::numerical_gradient(
      [&](const Vector& p) {
        t.generator().set_parameters(p);
        return t.generator_loss(xi, nullptr);
      },
      theta);
  EXPECT_LT(relative(g, num), 1e-8);
  EXPECT_GT(g.norm(), 0.0);
}

TEST(DdeGradient, ExpansionInputGradientAndLaplacian) {
  RandomStream rng(7, "data");
  KernelExpansion f{rng.normal_matrix(25, 3), rng.normal_matrix(25, 1).col(0), 0.4};
  const Matrix Y = rng.normal_matrix(6, 3);
  test_check::expect_derivatives_match_central_differences(f, Y);
  // Values against the definition, term by term.
  double direct = 0.0;
  for (Index i = 0; i < 25; ++i)
    direct += f.alpha[i] * std::exp(-0.4 * (Y.row(0) - f.points.row(i)).squaredNorm());
  EXPECT_NEAR(f.values(Y.row(0))[0], direct, 1e-14 * (1 + std::abs(direct)));
}

}  // namespace
}  // namespace kef::dde
