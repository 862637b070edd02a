// Bad input to the Stein evaluators: each error names the key, the row or the dimensions.
#include <gtest/gtest.h>

#include <fstream>

#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "stein_test_util.hpp"

namespace kef::stein {
namespace {

using test_util::GaussianModel;

// Runs f and expects exception E whose message contains every one of `needles`.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<const char*> needles) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception: " << e.what();
  }
}

Dataset gaussian_data(Index n, Index d) {
  RandomStream rng(1, "errors");
  return test_util::test_data(rng.normal_matrix(n, d));
}

TEST(SteinErrors, MoreLocationsThanRows) {
  const Dataset data = gaussian_data(50, 2);
  GaussianModel m(2, 0.0, 1.0);
  auto dkef = test_util::make_evaluator("type = \"fssd\"", 2);  // default J = 100
  expect_error<ConfigError>([&] { test_util::run(*dkef, m, data, 1); }, {"locations", "100", "50 rows"});
  auto explicit_j = test_util::make_evaluator("type = \"fssd\"\nJ = 60", 2);
  expect_error<ConfigError>([&] { test_util::run(*explicit_j, m, data, 1); }, {"test:2:", "J = 60"});
  // optimized draws them from the training part (0.2 · 50 = 10 rows).
  auto opt = test_util::make_evaluator("type = \"fssd\"\nlocations = \"optimized\"\nJ = 11", 2);
  expect_error<ConfigError>([&] { test_util::run(*opt, m, data, 1); }, {"J = 11", "training part"});
}

TEST(SteinErrors, NonPositiveBandwidthAndBadKeys) {
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"fssd\"\nbandwidth = 0.0", 2); },
                            {"bandwidth"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"ksd\"\nbandwidth = -1.0", 2); },
                            {"bandwidth"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"relative_fssd\"\nbandwidth = 0", 2); },
                            {"bandwidth"});
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"ksd\"\nkernel = \"imq\"\nbandwidth = 1.0", 2); },
      {"bandwidth", "gaussian"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"ksd\"\nimq_beta = 0.0", 2); },
                            {"imq_beta"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"ksd\"\nimq_beta = 0.5", 2); },
                            {"imq_beta"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"ksd\"\nstatistic = \"w\"", 2); },
                            {"statistic"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"fssd\"\nnull_draws = -1", 2); },
                            {"null_draws"});
  expect_error<ConfigError>([] { test_util::make_evaluator("type = \"fssd\"\nJ = 0", 2); }, {"J"});
  expect_error<ConfigError>(
      [] {
        test_util::make_evaluator("type = \"fssd\"\nlocations = \"optimized\"\ntrain_fraction = 1.0", 2);
      },
      {"train_fraction"});
  // relative_fssd has no optimised locations.
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"relative_fssd\"\nlocations = \"optimized\"", 2); },
      {"locations"});
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"fssd\"\nlocations = \"given\"\nbandwidth = 1.0", 2); },
      {"locations"});
  // bandwidth_rule: median or bkl, not with a given bandwidth, not with the IMQ kernel or optimised
  // locations.
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"ksd\"\nbandwidth_rule = \"silverman\"", 2); },
      {"bandwidth_rule"});
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"ksd\"\nbandwidth = 1.0\nbandwidth_rule = \"bkl\"", 2); },
      {"bandwidth_rule"});
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"ksd\"\nkernel = \"imq\"\nbandwidth_rule = \"bkl\"", 2); },
      {"bandwidth_rule", "gaussian"});
  expect_error<ConfigError>(
      [] {
        test_util::make_evaluator("type = \"fssd\"\nlocations = \"optimized\"\nbandwidth_rule = \"bkl\"", 2);
      },
      {"bandwidth_rule"});
  expect_error<ConfigError>(
      [] { test_util::make_evaluator("type = \"fssd\"\nbandwidth = 1.0\nbandwidth_rule = \"median\"", 2); },
      {"bandwidth_rule"});
}

