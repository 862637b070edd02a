// The flow densities' own properties (plugins/flows, docs/math.md §15): parameter and input gradients
// against central differences, normalisation by quadrature, the inverse pass, and exact samples that
// pass a kernel two-sample test against the model's own density.
#include "flow_density.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "flow_model.hpp"
#include "kef/mmd_test.hpp"
#include "kef/network/batch_norm.hpp"
#include "test_support.hpp"

namespace kef::flows {
namespace {

struct Spec {
  const char* name;
  Index dim, layers, components;
  bool batch_norm;
  bool coupling = false;  // Real NVP
};

// A density with its initial parameters moved by `jitter`·N(0, 1) (so no test sits at the symmetric
// start), a standardisation that is not the identity, and, with batch norm, recorded statistics of
// a random training set.
FlowDensity make_density(const Spec& s, std::vector<Index> hidden, std::uint64_t seed, double jitter = 0.3) {
  FlowArchitecture a;
  a.dim = s.dim;
  a.hidden_units = std::move(hidden);
  a.layers = s.layers;
  a.components = s.components;
  a.batch_norm = s.batch_norm;
  a.coupling = s.coupling;
  RandomStream rng(seed, s.name);
  Vector shift = 0.5 * rng.normal_matrix(s.dim, 1).col(0);
  Vector scale = (0.3 * rng.normal_matrix(s.dim, 1).col(0)).array().exp();
  FlowDensity d(a, shift, scale, flow_degrees(a, false, nullptr));
  d.initialize(rng);
  d.set_parameters(d.parameters() + jitter * rng.normal_matrix(d.parameter_count(), 1).col(0));
  if (s.batch_norm) d.record_batch_norm_statistics(rng.normal_matrix(200, s.dim) * scale.asDiagonal());
  return d;
}

const Spec kSpecs[] = {{"made", 3, 1, 0, false},         {"made_mog", 3, 0, 3, false},
                       {"maf", 3, 3, 0, false},          {"maf_mog", 3, 2, 2, false},
                       {"maf_bn", 3, 2, 0, true},        {"maf_mog_bn", 3, 2, 2, true},
                       {"real_nvp", 3, 3, 0, true, true}};

// d(−mean log p)/dθ by the reverse pass against central differences, in training mode (batch norm on
// the batch's statistics, which depend on θ and on every row) and in evaluation mode.
TEST(FlowDensity, ParameterGradientMatchesCentralDifferences) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(s.name);
    for (bool training : {true, false}) {
      FlowDensity d = make_density(s, {6, 5}, 11);
      RandomStream rng(12, "batch");
      const Matrix X = d.sample(17, rng);
      d.set_training(training);
      Vector grad;
      const double loss = d.loss_and_gradient(X, grad);
      EXPECT_NEAR(loss, -d.log_density(X).mean(), 1e-12 * std::abs(loss));
      const Vector theta = d.parameters();
      FlowDensity probe = d;
      const Vector num = test::numerical_gradient(
          [&](const Vector& t) {
            probe.set_parameters(t);
            return -probe.log_density(X).mean();
          },
          theta, 1e-6);
      const double err = (grad - num).cwiseAbs().maxCoeff() / num.cwiseAbs().maxCoeff();
      EXPECT_LT(err, 1e-7) << (training ? "training" : "evaluation");
      EXPECT_GT(grad.cwiseAbs().maxCoeff(), 1e-3);
    }
  }
}

