#pragma once
// Held-out log-likelihood log p~(x) − log Ẑ with Ẑ by importance sampling from the model's
// normalised base measure, and the DKEF Proposition 1 bound on the bias of log Ẑ (docs/math.md §8); or,
// for D <= 2, Ẑ by the midpoint rule on a box (method = "quadrature", quadrature.hpp).
#include <optional>
#include <string>
#include <vector>

#include "bias_bound.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "quadrature.hpp"

namespace kef::likelihood {

KeyList likelihood_keys();

class LikelihoodEvaluator final : public Evaluator {
 public:
  // dim: the data dimension when known (-1 otherwise), to reject quadrature for D > 2 up front.
  explicit LikelihoodEvaluator(const Config& cfg, Index dim = -1);
  EvaluationResult evaluate(const EvalInput& input) override;

 private:
  void check_quadrature_dimension(Index D) const;
  // The integration box: `extent`, or the data's range padded by pad_range·range + pad_std·std.
  Box quadrature_box(const EvalInput& in, const Matrix& evaluated, EvaluationResult& out) const;
  void evaluate_quadrature(const EvalInput& in, double mean_log_p, EvaluationResult& out) const;
  // The bound's three independent samples and Proposition 1; nullopt (with a note) when it cannot be
  // given for this model.
  std::optional<BoundResult> estimate_bound(const EvalInput& in, const ProposalSource& source, Index used,
                                            double min_log_ratio, EvaluationResult& out) const;

  Config cfg_;
  std::string method_;
  std::string split_;
  Index samples_;
  double max_seconds_;
  Index chunk_size_;
  double min_effective_samples_;
  bool bias_bound_;
  double bound_percentile_;
  Index bound_percentile_samples_;
  Index bound_rho_samples_;
  double bound_confidence_;
  Index bound_variance_samples_;
  // Quadrature (method = "quadrature"); grid_ 0 = the default for the model's dimension.
  Index grid_ = 0;
  std::vector<double> extent_;
  double pad_range_ = 0.25;
  double pad_std_ = 3.0;
  double boundary_tolerance_ = 1e-6;
};

}  // namespace kef::likelihood
