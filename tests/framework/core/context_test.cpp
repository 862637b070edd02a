// kef::Context: the thread count validated once, children whose streams are the ones kef 0.2 gave the
// same components (so results do not move), progress labelled with what runs, and a fit and an
// evaluation that are bitwise the same for 1, 2 and 3 threads when they receive a Context.
#include "kef/context.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kef/error.hpp"
#include "kef/parallel.hpp"
#include "kef/pipeline.hpp"
#include "test_support.hpp"

namespace kef::context_test {
namespace {

std::vector<std::uint64_t> draws(RandomStream rng, int n = 8) {
  std::vector<std::uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(rng());
  return out;
}

std::string config_error_of(int threads, const char* key) {
  try {
    Context c(1, threads, nullptr, key);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Context, NegativeThreadsAreAConfigErrorNamingTheKey) {
  const std::string m = config_error_of(-3, "--threads");
  EXPECT_NE(m.find("--threads"), std::string::npos) << m;
  EXPECT_NE(m.find("got -3"), std::string::npos) << m;
  EXPECT_EQ(config_error_of(-1, "threads").rfind("threads:", 0), 0u) << config_error_of(-1, "threads");
  EXPECT_EQ(config_error_of(1, "--threads"), "");
  EXPECT_THROW(Context::resolve_threads(-1, "x"), ConfigError);
}

TEST(Context, ZeroThreadsMeansTheDefaultAndChildrenKeepTheCount) {
  EXPECT_EQ(Context(1, 0).threads(), default_threads());
  EXPECT_EQ(Context(1, 3).threads(), 3);
  EXPECT_EQ(Context(1, 3).child("model.m.fit").child("x").child(std::uint64_t{2}).threads(), 3);
}

TEST(Context, RootChildrenAreThePathStreamsOfKef02) {
  const Context run(12, 2);
  EXPECT_TRUE(run.is_root());
  for (const char* path : {"model.lite-gaussian.fit", "evaluate[0].lite-gaussian", "eval", "sample"}) {
    const Context c = run.child(path);
    EXPECT_FALSE(c.is_root());
    EXPECT_EQ(draws(c.rng()), draws(RandomStream(12, path))) << path;
  }
  // Same path, same stream; another path or another seed, another stream.
  EXPECT_EQ(draws(run.child("model.a.fit").rng()), draws(run.child("model.a.fit").rng()));
  EXPECT_NE(draws(run.child("model.a.fit").rng()), draws(run.child("model.b.fit").rng()));
  EXPECT_NE(draws(run.child("model.a.fit").rng()), draws(Context(13, 2).child("model.a.fit").rng()));
  // The thread count is not part of the stream.
  EXPECT_EQ(draws(Context(12, 1).child("model.a.fit").rng()),
            draws(Context(12, 3).child("model.a.fit").rng()));
}

TEST(Context, NestedChildrenDeriveFromTheirParentsStream) {
  Context fit = Context(5, 2).child("model.m.fit");
  const RandomStream parent = fit.rng();
  const std::vector<std::uint64_t> by_name = draws(parent.derive("cluster"));
  const std::vector<std::uint64_t> by_index = draws(parent.derive(std::uint64_t{3}));
  (void)fit.rng()();  // how far the parent has drawn does not matter
  EXPECT_EQ(draws(fit.child("cluster").rng()), by_name);
  EXPECT_EQ(draws(fit.child(std::uint64_t{3}).rng()), by_index);
  EXPECT_EQ(draws(fit.child("cluster").child(std::uint64_t{1}).child("fit").rng()),
            draws(parent.derive("cluster").derive(std::uint64_t{1}).derive("fit")));
  EXPECT_NE(draws(fit.child("cluster").rng()), draws(fit.child("clusters").rng()));
  EXPECT_NE(draws(fit.child(std::uint64_t{0}).rng()), draws(fit.child(std::uint64_t{1}).rng()));
  // A copy draws the same numbers as the original, independently of it.
  Context copy = fit;
  EXPECT_EQ(copy.rng()(), fit.rng()());
}

struct Recorder final : Progress {
  std::vector<std::string> lines;
  void update(std::string_view task, double, std::string_view message) override {
    lines.push_back("update " + std::string(task) + ": " + std::string(message));
  }
  void done(std::string_view task, std::string_view message) override {
    lines.push_back("done " + std::string(task) + ": " + std::string(message));
  }
};

TEST(Context, ProgressNamesWhatRuns) {
  Recorder sink;
  const Context run(1, 1, &sink);
  run.progress().done("run", "started");
  const Context fit = run.child("model.m.fit", "model m");
  fit.progress().update("lite system", 0.5, "half");
  fit.child("cluster").child(std::uint64_t{2}, "cluster 2").progress().done("dkef stage 1", "ok");
  fit.child("unlabelled").progress().update("x", -1, "");
  EXPECT_EQ(sink.lines, (std::vector<std::string>{"done run: started", "update model m / lite system: half",
                                                  "done model m / cluster 2 / dkef stage 1: ok",
                                                  "update model m / x: "}));
  EXPECT_EQ(fit.label(), "model m");
  // Without a sink, reporting is silent (and does not crash).
  Context(1, 1).child("a", "b").progress().update("t", 0.1, "m");
}

TEST(Context, RunOptionsRefuseNegativeThreadsBeforeAnyWork) {
  RunOptions o;
  o.threads = -2;
  o.quiet = true;
  const std::string quickstart = std::string(KEF_TEST_SOURCE_DIR) + "/configs/quickstart.toml";
  for (auto call : {+[](const std::string&p, const RunOptions&r) { validate_pipeline(p, r); },
                    +[](const std::string&p, const RunOptions&r) { (void)run_pipeline(p, r); }}) {
    try {
      call(quickstart, o);
      ADD_FAILURE() << "negative threads accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--threads"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("got -2"), std::string::npos) << e.what();
    }
  }
}

// A fit and an evaluation through the plugin interfaces, handed contexts that differ only in their
// thread count: bitwise the same model and metrics. The lite fit draws its inducing points from the
// context's stream; the log-likelihood evaluator draws importance-sampling proposals in chunks.
struct Outcome {
  Vector log_density;
  std::vector<std::pair<std::string, double>> metrics;
};

Outcome fit_and_evaluate(int threads) {
  Registry& reg = test::plugin_registry();
  RandomStream data_rng(21, "data");
  Dataset data;
  data.train = data_rng.normal_matrix(1500, 2);
  data.validation = Matrix(0, 2);
  data.test = data_rng.normal_matrix(400, 2);
  auto kernel = reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.5"), {});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 3.0"), {});
  auto est =
      reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = 60\nlambda_alpha = 1e-3"),
                         EstimatorParts{kernel, base, &reg}, {});
  const Context run(7, threads);
  Context fit_context = run.child("model.m.fit", "model m");
  FitReport report;
  ModelPtr model = est->fit(FitInput{data.train, data.validation, fit_context, report});
  RandomStream init(7, "evaluate[0].init");
  auto evaluator = reg.make_evaluator(
      test::config_from(
          "type = \"log_likelihood\"\nmethod = \"importance\"\nsamples = 40000\nchunk_size = 1000\n"
          "check = \"none\""),
      BuildContext{2, &reg, &init, data.train.rows()});
  Context eval_context = run.child("evaluate[0].m", "evaluate[0] on model m");
  const EvaluationResult r = evaluator->evaluate(EvalInput{*model, "m", data, eval_context});
  Outcome out{model->log_unnormalized(data.test), {}};
  for (const auto& m : r.metrics)  // every metric but the timing
    if (m.first != "proposals_per_second") out.metrics.push_back(m);
  return out;
}

TEST(Context, FitAndEvaluationAreBitwiseTheSameForOneTwoAndThreeThreads) {
  const Outcome one = fit_and_evaluate(1);
  ASSERT_GE(one.metrics.size(), 5u);  // log_likelihood, log_normalizer and its diagnostics
  for (int threads : {2, 3}) {
    const Outcome many = fit_and_evaluate(threads);
    EXPECT_EQ(many.log_density, one.log_density) << threads << " threads";
    EXPECT_EQ(many.metrics, one.metrics) << threads << " threads";
  }
}

}  // namespace
}  // namespace kef::context_test
