// The full and Nyström estimators (plugins/nystrom, docs/math.md §6): value by value against the NumPy
// anchor, the equivalence of Nyström with every training row on the 2nD basis to the full solution, the
// exact difference on first derivatives alone, the Gaussian score, save/reload, threads and seeds, and
// bad input naming its key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kef/context.hpp"
#include "kef/derivative_basis.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "kef/score_matching.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = KEF_NYSTROM_FIXTURES;

struct Parts {
  std::string kernel = "type = \"gaussian\"\nsigma = 1.3";
  std::string base = "type = \"gaussian\"\nstd = 2.0";
};

EstimatorPtr make_estimator(const std::string& keys, const Parts& s = {}, Index dim = 2) {
  Registry& reg = test::plugin_registry();
  RandomStream rng(1, "build");
  auto kernel = reg.make_kernel(test::config_from(s.kernel), BuildContext{dim, &reg, &rng});
  auto base = reg.make_base_measure(test::config_from(s.base), BuildContext{dim, &reg});
  return reg.make_estimator(test::config_from(keys), EstimatorParts{kernel, base, &reg}, {});
}

ModelPtr fit(const Matrix& train, const std::string& keys, std::uint64_t seed = 7, int threads = 2,
             const Parts& s = {}, FitReport* report = nullptr) {
  auto est = make_estimator(keys, s, train.cols());
  Context context = Context(seed, threads).child("fit");
  FitReport local;
  Matrix empty(0, train.cols());
  FitInput in{train, empty, context, report ? *report : local};
  return est->fit(in);
}

std::string points_file(const Matrix& Z, const std::string& tag) {
  const fs::path p = test::temp_dir(tag) / "points.npy";
  write_npy(p, Z);
  return "inducing_points_file = \"" + p.string() + "\"\n";
}

double rel(const Matrix& a, const Matrix& b) { return (a - b).norm() / b.norm(); }

// Measured values recorded in the test XML (--gtest_output=xml), in scientific notation.
std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

// What a saved model holds: the basis points, the orders and one coefficient per atom.
struct Saved {
  DerivativeBasis basis;
  Vector coefficients;
};
Saved saved(const Model& model, int orders) {
  const fs::path dir = test::temp_dir("nystrom-saved") / "m";
  save_model(model, dir);
  Saved s;
  s.basis.points = read_npy(dir / "points.npy");
  s.basis.orders = orders == 2 ? std::vector<int>{1, 2} : std::vector<int>{1};
  s.coefficients = read_npy(dir / "coefficients.npy").col(0);
  return s;
}

// ---------------------------------------------------------------- against nystrom_numpy.py

// tests/plugins/nystrom/make_anchor_fixture.py ran the anchor on these rows (σ 1.3, λ 1e-3, q0 = N(0, 4 I)).
TEST(NystromFit, MatchesTheNumPyAnchorValueByValue) {
  const Matrix train = read_npy(kFixtures / "train.npy"), test_rows = read_npy(kFixtures / "test.npy");
  const std::string pts = "inducing_points_file = \"" + (kFixtures / "points.npy").string() + "\"\n";
  const Parts s;
  struct Case {
    const char* name;
    std::string keys;
  };
  for (const Case& c : {Case{"orders1", "type = \"nystrom\"\n" + pts},
                        Case{"orders12", "type = \"nystrom\"\norders = [1, 2]\n" + pts},
                        Case{"full", std::string("type = \"full\"\n")}}) {
    ModelPtr m = fit(train, c.keys, 7, 2, s);
    Matrix score, lap;
    m->score_and_laplacian(test_rows, score, lap);
    const Matrix f = m->log_ratio_to_base(test_rows);
    const std::string n = c.name;
    RecordProperty(n + "_score_rel", sci(rel(score, read_npy(kFixtures / (n + "_score.npy")))));
    EXPECT_LT(rel(score, read_npy(kFixtures / (n + "_score.npy"))), 1e-8) << n;
    EXPECT_LT(rel(lap, read_npy(kFixtures / (n + "_laplacian.npy"))), 1e-8) << n;
    EXPECT_LT(rel(f, read_npy(kFixtures / (n + "_f.npy"))), 1e-8) << n;
  }
}

// ---------------------------------------------------------------- full against Nyström (MATH.md §6)

