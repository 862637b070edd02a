// The sampler's correction and diagnostic: importance resampling picks candidates in proportion to
// their weights (and never a zero-weight one), the log weights are λ f − ν inside the box and −∞
// outside, the diagnostic equals its definition on the same draws and is exact (ESS 1, KL 0) when the
// weights are constant, and a corrected model returns sampler draws and keeps its setting through
// save and load.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dde_model.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "test_support.hpp"

namespace kef::dde {
namespace {

DdeModel random_model(std::uint64_t seed, double lambda = 1.5) {
  RandomStream rng(seed, "dde-sampler-model");
  Architecture a{2, 4, 8, 3, 3};
  KernelExpansion f{rng.normal_matrix(20, 2), rng.normal_matrix(20, 1).col(0), 0.8};
  network::Network g = make_generator(a), nu = make_dual(a);
  g.initialize(rng);
  nu.initialize(rng);
  return DdeModel(f, lambda, a, g, nu, Vector::Constant(2, -1.5), Vector::Constant(2, 1.5));
}

TEST(DdeSampler, ResamplingFollowsTheWeights) {
  Matrix cand(4, 1);
  cand << 0, 1, 2, 3;
  const double inf = std::numeric_limits<double>::infinity();
  Vector lw(4);
  lw << std::log(0.2) + 7, -inf, std::log(0.3) + 7, std::log(0.5) + 7;  // a common offset cancels
  RandomStream rng(3, "resample");
  const Index n = 40000;
  const Matrix out = importance_resample(cand, lw, n, rng);
  double count[4] = {0, 0, 0, 0};
  for (Index k = 0; k < n; ++k) count[static_cast<int>(out(k, 0))] += 1;
  EXPECT_EQ(count[1], 0.0);
  const double p[4] = {0.2, 0.0, 0.3, 0.5};
  for (int i : {0, 2, 3}) {
    const double sd = std::sqrt(n * p[i] * (1 - p[i]));
    EXPECT_NEAR(count[i], n * p[i], 5 * sd) << i;
  }
  Vector none = Vector::Constant(4, -inf);
  EXPECT_THROW(importance_resample(cand, none, 3, rng), NumericalError);
  lw[0] = std::nan("");
  EXPECT_THROW(importance_resample(cand, lw, 3, rng), NumericalError);
}

TEST(DdeSampler, LogWeightsAreLambdaFMinusNuInsideTheBox) {
  const DdeModel m = random_model(1);
  Matrix X(3, 2);
  X << 0.1, -0.2, 1.0, 1.4, 2.0, 0.0;  // the last row is outside [-1.5, 1.5]²
  const Vector lw = m.log_importance_weights(X);
  for (Index i = 0; i < 2; ++i) {
    const double direct = 1.5 * m.expansion().values(X.row(i))[0] - m.dual().value(X.row(i))(0, 0);
    EXPECT_NEAR(lw[i], direct, 1e-14 * (1 + std::abs(direct)));
  }
  EXPECT_EQ(lw[2], -std::numeric_limits<double>::infinity());
}

TEST(DdeSampler, DiagnosticMatchesItsDefinition) {
  const DdeModel m = random_model(2);
  RandomStream a(5, "diag"), b(5, "diag");
  const SamplerDiagnostic d = m.diagnose(3000, a);
  const Vector lw = m.log_importance_weights(m.sampler_draws(3000, b));
  double k = 0, s1 = 0, s2 = 0, sl = 0;
  for (Index i = 0; i < lw.size(); ++i)
    if (std::isfinite(lw[i])) {
      k += 1;
      s1 += std::exp(lw[i]);
      s2 += std::exp(2 * lw[i]);
      sl += lw[i];
    }
  EXPECT_GT(k, 0);
  EXPECT_NEAR(d.outside_box, 1.0 - k / 3000.0, 1e-15);
  EXPECT_NEAR(d.ess_fraction, s1 * s1 / (k * s2), 1e-12);
  EXPECT_NEAR(d.kl, std::log(s1 / k) - sl / k, 1e-10);
  EXPECT_GE(d.kl, 0.0);  // Jensen
}

// f = 0 and ν constant: every weight is the same, so the sampler is exactly the model (up to the
// constant): ESS 100 %, KL 0; a sampler collapsed onto the box's centre is inside everywhere.
TEST(DdeSampler, ConstantWeightsGiveAPerfectDiagnostic) {
  DdeModel base = random_model(3);
  KernelExpansion f = base.expansion();
  f.alpha.setZero();
  network::Network g = base.generator(), nu = base.dual();
  Vector gp = g.parameters(), np = nu.parameters();
  // The last dense layer's slice: W then b; zero W, set b.
  const Index gl = g.layer_count() - 1, nl = nu.layer_count() - 1;
  gp.tail(gp.size() - g.parameter_offset(gl)).setZero();
  np.tail(np.size() - nu.parameter_offset(nl)).setZero();
  np[np.size() - 1] = 0.3;
  g.set_parameters(gp);
  nu.set_parameters(np);
  const DdeModel m(f, 1.0, base.architecture(), g, nu, base.lo(), base.hi());
  RandomStream rng(6, "diag");
  const SamplerDiagnostic d = m.diagnose(500, rng);
  EXPECT_EQ(d.outside_box, 0.0);
  EXPECT_NEAR(d.ess_fraction, 1.0, 1e-14);
  EXPECT_NEAR(d.kl, 0.0, 1e-14);
}

TEST(DdeSampler, CorrectedModelReturnsSamplerDrawsAndReloadsWithItsSetting) {
  DdeModel m = random_model(4);
  m.set_correction(SamplerCorrection{true, 5});
  RandomStream a(8, "draw"), b(8, "draw");
  const Matrix out = m.sample(40, a);
  const Matrix cand = m.sampler_draws(200, b);
  for (Index k = 0; k < out.rows(); ++k) {
    bool found = false;
    for (Index i = 0; i < cand.rows() && !found; ++i) found = cand.row(i) == out.row(k);
    EXPECT_TRUE(found) << k;
  }
  EXPECT_TRUE(std::isfinite(m.log_unnormalized(out).sum()));  // never a zero-weight draw
  const auto dir = test::temp_dir("dde-corrected") / "m";
  save_model(m, dir);
  const ModelPtr back = DdeModel::load(ModelReader(dir), test::plugin_registry());
  const auto& mb = dynamic_cast<const DdeModel&>(*back);
  EXPECT_TRUE(mb.correction().importance);
  EXPECT_EQ(mb.correction().candidates, 5);
  RandomStream c(8, "draw");
  EXPECT_EQ(mb.sample(40, c), out);
}

}  // namespace
}  // namespace kef::dde
