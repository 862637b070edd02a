#pragma once
// The `fssd` and `relative_fssd` evaluators: test locations and bandwidth from the keys, then the
// statistics of fssd.hpp on the chosen split.
#include <optional>
#include <string>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::stein {

KeyList fssd_keys();
KeyList relative_fssd_keys();

class FssdEvaluator final : public Clonable<FssdEvaluator, Evaluator> {
 public:
  // relative: the `relative_fssd` evaluator (two models, locations "dkef" or "given").
  FssdEvaluator(const Config& cfg, const BuildContext& ctx, bool relative);
  EvaluationResult evaluate(const EvalInput& input) override;
  // J against the rows it is drawn from, and the split's size, before any model is fitted.
  void check(const DataShape& data) const override;

 private:
  Index locations_for(Index rows) const;  // J, checked against the rows it is drawn from

  KeySites sites_;
  Registry* registry_;
  bool relative_;
  std::string split_, mode_;
  std::optional<Index> J_;
  double noise_ = 0.2;
  std::optional<double> bandwidth_;
  BandwidthRule rule_;  // dkef locations without bandwidth_: median (default) or BKL
  Matrix given_;
  Index null_draws_ = 0;
  double train_fraction_ = 0.2, gamma_ = 1e-4, learning_rate_ = 0.05;
  Index steps_ = 0;
  // Locations (and the optimisation split) come from the evaluator's own stream, copied afresh for each
  // model, so that every model of one [[evaluate]] is tested at the same locations: their FSSD² are
  // comparable and relative_fssd is antisymmetric. Null draws use the per-model stream.
  std::optional<RandomStream> stream_;
};

}  // namespace kef::stein