struct Equivalence {
  Matrix train, held_out;
  double lambda = 1e-3;
};
Equivalence equivalence_data() {
  RandomStream rng(21, "equivalence");
  Equivalence e;
  Matrix sign = rng.normal_matrix(40, 1).array().sign().matrix();
  e.train = rng.normal_matrix(40, 2);
  e.train.col(0) = 1.5 * e.train.col(0) + 1.5 * sign;
  e.train.col(1) *= 0.7;
  e.held_out = 1.5 * rng.normal_matrix(30, 2);
  return e;
}

// The full solution lies in span{∂_i k(X_a, ·), ∂²_i k(X_a, ·)}: Nyström with m = n on that basis is the
// same function. Its system's condition number is about 1e13 (reported), so agreement is limited to
// roughly that times 1e-16 relative to the coefficients; the anchor gets 2e-7 on the same setting.
TEST(NystromFit, AllPointsOnTheSecondOrderBasisEqualsFull) {
  const Equivalence e = equivalence_data();
  const Parts s{"type = \"gaussian\"\nsigma = 1.0", "type = \"gaussian\"\nstd = 2.0"};
  ModelPtr full = fit(e.train, "type = \"full\"\n", 7, 2, s);
  FitReport report;
  ModelPtr ny =
      fit(e.train, "type = \"nystrom\"\norders = [1, 2]\nridge = 1e-14\n" + points_file(e.train, "eq12"), 7,
          2, s, &report);
  EXPECT_GT(report.values.at("condition"), 1e10) << "the 2nD basis is expected to be ill-conditioned";
  RecordProperty("score_rel", sci(rel(ny->score(e.held_out), full->score(e.held_out))));
  RecordProperty("condition", sci(report.values.at("condition")));
  EXPECT_LT(rel(ny->score(e.held_out), full->score(e.held_out)), 1e-6);
  // log p~ up to a constant: compare after removing the mean.
  Vector a = full->log_unnormalized(e.held_out), b = ny->log_unnormalized(e.held_out);
  a.array() -= a.mean();
  b.array() -= b.mean();
  EXPECT_LT((a - b).norm() / a.norm(), 1e-6);
}

// On first derivatives alone, Nyström with m = n minimises over S = span{∂_i k(X_a, ·)}, which does not
// hold ξ. Writing f* for the full solution, f* − f_S = −(I − P_S)ξ/λ (MATH.md §6), so
//   (a) f* − f_S is orthogonal to S: the two scores agree at every training row;
//   (b) off the training rows they differ (the part of ξ/λ outside S);
//   (c) J_λ(f_S) − J_λ(f*) = (λ/2)‖f* − f_S‖²_H > 0, with J_λ = J + (λ/2)‖f‖²_H.
TEST(NystromFit, FirstDerivativesAloneDifferByThePartOfXiOutsideTheirSpan) {
  const Equivalence e = equivalence_data();
  const Parts s{"type = \"gaussian\"\nsigma = 1.0", "type = \"gaussian\"\nstd = 2.0"};
  ModelPtr full = fit(e.train, "type = \"full\"\n", 7, 2, s);
  ModelPtr ny1 = fit(e.train, "type = \"nystrom\"\n" + points_file(e.train, "eq1"), 7, 2, s);
  const Matrix s_full = full->score(e.train), s_ny = ny1->score(e.train);
  RecordProperty("train_score_rel", sci(rel(s_ny, s_full)));
  RecordProperty("held_out_score_rel", sci(rel(ny1->score(e.held_out), full->score(e.held_out))));
  EXPECT_LT(rel(s_ny, s_full), 1e-6);                                     // (a)
  EXPECT_GT(rel(ny1->score(e.held_out), full->score(e.held_out)), 1e-2);  // (b)

  const Saved F = saved(*full, 2), N = saved(*ny1, 1);
  ASSERT_EQ(F.basis.points, N.basis.points);
  // f* − f_S over the 2nD atoms: the first-order coefficients differ, the second-order ones are −1/(nλ).
  Vector diff = F.coefficients;
  diff.head(N.coefficients.size()) -= N.coefficients;
  auto kernel = test::plugin_registry().make_kernel(test::config_from(s.kernel), {});
  const Matrix G = derivative_basis_gram(*kernel, F.basis);
  const double norm2_diff = diff.dot(G * diff);
  const double norm2_full = F.coefficients.dot(G * F.coefficients);
  DerivativeBasis first = F.basis;
  first.orders = {1};
  const double norm2_ny = N.coefficients.dot(derivative_basis_gram(*kernel, first) * N.coefficients);
  const Context ctx(1, 2);
  const double obj_full = score_matching_loss(*full, e.train, ctx) + 0.5 * e.lambda * norm2_full;
  const double obj_ny = score_matching_loss(*ny1, e.train, ctx) + 0.5 * e.lambda * norm2_ny;
  EXPECT_GT(obj_ny, obj_full);  // (c)
  EXPECT_GT(norm2_diff, 0.0);
  RecordProperty("objective_gap", sci(obj_ny - obj_full));
  RecordProperty("half_lambda_norm2_diff", sci(0.5 * e.lambda * norm2_diff));
  EXPECT_NEAR(obj_ny - obj_full, 0.5 * e.lambda * norm2_diff, 1e-6 * std::abs(obj_ny - obj_full));
}

