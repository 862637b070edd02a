// The conditional estimators through pipelines and the kef command: lscde and eps_kde fitted on
// [data] targets and scored by conditional_log_likelihood (checked against the fitted models' own
// log p(y | x) on the prepared test split), the quadrature normaliser against the exact one, and bad
// input (exit 2, the message naming the key).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "conditional_likelihood.hpp"
#include "kef/conditional_model.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
#include "lscde_model.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Matrix sine_rows(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "sine");
  Matrix R(n, 3);
  for (Index i = 0; i < n; ++i) {
    const double x = -3.0 + 6.0 * rng.uniform();
    R(i, 0) = x;
    R(i, 1) = rng.normal();  // an input the target ignores
    R(i, 2) = 5.0 + 2.0 * (std::sin(x) + (0.2 + 0.1 * std::abs(x)) * rng.normal());
  }
  return R;
}

std::string csv_text(const Matrix& X) {
  std::ostringstream csv;
  csv.precision(17);
  csv << "a,b,y\n";
  for (Index n = 0; n < X.rows(); ++n) csv << X(n, 0) << "," << X(n, 1) << "," << X(n, 2) << "\n";
  return csv.str();
}

std::string plugins_table() { return "[plugins]\npaths = [\"" + test::plugin_dir().string() + "\"]\n"; }

std::string pipeline(const std::string& data_keys, const std::string& lscde_keys, const std::string& eps_keys,
                     const std::string& eval_keys = "") {
  return "schema_version = 1\nseed = 2\n[data]\n" + data_keys +
         "\n[[model]]\nname = \"ls\"\n[model.estimator]\ntype = \"lscde\"\n" + lscde_keys +
         "\n[[model]]\nname = \"ek\"\n[model.estimator]\ntype = \"eps_kde\"\n" + eps_keys +
         "\n[[evaluate]]\ntype = \"conditional_log_likelihood\"\n" + eval_keys + "\n" + plugins_table();
}

const std::string kData = "targets = [\"y\"]\nstandardize = true\nsplit = { test = 0.5 }\n";

double metric(const Json& results, const std::string& model, const std::string& name) {
  for (const auto& e : results["models"][model]["metrics"].items())
    if (e.key() == name) return e.value().get<double>();
  // metrics may be grouped per evaluator
  for (const auto& ev : results["models"][model]["evaluations"])
    if (ev["metrics"].contains(name)) return ev["metrics"][name].get<double>();
  ADD_FAILURE() << "no metric " << name << " for " << model << ": " << results["models"][model].dump();
  return NAN;
}

TEST(ConditionalPipeline, TheLikelihoodIsTheFittedModelsMeanLogDensityOnTheTestPairs) {
  const Matrix R = sine_rows(300, 1);
  RunOptions options;
  options.quiet = true;
  const RunResult r = run_pipeline(Config::parse_string(pipeline(kData, "", ""), "p.toml"),
                                   InMemoryData{R, {"a", "b", "y"}}, options);
  const Json results = Json::parse(r.results_json);
  ASSERT_EQ(r.data.test.rows(), 150);
  const Matrix X = r.data.inputs(r.data.test), Y = r.data.targets(r.data.test);
  for (const auto& [name, model] : r.fitted) {
    const ConditionalModel& c = *model->conditional();
    const double direct = (c.log_unnormalized(X, Y) - *c.log_normalizer(X)).mean();
    // The model-space value is the standardised one; in data units only the target block's
    // log|det A_y| is added (p(y | x) = p_z(z_y | z_x)|det A_y|), not the whole map's log|det A|.
    EXPECT_NEAR(metric(results, name, "conditional_log_likelihood_standardized"), direct, 1e-12) << name;
    EXPECT_NEAR(metric(results, name, "conditional_nll"), -direct, 1e-12) << name;
    const double log_det_y = r.data.transform.target_log_abs_det();
    EXPECT_NE(log_det_y, r.data.transform.log_abs_det);
    EXPECT_NEAR(metric(results, name, "conditional_log_likelihood"), direct + log_det_y, 1e-12) << name;
  }
}

TEST(ConditionalPipeline, FitsAndMetricsDependOnTheSeedNotTheThreadCount) {
  const Matrix R = sine_rows(200, 9);
  const auto run = [&](int threads, int seed) {
    RunOptions options;
    options.quiet = true;
    options.threads = threads;
    options.overrides = {"seed=" + std::to_string(seed)};
    return run_pipeline(Config::parse_string(pipeline(kData, "", ""), "p.toml"),
                        InMemoryData{R, {"a", "b", "y"}}, options);
  };
  const RunResult one = run(1, 2), two = run(2, 2), other = run(1, 3);
  const Json a = Json::parse(one.results_json), b = Json::parse(two.results_json),
             c = Json::parse(other.results_json);
  for (const char* name : {"ls", "ek"}) {
    EXPECT_EQ(a["models"][name]["metrics"], b["models"][name]["metrics"]) << name;
    EXPECT_NE(a["models"][name]["metrics"], c["models"][name]["metrics"]) << name;
  }
  const Matrix X = one.data.inputs(one.data.test), Y = one.data.targets(one.data.test);
  for (std::size_t m = 0; m < 2; ++m)
    EXPECT_EQ(one.fitted[m].second->conditional()->log_unnormalized(X, Y),
              two.fitted[m].second->conditional()->log_unnormalized(X, Y));
}

