#include "kef/aggregated_test_report.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "kef/context.hpp"
#include "kef/error.hpp"

namespace kef {
namespace {

using AggJson = nlohmann::ordered_json;

AggJson agg_sample_json(const TestSample& s) {
  AggJson j;
  if (!s.file.empty()) j["file"] = s.file;
  j["rows"] = s.values->rows();
  j["columns"] = s.values->cols();
  return j;
}

AggJson agg_test_json(const AggregatedTest& t) {
  AggJson j;
  j["test"] = t.test;
  j["statistic"] = t.statistic;
  j["approximation"] = t.approximation;
  j["alpha"] = t.alpha;
  j["bootstrap_draws"] = t.bootstrap_draws;
  j["level_draws"] = t.level_draws;
  j["bisection_steps"] = t.bisection_steps;
  j["weights"] = t.weights;
  j["rows"] = t.rows;
  j["level_correction"] = t.level_correction;
  j["reject"] = t.reject;
  AggJson tests = AggJson::array();
  for (const SingleTest& s : t.tests) {
    AggJson e;
    e["kernel"] = s.kernel;
    e["bandwidth"] = s.bandwidth;
    if (std::isfinite(s.bandwidth_y)) e["bandwidth_y"] = s.bandwidth_y;
    e["weight"] = s.weight;
    e["statistic"] = s.statistic;
    e["quantile"] = s.quantile;
    e["p_value"] = s.p_value;
    e["threshold"] = s.threshold;
    e["reject"] = s.reject;
    tests.push_back(std::move(e));
  }
  j["single_tests"] = std::move(tests);
  return j;
}

// The request's options with the samples named as the caller's user gave them.
AggregateOptions agg_named(const AggregateRequest& r, const TestSample& x, const TestSample* y) {
  AggregateOptions o = r.options;
  o.x_name = x.what;
  if (y) o.y_name = y->what;
  return o;
}

// The head shared by the reports: which test, the samples and the seed, then the test's own part.
std::string agg_report(const char* kind, const TestSample& x, const TestSample* y, const AggregatedTest& t,
                       std::uint64_t seed) {
  AggJson j;
  j["test"] = kind;
  j["x"] = agg_sample_json(x);
  if (y) j["y"] = agg_sample_json(*y);
  j["seed"] = seed;
  j["aggregate"] = agg_test_json(t);
  return j.dump(2);
}

}  // namespace

std::string aggregated_test_json(const AggregatedTest& test) { return agg_test_json(test).dump(2); }

std::string aggregated_two_sample_json(const TestSample& x, const TestSample& y, const AggregateRequest& r) {
  Context context(r.seed, r.threads, nullptr, r.threads_key);
  RandomStream rng = context.rng().derive("two-sample").derive("aggregate");
  const AggregatedTest t = mmd_agg(*x.values, *y.values, agg_named(r, x, &y), rng, context);
  return agg_report("two-sample", x, &y, t, r.seed);
}

std::string aggregated_independence_json(const TestSample& x, const TestSample& y,
                                         const AggregateRequest& r) {
  Context context(r.seed, r.threads, nullptr, r.threads_key);
  RandomStream rng = context.rng().derive("independence").derive("aggregate");
  const AggregatedTest t = hsic_agg(*x.values, *y.values, agg_named(r, x, &y), rng, context);
  return agg_report("independence", x, &y, t, r.seed);
}

std::string aggregated_goodness_of_fit_json(const TestSample& x, const Matrix& scores,
                                            const std::string& model, const AggregateRequest& r) {
  Context context(r.seed, r.threads, nullptr, r.threads_key);
  RandomStream rng = context.rng().derive("goodness-of-fit").derive("aggregate");
  const AggregatedTest t = ksd_agg(*x.values, scores, agg_named(r, x, nullptr), rng, context);
  auto j = AggJson::parse(agg_report("goodness-of-fit", x, nullptr, t, r.seed));
  j["model"] = model;
  return j.dump(2);
}

}  // namespace kef