// ---------------------------------------------------------------- known values, determinism

TEST(NystromFit, GaussianDataWithAWideKernelRecoversTheGaussianScore) {
  RandomStream rng(1, "gaussian-data");
  const Matrix train = rng.normal_matrix(3000, 2), test_rows = rng.normal_matrix(1000, 2);
  const Parts s{"type = \"gaussian\"\nsigma = 3.0", "type = \"gaussian\"\nstd = 3.0"};
  // With σ = 3 on unit-scale data the 40·2 derivative atoms are numerically dependent (Cholesky fails
  // outright): the pseudo-inverse, or a ridge, is what such a basis needs.
  for (const char* keys :
       {"type = \"nystrom\"\ninducing_points = 40\nlambda = 1e-4\nsolver = \"pinv\"",
        "type = \"nystrom\"\ninducing_points = 40\nlambda = 1e-4\norders = [1, 2]\nridge = 1e-12"}) {
    ModelPtr m = fit(train, keys, 3, 2, s);
    // The base measure alone has Fisher divergence ½ E‖x − x/9‖² ≈ 0.79 (lite's test): the fit removes it.
    const Matrix sc = m->score(test_rows);
    EXPECT_LT(0.5 * (sc + test_rows).rowwise().squaredNorm().mean(), 0.02) << keys;
    EXPECT_NEAR(score_matching_loss(*m, test_rows, Context(1, 2)), -1.0, 0.05) << keys;
  }
}

TEST(NystromFit, SavedModelsReloadBitwise) {
  RandomStream rng(2, "save");
  const Matrix train = rng.normal_matrix(120, 3), X = rng.normal_matrix(30, 3);
  for (const char* keys : {"type = \"nystrom\"\ninducing_points = 12\norders = [1, 2]\nridge = 1e-12",
                           "type = \"nystrom\"\ninducing_points = 12\ncomponents = 20", "type = \"full\""}) {
    ModelPtr m = fit(train, keys);
    const fs::path dir = test::temp_dir("nystrom-save") / "model";
    save_model(*m, dir);
    ModelPtr back = load_model(dir, test::plugin_registry());
    EXPECT_EQ(back->type_name(), "nystrom");
    EXPECT_EQ((back->log_unnormalized(X) - m->log_unnormalized(X)).cwiseAbs().maxCoeff(), 0.0) << keys;
    Matrix s1, l1, s2, l2;
    m->score_and_laplacian(X, s1, l1);
    back->score_and_laplacian(X, s2, l2);
    EXPECT_EQ((s1 - s2).cwiseAbs().maxCoeff(), 0.0) << keys;
    EXPECT_EQ((l1 - l2).cwiseAbs().maxCoeff(), 0.0) << keys;
    // score() and score_and_laplacian() agree, and the score is the gradient of log p~.
    EXPECT_EQ((m->score(X) - s1).cwiseAbs().maxCoeff(), 0.0);
    const double h = 1e-5;
    for (Index d = 0; d < 3; ++d) {
      Matrix Xp = X, Xm = X;
      Xp.col(d).array() += h;
      Xm.col(d).array() -= h;
      const Vector fd = (m->log_unnormalized(Xp) - m->log_unnormalized(Xm)) / (2 * h);
      EXPECT_LT((s1.col(d) - fd).cwiseAbs().maxCoeff(), 1e-6 * (1 + s1.col(d).cwiseAbs().maxCoeff())) << keys;
    }
  }
}

TEST(NystromFit, ComponentsKeepARandomSubsetOfPointCoordinatePairs) {
  RandomStream rng(5, "components");
  const Matrix train = rng.normal_matrix(200, 3);
  ModelPtr m = fit(train, "type = \"nystrom\"\ninducing_points = 10\ncomponents = 17");
  const Saved s = saved(*m, 1);
  EXPECT_EQ(s.coefficients.size(), 30);
  EXPECT_EQ((s.coefficients.array() != 0.0).count(), 17);
  ModelPtr other = fit(train, "type = \"nystrom\"\ninducing_points = 10\ncomponents = 17", 8);
  const Saved o = saved(*other, 1);
  EXPECT_GT(((s.coefficients.array() != 0.0) != (o.coefficients.array() != 0.0)).count(), 0) << "seeded";
}

