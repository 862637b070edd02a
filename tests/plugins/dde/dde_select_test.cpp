// select = "mmd": the fit keeps the iterate whose sampler is closest in MMD² to the compared rows. The
// comparisons draw from their own streams, so selecting changes nothing of the training itself: the
// selected model is bitwise the model of a fit stopped at the selected iteration, for both estimators.
// The MMD² is the unbiased statistic (checked against a double loop), its curve and the choice are
// reported, validation rows are used when there are any, and bad keys are refused naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "conditional_fit.hpp"
#include "dde_core.hpp"
#include "dde_estimator.hpp"
#include "dde_model.hpp"
#include "kef/conditional_model.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

// Two blobs, as the estimator tests'.
Matrix two_blobs(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "dde-select-blobs");
  Matrix X = 0.5 * rng.normal_matrix(n, 2);
  for (Index i = 0; i < n; i += 2) X(i, 0) += 2.0;
  return X;
}

test::Fitted fit_dde(const std::string& keys, const Matrix& train, const Matrix& validation,
                     std::uint64_t seed) {
  dde::DdeEstimator est(test::config_from(keys));
  Context context = Context(seed, 1).child("fit");
  test::Fitted f;
  FitInput in{train, validation, context, f.report};
  f.model = est.fit(in);
  return f;
}

const std::string kBase =
    "type = \"dde\"\nreport_every = 10\nwidth = 16\nnoise_dim = 8\nbatch_size = 40\nlearning_rate = 3e-3\n"
    "diagnostic_samples = 0\n";

double brute_mmd2(const Matrix& X, const Matrix& Y, double gamma) {
  const auto k = [&](const auto& a, const auto& b) { return std::exp(-gamma * (a - b).squaredNorm()); };
  double xx = 0, yy = 0, xy = 0;
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < X.rows(); ++j)
      if (i != j) xx += k(X.row(i), X.row(j));
  for (Index i = 0; i < Y.rows(); ++i)
    for (Index j = 0; j < Y.rows(); ++j)
      if (i != j) yy += k(Y.row(i), Y.row(j));
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < Y.rows(); ++j) xy += k(X.row(i), Y.row(j));
  const double n = static_cast<double>(X.rows()), m = static_cast<double>(Y.rows());
  return xx / (n * (n - 1)) + yy / (m * (m - 1)) - 2 * xy / (n * m);
}

TEST(DdeSelect, MmdIsTheUnbiasedStatistic) {
  RandomStream rng(3, "dde-select-mmd");
  const Matrix X = rng.normal_matrix(17, 3), Y = 3.0 + 1.3 * rng.normal_matrix(11, 3).array();
  for (const double gamma : {0.1, 0.7, 3.0}) {
    const double fast = dde::mmd2_unbiased(X, Y, gamma), slow = brute_mmd2(X, Y, gamma);
    EXPECT_NEAR(fast, slow, 1e-14 * (1.0 + std::abs(slow))) << gamma;
  }
  EXPECT_GT(dde::mmd2_unbiased(X, Y, 0.7), 0.0);  // means 3 apart: clearly positive
  EXPECT_THROW(dde::mmd2_unbiased(X.topRows(1), Y, 1.0), DataError);
}