// The score d log p/dx by the reverse pass against central differences of log p.
// The minibatch loss over row groups (two of 65 rows here; one with batch norm, whose statistics
// couple the rows): the same bits for 1 and 2 threads, and the brute-force twin, each group's
// one-group loss and gradient (tested above against central differences) weighted by its rows.
TEST(FlowDensity, LossOverRowGroupsIsTheWeightedGroupSumForAnyThreadCount) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(s.name);
    FlowDensity d = make_density(s, {6, 5}, 13);
    d.set_training(true);
    RandomStream rng(14, "rows");
    const Matrix X = rng.normal_matrix(130, s.dim);
    const Index groups = d.loss_groups(X.rows());
    EXPECT_EQ(groups, s.batch_norm ? 1 : 2);
    Vector g1, g2;
    const double l1 = d.loss_and_gradient(X, g1, 1), l2 = d.loss_and_gradient(X, g2, 2);
    EXPECT_EQ(l1, l2);
    ASSERT_EQ(g1.size(), g2.size());
    for (Index i = 0; i < g1.size(); ++i) ASSERT_EQ(g1[i], g2[i]) << i;
    if (groups == 1) continue;
    Vector ga, gb;
    const double la = d.loss_and_gradient(X.topRows(65), ga, 1),
                 lb = d.loss_and_gradient(X.bottomRows(65), gb, 1);
    EXPECT_NEAR(l1, 0.5 * (la + lb), 1e-13 * std::abs(l1));
    EXPECT_NEAR(l1, -d.log_density(X).mean(), 1e-12 * std::abs(l1));
    const Vector twin = 0.5 * (ga + gb);
    EXPECT_LT((g1 - twin).cwiseAbs().maxCoeff(), 1e-13 * twin.cwiseAbs().maxCoeff());
  }
}

TEST(FlowDensity, ScoreMatchesCentralDifferences) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(s.name);
    const FlowDensity d = make_density(s, {7, 6}, 21);
    RandomStream rng(22, "points");
    const Matrix X = d.sample(9, rng);
    Matrix score;
    const Vector lp = d.log_density_and_score(X, score);
    EXPECT_EQ(lp, d.log_density(X));
    for (Index i = 0; i < X.rows(); ++i) {
      const Vector num =
          test::numerical_gradient([&](const Vector& x) { return d.log_density(Matrix(x.transpose()))[0]; },
                                   X.row(i).transpose(), 1e-6);
      EXPECT_LT((score.row(i).transpose() - num).norm(), 1e-7 * std::max(1.0, num.norm())) << "row " << i;
    }
  }
}

// Forward mode (Network::forward_stack through every layer): the score equals the reverse pass's, the
// diagonal of the Hessian equals central differences of the reverse-mode score.
TEST(FlowDensity, LaplacianMatchesCentralDifferencesOfTheScore) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(s.name);
    const FlowDensity d = make_density(s, {7, 6}, 25);
    RandomStream rng(26, "points");
    const Matrix X = d.sample(9, rng);
    Matrix score, fwd_score, lap;
    const Vector lp = d.log_density_and_score(X, score);
    const Vector lp_fwd = d.log_density_score_laplacian(X, fwd_score, lap);
    EXPECT_LT((lp_fwd - lp).cwiseAbs().maxCoeff(), 1e-12 * lp.cwiseAbs().maxCoeff());
    EXPECT_LT((fwd_score - score).cwiseAbs().maxCoeff(), 1e-11 * std::max(1.0, score.cwiseAbs().maxCoeff()));
    const double h = 1e-5;
    for (Index i = 0; i < X.rows(); ++i)
      for (Index j = 0; j < X.cols(); ++j) {
        Matrix xp = X.row(i), xm = X.row(i), sp, sm;
        xp(0, j) += h;
        xm(0, j) -= h;
        d.log_density_and_score(xp, sp);
        d.log_density_and_score(xm, sm);
        const double num = (sp(0, j) - sm(0, j)) / (2 * h);
        EXPECT_NEAR(lap(i, j), num, 1e-6 * std::max(1.0, std::abs(num)))
            << "row " << i << " coordinate " << j;
      }
  }
}

// from_base inverts to_base (the autoregressive inverse pass, batch norm inverted with its statistics).
TEST(FlowDensity, InversePassInvertsTheFlow) {
  for (const Spec& s : kSpecs) {
    if (s.layers == 0) continue;
    SCOPED_TRACE(s.name);
    const FlowDensity d = make_density(s, {8, 8}, 31);
    RandomStream rng(32, "points");
    const Matrix X = 2.0 * rng.normal_matrix(50, s.dim);
    const Matrix back = d.from_base(d.to_base(X));
    EXPECT_LT((back - X).cwiseAbs().maxCoeff(), 1e-10);
  }
}