TEST(NystromFit, ResultsDependOnTheSeedButNotOnThreads) {
  RandomStream rng(3, "data");
  const Matrix train = rng.normal_matrix(700, 2), X = rng.normal_matrix(20, 2);
  const std::string keys =
      "type = \"nystrom\"\ninducing_points = 25\norders = [1, 2]\nridge = 1e-12\nchunk_rows = 50";
  const Vector a = fit(train, keys, 5, 1)->log_unnormalized(X);
  for (int threads : {2, 3})
    EXPECT_EQ((fit(train, keys, 5, threads)->log_unnormalized(X) - a).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_GT((fit(train, keys, 6, 2)->log_unnormalized(X) - a).cwiseAbs().maxCoeff(), 0.0);
  const Vector f1 = fit(train.topRows(150), "type = \"full\"\nchunk_rows = 11", 5, 1)->log_unnormalized(X);
  EXPECT_EQ((fit(train.topRows(150), "type = \"full\"\nchunk_rows = 11", 5, 3)->log_unnormalized(X) - f1)
                .cwiseAbs()
                .maxCoeff(),
            0.0);
}

// ---------------------------------------------------------------- bad input

std::string config_error(const std::function<void()>& f) { return test::message_of<ConfigError>(f); }

TEST(NystromFit, BadInputIsAConfigErrorNamingTheKey) {
  const Matrix train = Matrix::Random(20, 2);
  std::string msg = config_error([&] { fit(train, "type = \"nystrom\"\ninducing_points = 21"); });
  EXPECT_TRUE(test::contains(msg, "inducing_points") && test::contains(msg, "only 20 training rows")) << msg;

  DataShape shape;
  shape.dim = 2;
  shape.train_rows = 20;
  msg = config_error(
      [&] { make_estimator("type = \"nystrom\"\ninducing_points = 5\ncomponents = 11")->check(shape); });
  EXPECT_TRUE(test::contains(msg, "components") && test::contains(msg, "only 10")) << msg;
  msg = config_error([&] { fit(train, "type = \"nystrom\"\ninducing_points = 5\ncomponents = 11"); });
  EXPECT_TRUE(test::contains(msg, "components")) << msg;

  const Parts deep{"type = \"deep_scalar\"\nlayers = 1\nwidth = 3", "type = \"gaussian\""};
  msg = config_error([&] { make_estimator("type = \"nystrom\"\ninducing_points = 5", deep)->check(shape); });
  EXPECT_TRUE(test::contains(msg, "deep_scalar") && test::contains(msg, "mixed derivatives")) << msg;
  msg = config_error([&] { make_estimator("type = \"full\"", deep)->check(shape); });
  EXPECT_TRUE(test::contains(msg, "deep_scalar")) << msg;

  // A basis point listed twice: the Cholesky system is singular without a ridge.
  Matrix dup(4, 2);
  dup << train.topRows(3), train.row(1);
  msg = config_error([&] { fit(train, "type = \"nystrom\"\n" + points_file(dup, "dup")); });
  EXPECT_TRUE(test::contains(msg, "ridge") && test::contains(msg, "singular")) << msg;
  EXPECT_NO_THROW(fit(train, "type = \"nystrom\"\nsolver = \"pinv\"\n" + points_file(dup, "dup2")));

  shape.train_rows = 5001;
  shape.dim = 4;
  msg = config_error([&] { make_estimator("type = \"full\"")->check(shape); });
  EXPECT_TRUE(test::contains(msg, "max_system") && test::contains(msg, "20004") && test::contains(msg, "GB"))
      << msg;
  msg = config_error([&] { fit(Matrix::Random(30, 2), "type = \"full\"\nmax_system = 50"); });
  EXPECT_TRUE(test::contains(msg, "max_system")) << msg;

  msg = config_error([&] { make_estimator("type = \"nystrom\"\ninducing_points = 3\norders = [2]"); });
  EXPECT_TRUE(test::contains(msg, "orders")) << msg;
  msg = config_error([&] { make_estimator("type = \"nystrom\""); });
  EXPECT_TRUE(test::contains(msg, "inducing_points")) << msg;
}

}  // namespace
}  // namespace kef
