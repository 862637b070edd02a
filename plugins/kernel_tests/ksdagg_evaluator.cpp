#include "ksdagg_evaluator.hpp"

#include <algorithm>
#include <sstream>

#include "kef/aggregated_test.hpp"
#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef::kernel_tests {
namespace {

AggregateOptions aggregate_options(const KsdAggOptions& o) {
  AggregateOptions a;
  a.alpha = o.alpha;
  a.bootstrap_draws = o.bootstrap_draws;
  a.level_draws = o.level_draws;
  a.bisection_steps = o.bisection_steps;
  a.bandwidths = o.number_bandwidths;
  a.weights = o.weights;
  return a;
}

}  // namespace

const OptionsSpec<KsdAggOptions>& ksdagg_options() {
  using O = KsdAggOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.bind(split_key("split whose rows are tested against the model"), &O::split);
    s.number("alpha", &O::alpha, "level of the aggregated test, in (0, 1)", 0.05).positive();
    s.integer("bootstrap_draws", &O::bootstrap_draws,
              "wild-bootstrap statistics for each single test's quantiles (B1)", 2000)
        .at_least(1);
    s.integer("level_draws", &O::level_draws, "wild-bootstrap statistics for the level correction (B2)", 2000)
        .at_least(1);
    s.integer("bisection_steps", &O::bisection_steps, "bisection steps of the level correction (B3)", 50)
        .at_least(1);
    s.integer("number_bandwidths", &O::number_bandwidths,
              "IMQ bandwidths, geometric from 1/D to max(2, the largest distance)/D", 10)
        .at_least(2);
    s.string("weights", &O::weights, "the level's share per bandwidth", std::string("uniform"))
        .one_of({"uniform", "decreasing", "increasing", "centred"});
    return s;
  }();
  return spec;
}

KsdAggEvaluator::KsdAggEvaluator(const Config& cfg) : opt_(ksdagg_options().read(cfg)), sites_(cfg) {
  if (!(opt_.alpha < 1)) sites_.fail("alpha", "must be in (0, 1), got " + number_text(opt_.alpha));
  // What the keys' own checks leave: whether B1 can reach the smallest single test's share of the level.
  try {
    check_aggregate_options(aggregate_options(opt_), AggregateKind::Ksd);
  } catch (const ConfigError& e) {
    sites_.fail("bootstrap_draws", e.what());
  }
}

void KsdAggEvaluator::check(const DataShape& data) const {
  const Index rows = data.rows(opt_.split);
  if (rows < 2)
    sites_.fail("split", "the " + opt_.split + " split has " + std::to_string(rows) +
                             " rows; the test needs at least 2");
}

EvaluationResult KsdAggEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = evaluation_rows(in, opt_.split, sites_, "ksdagg", 2);
  const Matrix S = in.model.score(X);
  check_finite(S, "ksdagg: the score of model " + in.model_name + " at the " + opt_.split + " rows");
  RandomStream rng = in.context.rng().derive("ksdagg");
  const AggregatedTest t = ksd_agg(X, S, aggregate_options(opt_), rng, in.context);
  EvaluationResult r;
  double smallest = 1;
  for (const SingleTest& s : t.tests) smallest = std::min(smallest, s.p_value / s.weight);
  r.metrics.emplace_back("ksdagg_reject", t.reject ? 1.0 : 0.0);
  r.metrics.emplace_back("ksdagg_level_correction", t.level_correction);
  // The smallest p-value over its weight: the test rejects when it is at most the level correction.
  r.metrics.emplace_back("ksdagg_min_weighted_pvalue", smallest);
  for (const SingleTest& s : t.tests)
    r.notes.push_back("imq bandwidth " + number_text(s.bandwidth, 6) + ": KSD² " +
                      number_text(s.statistic, 6) + ", quantile " + number_text(s.quantile, 6) +
                      ", p-value " + number_text(s.p_value, 4) + ", threshold " +
                      number_text(s.threshold, 4) + (s.reject ? ", rejects" : ""));
  std::ostringstream summary;
  summary << "ksdagg: " << (t.reject ? "reject" : "do not reject") << " at level "
          << number_text(opt_.alpha, 4) << " (" << X.rows() << " " << opt_.split << " rows, "
          << t.tests.size() << " bandwidths, level correction " << number_text(t.level_correction, 4) << ")";
  r.summary = summary.str();
  return r;
}

}  // namespace kef::kernel_tests