TEST(SteinErrors, GivenLocations) {
  const auto dir = kef::test::temp_dir("stein-locations");
  Matrix V(3, 2);
  V << 0, 0, 1, 0, 0, 1;
  write_npy(dir / "v.npy", V);
  {
    std::ofstream csv(dir / "v.csv");
    csv << "a,b,c\n0,0,0\n1,1,1\n";
  }
  const std::string npy = (dir / "v.npy").string(), csv = (dir / "v.csv").string();
  expect_error<ConfigError>(
      [&] {
        test_util::make_evaluator("type = \"fssd\"\nlocations = \"given\"\nlocations_file = \"" + npy + "\"",
                                  2);
      },
      {"bandwidth"});
  expect_error<ConfigError>(
      [&] {
        test_util::make_evaluator(
            "type = \"fssd\"\nlocations = \"given\"\nbandwidth = 1.0\nlocations_file = \"" + csv + "\"", 2);
      },
      {"locations_file", "dimension 3"});
  expect_error<ConfigError>(
      [&] {
        test_util::make_evaluator(
            "type = \"fssd\"\nlocations = \"given\"\nbandwidth = 1.0\nJ = 4\nlocations_file = \"" + npy +
                "\"",
            2);
      },
      {"J = 4", "3 rows"});
  expect_error<DataError>(
      [&] {
        test_util::make_evaluator(
            "type = \"fssd\"\nlocations = \"given\"\nbandwidth = 1.0\nlocations_file = \"" +
                (dir / "missing.npy").string() + "\"",
            2);
      },
      {"missing.npy"});
  // A correct file: the locations and bandwidth are the given ones.
  auto e = test_util::make_evaluator(
      "type = \"fssd\"\nlocations = \"given\"\nbandwidth = 0.7\nlocations_file = \"" + npy + "\"", 2);
  GaussianModel m(2, 0.0, 1.0);
  const auto r = test_util::run(*e, m, gaussian_data(40, 2), 1);
  EXPECT_EQ(r["fssd_locations"], 3.0);
  EXPECT_EQ(r["fssd_bandwidth"], 0.7);
}

TEST(SteinErrors, DimensionMismatchAndNonFiniteScores) {
  const Dataset data = gaussian_data(30, 2);
  GaussianModel three(3, 0.0, 1.0);
  for (const char* toml : {"type = \"fssd\"\nJ = 5", "type = \"ksd\"", "type = \"relative_fssd\"\nJ = 5"}) {
    auto e = test_util::make_evaluator(toml, 2);
    GaussianModel two(2, 0.0, 1.0);
    expect_error<DataError>([&] { test_util::run(*e, three, data, 1, 1, &two); },
                            {"dimension 3", "the data 2"});
  }
  // Row 7 gets a NaN score.
  Dataset bad = data;
  bad.test(7, 0) = 50.0;
  GaussianModel nan_model(Vector::Zero(2), 1.0, 10.0);
  for (const char* toml :
       {"type = \"fssd\"\nJ = 5", "type = \"ksd\"", "type = \"fssd\"\nlocations = \"optimized\"\nJ = 2"}) {
    auto e = test_util::make_evaluator(toml, 2);
    expect_error<NumericalError>([&] { test_util::run(*e, nan_model, bad, 1); },
                                 {"not finite at row 7", "test split"});
  }
  auto rel = test_util::make_evaluator("type = \"relative_fssd\"\nJ = 5", 2);
  GaussianModel fine(2, 0.0, 1.0);
  expect_error<NumericalError>([&] { test_util::run(*rel, fine, bad, 1, 1, &nan_model); },
                               {"model q", "row 7"});
  expect_error<ConfigError>([&] { test_util::run(*rel, fine, data, 1); }, {"against"});
  // An empty split names the key.
  auto val = test_util::make_evaluator("type = \"ksd\"\nsplit = \"validation\"", 2);
  expect_error<ConfigError>([&] { test_util::run(*val, fine, data, 1); }, {"split", "empty"});
}

}  // namespace
}  // namespace kef::stein
