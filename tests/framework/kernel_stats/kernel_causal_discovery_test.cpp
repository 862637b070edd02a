// PC with HSIC tests on GP-regression residuals (kef/kernel_causal_discovery.hpp): on a nonlinear,
// non-Gaussian structural causal model with a collider it recovers the true CPDAG, for 1 and 2 threads
// alike; bad input is refused.
#include "kernel_causal_discovery.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kef/error.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

KernelPtr gaussian(double sigma) {
  return test::plugin_registry().make_kernel(
      test::config_from("type = \"gaussian\"\nsigma = " + std::to_string(sigma)), {});
}

// x0 → x1 → x3 ← x2, with nonlinear links and uniform (non-Gaussian) noise.
Matrix collider_scm(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "scm");
  Matrix X(n, 4);
  auto noise = [&] { return 2 * rng.uniform() - 1; };
  for (Index i = 0; i < n; ++i) {
    X(i, 0) = 1.5 * noise();
    X(i, 1) = std::sin(1.5 * X(i, 0)) + 0.8 * noise();
    X(i, 2) = 1.5 * noise();
    X(i, 3) = 0.8 * X(i, 1) + 0.5 * X(i, 1) * X(i, 1) + std::tanh(2 * X(i, 2)) + 0.3 * noise();
  }
  return X;
}

TEST(KernelCausalDiscovery, RecoversTheCpdagOfANonlinearColliderForAnyThreadCount) {
  const Matrix X = collider_scm(300, 1);
  PartialGraph dag(4);
  dag.add_directed(0, 1);
  dag.add_directed(1, 3);
  dag.add_directed(2, 3);
  const PartialGraph truth = cpdag_of_dag(dag);
  ASSERT_EQ(truth.to_string(), "0 - 1; 1 -> 3; 2 -> 3");
  CausalDiscoveryOptions o;
  o.permutations = 200;
  const CausalDiscoveryResult one = discover_causal_structure(X, o, gaussian, Context(5, 1));
  EXPECT_EQ(one.pc.cpdag.to_string(), truth.to_string()) << "tests run: " << one.pc.tests;
  EXPECT_GT(one.regressions, 0);
  const CausalDiscoveryResult two = discover_causal_structure(X, o, gaussian, Context(5, 2));
  EXPECT_EQ(two.pc.cpdag, one.pc.cpdag);
  EXPECT_EQ(two.pc.tests, one.pc.tests);
  EXPECT_EQ(two.pc.separating, one.pc.separating);
}

TEST(KernelCausalDiscovery, BadInput) {
  CausalDiscoveryOptions o;
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               discover_causal_structure(Matrix::Ones(3, 2), o, gaussian, Context(1, 1));
                             }),
                             "3 rows"));
  Matrix X = collider_scm(20, 2);
  X(4, 1) = std::nan("");
  EXPECT_TRUE(test::contains(
      test::message_of<DataError>([&] { discover_causal_structure(X, o, gaussian, Context(1, 1)); }),
      "non-finite"));
}

}  // namespace
}  // namespace kef

namespace kef {
namespace {

namespace fs = std::filesystem;

// `kef test causal`: the CPDAG and the Hamming distance to the truth's, as JSON; bad truths exit 2.
TEST(KefTestCausal, PrintsTheCpdagAndTheDistanceToTheTruth) {
  const fs::path dir = test::temp_dir("kef-test-causal");
  const Matrix X = collider_scm(300, 1);
  std::string csv = "a,b,c,d\n";
  char buf[128];
  for (Index i = 0; i < X.rows(); ++i) {
    std::snprintf(buf, sizeof buf, "%.17g,%.17g,%.17g,%.17g\n", X(i, 0), X(i, 1), X(i, 2), X(i, 3));
    csv += buf;
  }
  const fs::path data = test::write_file(dir, "scm.csv", csv);
  const fs::path truth = test::write_file(dir, "truth.csv", "a,b,c,d\n0,1,0,0\n0,0,0,1\n0,0,0,1\n0,0,0,0\n");
  const auto r = test::kef_cmd("test causal " + data.string() + " --truth " + truth.string() +
                               " --permutations 100 --json --seed 3");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["truth_cpdag"], "a - b; b -> d; c -> d");
  EXPECT_EQ(j["cpdag"], j["truth_cpdag"]);
  EXPECT_EQ(j["structural_hamming_distance"].get<Index>(), 0);
  EXPECT_GT(j["tests"].get<Index>(), 0);
  const fs::path cyclic =
      test::write_file(dir, "cyclic.csv", "a,b,c,d\n0,1,0,0\n1,0,0,0\n0,0,0,1\n0,0,0,0\n");
  const auto bad = test::kef_cmd("test causal " + data.string() + " --truth " + cyclic.string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_TRUE(test::contains(bad.output, "--truth")) << bad.output;
  const fs::path small = test::write_file(dir, "small.csv", "a,b\n0,1\n1,0\n");
  const auto wrong = test::kef_cmd("test causal " + data.string() + " --truth " + small.string());
  EXPECT_EQ(wrong.status, 2) << wrong.output;
  EXPECT_TRUE(test::contains(wrong.output, "expected 4 x 4")) << wrong.output;
}

}  // namespace
}  // namespace kef
