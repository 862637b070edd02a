#pragma once
// The evaluator `conditional_log_likelihood`: the mean of log p(y | x) over the pairs of a split, for
// models with the conditional facet (docs/math.md §17.3). log p = log p~(y | x) − log Z(x), with
// log Z(x) the model's exact normaliser when it has one; otherwise, for one target column, composite
// Simpson quadrature of p~(y | x) on a grid of y per x, with an error estimate (the change of log Z
// when the grid is halved, and the share of the integral in the grid's end cells); for more target
// columns without an exact normaliser it refuses (a config error), never a silent value.
#include <string>

#include "kef/conditional_model.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"

namespace kef::likelihood {

struct ConditionalKeys {
  std::string split;
  std::string normalizer;
  std::int64_t quadrature_points = 2001;
  double quadrature_margin = 1.0;
};
const OptionsSpec<ConditionalKeys>& conditional_likelihood_options();

// log Z(x_n) of every row of X by composite Simpson on the `points` (odd) grid over [lo, hi] of a 1-D y;
// error[n] = |log Z_points − log Z_(points+1)/2| (the same rule on every other node), edge[n] the
// share of the integral in the first and last cells.
struct QuadratureNormalizer {
  Vector log_z, error, edge;
};
QuadratureNormalizer conditional_quadrature(const ConditionalModel& model, const Matrix& X, double lo,
                                            double hi, Index points);

class ConditionalLikelihoodEvaluator final : public Clonable<ConditionalLikelihoodEvaluator, Evaluator> {
 public:
  explicit ConditionalLikelihoodEvaluator(const Config& cfg);
  EvaluationResult evaluate(const EvalInput& input) override;
  void check(const DataShape& data) const override;
  void check_model(const DataShape& data, const PlannedModel& model) const override;

 private:
  ConditionalKeys opt_;
  KeySites sites_;
};

}  // namespace kef::likelihood
