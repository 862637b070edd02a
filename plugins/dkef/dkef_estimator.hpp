#pragma once
// DKEF training (Algorithm 1 of the ICML paper, docs/math.md §5): learn the kernel, the inducing points,
// log λ_α, log λ_C and q0's parameters by minimising the validation-batch score-matching loss of the
// closed-form fit on a training batch; early-stop on the validation split; tune λ with the kernel
// frozen; fit the final α on the whole fit split.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::dkef {

struct DkefOptions {
  std::int64_t inducing_points = 0, batch_fit = 0, batch_loss = 0, max_steps = 0, patience = 0,
               eval_every = 0, validation_fit_rows = 0, stage2_steps = 0, stage2_memory_mb = 0;
  double learning_rate = 0, init_log10_lambda = 0, train_noise_std = 0, gradient_clip_norm = 0;
  std::optional<std::vector<std::string>> train;  // absent: every group
};
const OptionsSpec<DkefOptions>& dkef_options();
KeyList dkef_keys();

// A stage-1 gradient after `gradient_clip_norm`: scaled so that its Euclidean norm over every learning
// parameter is at most max_norm (kef::clip_global_norm's rule), unchanged when max_norm is 0 (off).
struct ClippedGradient {
  Vector gradient;
  double norm = 0;       // the norm before clipping
  bool clipped = false;  // whether it was scaled down
};
ClippedGradient clip_stage1_gradient(Vector gradient, double max_norm);

class DkefEstimator final : public Estimator {
 public:
  DkefEstimator(const Config& cfg, const EstimatorParts& parts, Index train_rows);
  // Trains clones of the kernel and base measure, which the returned model then owns: the estimator's
  // own parts keep their configured values, so a second fit starts where the first did and leaves
  // the first fit's model unchanged.
  ModelPtr fit(const FitInput& input) override;
  // The fitted model is f + log q0 with the (learned) configured q0, no exact sampler or normaliser.
  std::optional<FacetSet> facets() const override;
  // Refuses, before any fit, sizes whose stage-1 memory would exceed the limit (kef/memory_budget.hpp).
  void check(const DataShape& data) const override;

 protected:
  // Its own clones of the kernel and base measure.
  Estimator* clone_raw() const override;

 private:
  struct State;  // the parameter vector and how it splits into groups
  // The training itself, on this estimator's kernel and base measure (fit calls it on a clone).
  ModelPtr train(const FitInput& input);
  bool learns(const std::string& group) const;
  double validation_loss(const State& s, const Matrix& fit_rows, const Matrix& validation,
                         const Context& context) const;
  // The pieces of train: the starting θ (inducing points drawn from the rows), which entries learn,
  // setting θ (and with it the kernel's and base measure's parameters), stage 1's minibatches (fit,
  // loss) and its early-stopped Adam (returns the best step), and stage 2 (λ and q0, kernel frozen).
  State initial_state(const TrainingRows& X, const Context& context) const;
  Vector learning_mask(const State& s) const;
  void apply(State& s, const Vector& theta);
  std::pair<Matrix, Matrix> draw_minibatches(const TrainingRows& X, RandomStream& batches) const;
  long run_stage1(State& s, const TrainingRows& X, const Matrix& fit_rows, const Matrix& validation,
                  const Vector& mask, const FitInput& in);
  void run_stage2(State& s, const TrainingRowsPtr& rows, const Matrix& validation, const FitInput& in);

  KeySites sites_;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
  Index inducing_, batch_fit_, batch_loss_, max_steps_, patience_, eval_every_, stage2_steps_,
      validation_fit_rows_;
  double learning_rate_, init_log_lambda_, noise_std_, clip_norm_;
  std::size_t stage2_budget_bytes_ = 0;  // `stage2_memory_mb` in bytes
  std::vector<std::string> train_groups_;
  bool base_learns_ = true;  // false when the base measure says `learn = false`
};

}  // namespace kef::dkef
