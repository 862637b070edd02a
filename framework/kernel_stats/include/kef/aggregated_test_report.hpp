#pragma once
// The aggregated kernel tests on samples in memory, as `kef test two-sample --aggregate`, `kef test
// independence --aggregate` and the Python functions run them: one function per test returning the
// report as JSON text, so both callers give the same bits for the same seed. The report holds, for
// every single test of the collection, its kernel, bandwidth(s), weight, statistic, quantile, p-value
// and threshold and whether it rejects, and the aggregated decision.
#include <cstdint>
#include <string>

#include "kef/aggregated_test.hpp"
#include "kef/kernel_tests.hpp"

namespace kef {

struct AggregateRequest {
  AggregateOptions options;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string threads_key = "--threads";
};

// MMDAgg of x against y. The draws come from the seed's stream "two-sample.aggregate".
std::string aggregated_two_sample_json(const TestSample& x, const TestSample& y,
                                       const AggregateRequest& request);
// HSICAgg of the paired rows of x and y; the stream "independence.aggregate".
std::string aggregated_independence_json(const TestSample& x, const TestSample& y,
                                         const AggregateRequest& request);
// KSDAgg of the rows of x against a model's score at them (`model` names the model for the report);
// the stream "goodness-of-fit.aggregate".
std::string aggregated_goodness_of_fit_json(const TestSample& x, const Matrix& scores,
                                            const std::string& model, const AggregateRequest& request);

// The test's own part of a report: its settings, the decision and the single tests (JSON text of one
// object).
std::string aggregated_test_json(const AggregatedTest& test);

}  // namespace kef