TEST(ConditionalPipeline, QuadratureNormaliserMatchesTheExactOne) {
  RandomStream rng(3, "quad");
  const Matrix U = rng.normal_matrix(20, 2), V = rng.normal_matrix(20, 1);
  const lscde::LscdeModel m(U, V, Vector::LinSpaced(20, 0.1, 1.0), 0.4);
  const Matrix X = rng.normal_matrix(10, 2);
  const likelihood::QuadratureNormalizer q = likelihood::conditional_quadrature(m, X, -8.0, 8.0, 2001);
  const Vector exact = *m.log_normalizer(X);
  for (Index n = 0; n < 10; ++n) {
    EXPECT_NEAR(q.log_z[n], exact[n], 1e-9) << n;
    EXPECT_LT(q.error[n], 1e-6);
    EXPECT_LT(q.edge[n], 1e-12);
  }
  // A grid that misses most of the mass: the edge share says so, and the coarse grid disagrees.
  const likelihood::QuadratureNormalizer narrow = likelihood::conditional_quadrature(m, X, -0.3, 0.3, 9);
  EXPECT_GT(narrow.edge.maxCoeff(), 0.1);
  EXPECT_GT((narrow.log_z - exact).cwiseAbs().maxCoeff(), 0.1);

  // Through the pipeline: normalizer = "quadrature" against the exact value of the same fit.
  const Matrix R = sine_rows(200, 4);
  RunOptions options;
  options.quiet = true;
  const auto run = [&](const std::string& eval) {
    return Json::parse(run_pipeline(Config::parse_string(pipeline(kData, "basis = 50", "", eval), "p.toml"),
                                    InMemoryData{R, {"a", "b", "y"}}, options)
                           .results_json);
  };
  const Json exact_run = run(""), quad_run = run("normalizer = \"quadrature\"\nquadrature_points = 4001");
  for (const char* name : {"ls", "ek"}) {
    EXPECT_NEAR(metric(quad_run, name, "conditional_log_likelihood"),
                metric(exact_run, name, "conditional_log_likelihood"), 1e-6)
        << name;
    EXPECT_LT(metric(quad_run, name, "log_normalizer_error_max"), 1e-6) << name;
  }
}

struct Bad {
  std::string data, lscde, eps, key;
};

TEST(ConditionalPipeline, BadInputExitsWithStatusTwoNamingTheKey) {
  const fs::path dir = test::temp_dir("conditional-bad");
  test::write_file(dir, "data.csv", csv_text(sine_rows(60, 5)));
  const std::string file = "type = \"file\"\npath = \"data.csv\"\n";
  const std::vector<Bad> cases = {
      {file + "split = { test = 0.5 }\n", "", "", "targets"},           // no targets
      {file + "targets = [\"z\"]\n", "", "", "targets"},                // a missing column
      {file + "targets = [\"a\", \"b\", \"y\"]\n", "", "", "targets"},  // every column
      {file + "targets = [\"y\"]\nsplit = { test = 0.5 }\n", "basis = 31", "",
       "basis"},  // b > 30 training rows
      {file + "targets = [\"y\"]\n", "", "epsilon = 0.0", "epsilon"},
      {file + "targets = [\"y\"]\n", "", "epsilon = -1.0", "epsilon"},
      {file + "targets = [\"y\"]\n", "", "bandwidth = 0.0", "bandwidth"},
      {file + "targets = [\"y\"]\n", "sigma = -0.5", "", "sigma"},
      {file + "targets = [\"y\"]\n", "lambda = 0.0", "", "lambda"},
  };
  for (const Bad& b : cases) {
    const fs::path cfg = test::write_file(dir, "p.toml", pipeline(b.data, b.lscde, b.eps));
    for (const char* command : {"validate ", "run "}) {
      const std::string args =
          std::string(command) == "run " ? " --quiet --output " + (dir / "out").string() : "";
      const test::CommandResult r = test::kef_cmd(std::string(command) + cfg.string() + args);
      EXPECT_EQ(r.status, 2) << command << b.key << ": " << r.output;
      EXPECT_NE(r.output.find(b.key), std::string::npos) << command << b.key << ": " << r.output;
    }
  }
}

}  // namespace
}  // namespace kef