TEST(DdeSelect, SelectedIterateIsTheFitStoppedThereBitwise) {
  const Matrix train = two_blobs(120, 1), probe = two_blobs(30, 2), none(0, 2);
  const std::string keys =
      kBase + "iterations = 80\nselect = \"mmd\"\nselect_every = 10\nselect_samples = 60\n";
  const test::Fitted a = fit_dde(keys, train, none, 5);
  const auto& curve = a.report.curves.at("selection_mmd2");
  ASSERT_EQ(curve.size(), 8u);
  EXPECT_EQ(curve.front().first, 10);
  EXPECT_EQ(curve.back().first, 80);
  long best = 0;
  double best_value = INFINITY;
  for (const auto& [it, v] : curve)
    if (v < best_value) best_value = v, best = it;
  EXPECT_EQ(a.report.values.at("selected_iteration"), static_cast<double>(best));
  EXPECT_EQ(a.report.values.at("selected_mmd2"), best_value);
  // The test means something only when an earlier iterate wins: these settings make one win.
  ASSERT_LT(best, 80) << "the last iterate was selected; choose settings where an earlier one wins";
  ASSERT_EQ(a.report.notes.size(), 1u);
  EXPECT_TRUE(test::contains(a.report.notes[0], "iteration " + std::to_string(best) + " of 80"))
      << a.report.notes[0];
  EXPECT_TRUE(test::contains(a.report.notes[0], "against 60 training rows")) << a.report.notes[0];

  const test::Fitted b = fit_dde(kBase + "iterations = " + std::to_string(best) + "\n", train, none, 5);
  const auto& ma = dynamic_cast<const dde::DdeModel&>(*a.model);
  const auto& mb = dynamic_cast<const dde::DdeModel&>(*b.model);
  EXPECT_EQ(ma.expansion().alpha, mb.expansion().alpha);
  EXPECT_EQ(ma.generator().parameters(), mb.generator().parameters());
  EXPECT_EQ(ma.dual().parameters(), mb.dual().parameters());
  EXPECT_EQ(a.model->log_unnormalized(probe), b.model->log_unnormalized(probe));
  // The saved model names the iterate it is.
  const auto dir = test::temp_dir("dde-select") / "m";
  save_model(*a.model, dir);
  std::ifstream manifest(dir / "model.toml");
  const std::string text((std::istreambuf_iterator<char>(manifest)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(test::contains(text, "selected_iteration = " + std::to_string(best))) << text;
  EXPECT_EQ(load_model(dir, test::plugin_registry())->log_unnormalized(probe),
            a.model->log_unnormalized(probe));
  // The training itself is the unselected fit's: the same loss curves up to the end.
  const test::Fitted c = fit_dde(kBase + "iterations = 80\n", train, none, 5);
  EXPECT_EQ(a.report.curves.at("f_loss"), c.report.curves.at("f_loss"));
  EXPECT_EQ(c.report.curves.count("selection_mmd2"), 0u);
  EXPECT_EQ(c.report.values.count("selected_iteration"), 0u);

  // With a validation split, its rows are compared (and the choice can differ).
  const Matrix validation = two_blobs(40, 9);
  const test::Fitted v = fit_dde(keys, train, validation, 5);
  EXPECT_TRUE(test::contains(v.report.notes[0], "against 40 validation rows")) << v.report.notes[0];
  EXPECT_NE(v.report.curves.at("selection_mmd2"), curve);
}

TEST(DdeSelect, ConditionalSelectedIterateIsTheFitStoppedThereBitwise) {
  const Matrix train = test::linear_gaussian(120, 1), probe = test::linear_gaussian(25, 2);
  const std::string base =
      "type = \"dde_conditional\"\nreport_every = 10\nwidth = 16\nnoise_dim = 8\nbatch_size = 40\n"
      "learning_rate = 3e-2\ndiagnostic_samples = 0\n";
  const test::Fitted a = test::fit_dde_conditional(
      base + "iterations = 80\nselect = \"mmd\"\nselect_every = 10\nselect_samples = 50\n", train, 5, 1);
  const long best = static_cast<long>(a.report.values.at("selected_iteration"));
  ASSERT_LT(best, 80) << "the last iterate was selected; choose settings where an earlier one wins";
  const test::Fitted b =
      test::fit_dde_conditional(base + "iterations = " + std::to_string(best) + "\n", train, 5, 1);
  const ConditionalModel& ca = *a.model->conditional();
  const ConditionalModel& cb = *b.model->conditional();
  const Matrix X = probe.rightCols(2), Y = probe.leftCols(1);
  EXPECT_EQ(ca.log_unnormalized(X, Y), cb.log_unnormalized(X, Y));
}

TEST(DdeSelect, BadKeysAreRefusedNamingTheKey) {
  for (const std::string bad : {"select = \"best\"", "select_every = 0", "select_samples = 1"}) {
    const std::string key = bad.substr(0, bad.find(' '));
    const std::string msg = test::message_of<ConfigError>(
        [&] { dde::DdeEstimator(test::config_from("type = \"dde\"\n" + bad + "\n")); });
    EXPECT_TRUE(test::contains(msg, key)) << bad << ": " << msg;
  }
}

}  // namespace
}  // namespace kef
