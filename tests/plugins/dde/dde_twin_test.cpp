// kef's DDE iteration against the anchor dde_torch.py, value by value: the same initial α, sampler and
// dual parameters, the same minibatch and the same ξ and uniform draws (fixtures/, written by
// make_twin_fixture.py, which runs the anchor's own DDE.iteration on them). One full iteration (one f
// step, 5 × (3 ν steps, 1 sampler step)) must give the anchor's updated parameters to 1e-10 relative,
// in three settings: the code's (sampler unclipped), the paper's (every update clipped, at a norm small
// enough that the clip acts), and λ = 2 with an RKHS penalty η = 0.01.
#include <gtest/gtest.h>

#include <string>

#include "dde_core.hpp"
#include "dde_estimator.hpp"
#include "kef/npy.hpp"

namespace kef::dde {
namespace {

const std::string kDir = KEF_DDE_FIXTURES;

Matrix fixture(const std::string& name) { return read_npy(kDir + "/" + name + ".npy"); }
Vector fixture_vector(const std::string& name) { return fixture(name).col(0); }

// max |a − b| / max |b|
double relative_error(const Vector& a, const Vector& b) {
  return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

struct Case {
  const char* name;
  double lambda, eta, clip;
  bool clip_generator;
};

class DdeTwin : public ::testing::TestWithParam<Case> {};

TEST_P(DdeTwin, OneIterationMatchesTheAnchor) {
  const Case c = GetParam();
  const Matrix X = fixture("X"), batch = fixture("batch"), xi = fixture("xi"), u = fixture("u");
  const double gamma = fixture("gamma")(0, 0);
  // kef's own bandwidth rule gives the gamma the driver gave the anchor.
  EXPECT_NEAR(bandwidth_gamma(X, 0.1), gamma, 1e-14 * gamma);

  Architecture arch{2, 16, 32, 4, 3};
  KernelExpansion f{X, fixture_vector("alpha0"), gamma};
  network::Network g = make_generator(arch), nu = make_dual(arch);
  g.set_parameters(fixture_vector("generator0"));
  nu.set_parameters(fixture_vector("dual0"));
  TrainerOptions o;
  o.lambda = c.lambda;
  o.eta = c.eta;
  o.clip = c.clip;
  o.clip_generator = c.clip_generator;
  Trainer t(f, g, nu, X.colwise().minCoeff().transpose(), X.colwise().maxCoeff().transpose(), o, "twin");

  const Index B = batch.rows();
  IterationDraws d;
  Index k = 0, ku = 0;
  auto next_xi = [&] { return Matrix(xi.middleRows((k++) * B, B)); };
  d.xi_f = next_xi();
  for (Index r = 0; r < o.rounds; ++r) {
    for (Index s = 0; s < o.dual_steps; ++s) {
      d.xi_dual.push_back(next_xi());
      d.u_dual.push_back(u.middleRows((ku++) * B, B));
    }
    d.xi_generator.push_back(next_xi());
  }
  ASSERT_EQ(k * B, xi.rows());
  ASSERT_EQ(ku * B, u.rows());

  const IterationLosses L = t.iteration(batch, d);
  const std::string p = c.name;
  const Vector a1 = fixture_vector(p + "_alpha1"), g1 = fixture_vector(p + "_generator1"),
               n1 = fixture_vector(p + "_dual1"), losses = fixture_vector(p + "_losses");
  const double ea = relative_error(t.f().alpha, a1), eg = relative_error(t.generator().parameters(), g1),
               en = relative_error(t.dual().parameters(), n1);
  EXPECT_LT(ea, 1e-10) << "alpha";
  EXPECT_LT(eg, 1e-10) << "generator";
  EXPECT_LT(en, 1e-10) << "dual";
  // The updates themselves (not only the parameters, which barely move in one iteration).
  const double ua = relative_error(t.f().alpha - fixture_vector("alpha0"), a1 - fixture_vector("alpha0")),
               ug = relative_error(t.generator().parameters() - fixture_vector("generator0"),
                                   g1 - fixture_vector("generator0")),
               un = relative_error(t.dual().parameters() - fixture_vector("dual0"),
                                   n1 - fixture_vector("dual0"));
  EXPECT_LT(ua, 1e-8) << "alpha update";
  EXPECT_LT(ug, 1e-8) << "generator update";
  EXPECT_LT(un, 1e-8) << "dual update";
  std::cout << p << ": relative error alpha " << ea << ", generator " << eg << ", dual " << en
            << "; of the updates " << ua << ", " << ug << ", " << un << "\n";
  // The anchor reports its f loss without the penalty and the last sampler loss (its λ multiplies ν).
  if (c.eta == 0.0) {
    EXPECT_NEAR(L.f, losses[0], 1e-12 * std::abs(losses[0]));
  }
  EXPECT_NEAR(L.generator, losses[1], 1e-10 * std::abs(losses[1]));
}

INSTANTIATE_TEST_SUITE_P(Anchor, DdeTwin,
                         ::testing::Values(Case{"code", 1.0, 0.0, 5.0, false},
                                           Case{"paper", 1.0, 0.0, 0.01, true},
                                           Case{"lambda_eta", 2.0, 0.01, 5.0, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kef::dde