// Midpoint rule with G x G cells on the box [lo_0, hi_0] x [lo_1, hi_1]: ∫ p.
double integrate_2d(const FlowDensity& d, const Vector& lo, const Vector& hi, Index G) {
  const Vector h = (hi - lo) / static_cast<double>(G);
  Matrix grid(G * G, 2);
  for (Index i = 0; i < G; ++i)
    for (Index j = 0; j < G; ++j) grid.row(i * G + j) << lo[0] + (i + 0.5) * h[0], lo[1] + (j + 0.5) * h[1];
  return chunked_log_density(d, grid, 2).array().exp().sum() * h[0] * h[1];
}

// Every 2-D model integrates to 1. The box is the anchor's (--check): the range of 20000 of the
// model's samples widened by that range on each side. The midpoint rule's error is O(h²): doubling the
// cells per side must change the integral by less than the tolerance too (so the agreement is not a
// coincidence of one grid).
TEST(FlowDensity, TwoDimensionalModelsIntegrateToOne) {
  const Spec specs2[] = {{"made", 2, 1, 0, false},
                         {"made_mog", 2, 0, 3, false},
                         {"maf", 2, 3, 0, false},
                         {"maf_mog_bn", 2, 2, 3, true},
                         {"real_nvp", 2, 2, 0, true, true}};
  for (const Spec& s : specs2) {
    SCOPED_TRACE(s.name);
    const FlowDensity d = make_density(s, {10, 10}, 41);
    RandomStream rng(42, "box");
    const Matrix S = d.sample(20000, rng);
    const Vector smin = S.colwise().minCoeff().transpose(), smax = S.colwise().maxCoeff().transpose();
    const Vector lo = smin - (smax - smin), hi = smax + (smax - smin);
    const double coarse = integrate_2d(d, lo, hi, 400), fine = integrate_2d(d, lo, hi, 800);
    std::printf("%-10s integral %.8f (coarse %.8f) on [%.1f, %.1f] x [%.1f, %.1f]\n", s.name, fine, coarse,
                lo[0], hi[0], lo[1], hi[1]);
    RecordProperty(std::string(s.name) + "_integral", std::to_string(fine));
    EXPECT_NEAR(fine, 1.0, 1e-4);
    EXPECT_NEAR(coarse, fine, 1e-4);
  }
}

// Exact samples against the model's own density: 500 draws of the sampler against 500 draws from the
// density discretised on a fine grid (a cell with probability ∝ p at its midpoint, then uniform in the
// cell), MMD with a Gaussian kernel and 300 permutations; the test accepts at level 0.01. The same test
// rejects the draws of a wrong sampler (base draws scaled by 1.3), so it has power here.
TEST(FlowDensity, SamplesMatchTheModelDensity) {
  // (Real NVP with the larger jitter has a sharp, far-reaching ridge that a 500 x 500 grid does not
  // resolve; its smaller jitter keeps the grid's discretisation error below what the test can see.)
  for (const auto& [s, jitter] : {std::pair{Spec{"maf_mog", 2, 2, 3, false}, 0.3},
                                  std::pair{Spec{"real_nvp", 2, 2, 0, true, true}, 0.05}}) {
    SCOPED_TRACE(s.name);
    const FlowDensity d = make_density(s, {10, 10}, 51, jitter);
    // The grid covers the range of 20000 samples widened by that range on each side (as the quadrature
    // test); G x G cells.
    RandomStream box_draw(50, "box");
    const Matrix S = d.sample(20000, box_draw);
    const Vector smin = S.colwise().minCoeff().transpose(), smax = S.colwise().maxCoeff().transpose();
    const Vector lo = smin - (smax - smin), hi = smax + (smax - smin);
    const Index G = 500;
    const Vector h = (hi - lo) / static_cast<double>(G);
    Matrix grid(G * G, 2);
    for (Index i = 0; i < G; ++i)
      for (Index j = 0; j < G; ++j) grid.row(i * G + j) << lo[0] + (i + 0.5) * h[0], lo[1] + (j + 0.5) * h[1];
    const Vector p = chunked_log_density(d, grid, 2).array().exp();
    // The reference draws are only as good as the grid: it must hold the mass (resolution and box).
    const double mass = p.sum() * h[0] * h[1];
    std::printf("%-9s grid mass %.6f on [%.1f, %.1f] x [%.1f, %.1f]\n", s.name, mass, lo[0], hi[0], lo[1],
                hi[1]);
    EXPECT_NEAR(mass, 1.0, 1e-3);
    Vector cdf(p.size());
    double acc = 0;
    for (Index i = 0; i < p.size(); ++i) cdf[i] = acc += p[i];
    RandomStream rng(52, "grid-draws");
    const Index n = 500;
    Matrix Y(n, 2);
    for (Index k = 0; k < n; ++k) {
      const double t = rng.uniform() * acc;
      const Index c = std::lower_bound(cdf.data(), cdf.data() + cdf.size(), t) - cdf.data();
      Y.row(k) = grid.row(c);
      Y(k, 0) += (rng.uniform() - 0.5) * h[0];
      Y(k, 1) += (rng.uniform() - 0.5) * h[1];
    }
    RandomStream draw(53, "flow-draws");
    const Matrix X = d.sample(n, draw);
    auto kernel =
        test::plugin_registry().make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.0"), {});
    const Context ctx(1, 2);
    RandomStream perm(54, "permutations");
    const MmdTest same = mmd_test(*kernel, X, Y, 300, perm, ctx, 0, false);
    // A wrong sampler: base draws scaled by 1.3 pushed through the inverse flow (for maf_mog the mixture
    // base is skipped too, which makes it wrong twice over).
    RandomStream wrong_draw(55, "wrong");
    const Matrix W = d.from_base(1.3 * wrong_draw.normal_matrix(n, 2));
    RandomStream perm2(56, "permutations");
    const MmdTest wrong = mmd_test(*kernel, W, Y, 300, perm2, ctx, 0, false);
    std::printf("%-9s MMD p-value: exact sampler %.3f, wrong sampler %.4f\n", s.name, same.p_value,
                wrong.p_value);
    RecordProperty(std::string(s.name) + "_p_value_exact_sampler", std::to_string(same.p_value));
    RecordProperty(std::string(s.name) + "_p_value_wrong_sampler", std::to_string(wrong.p_value));
    EXPECT_GT(same.p_value, 0.01);
    EXPECT_LT(wrong.p_value, 0.01);
  }
}

// A 1-D flow: every MADE's hidden units see no input (a MADE's first conditional is unconditional), so
// each layer is an affine map and the mixture base a 1-D mixture; the density is still exact.
TEST(FlowDensity, OneDimensionalModelsAreExactDensities) {
  for (const Spec& s : {Spec{"maf", 1, 3, 0, true}, Spec{"maf_mog", 1, 2, 4, false}}) {
    SCOPED_TRACE(s.name);
    const FlowDensity d = make_density(s, {5}, 61);
    const Index G = 40000;
    const double lo = -40, hi = 40, h = (hi - lo) / static_cast<double>(G);
    Matrix x(G, 1);
    for (Index i = 0; i < G; ++i) x(i, 0) = lo + (i + 0.5) * h;
    EXPECT_NEAR(chunked_log_density(d, x, 2).array().exp().sum() * h, 1.0, 1e-6);
    RandomStream rng(62, "points");
    const Matrix X = d.sample(5, rng);
    EXPECT_LT((d.from_base(d.to_base(X)) - X).cwiseAbs().maxCoeff(), 1e-10);
  }
}

}  // namespace
}  // namespace kef::flows
