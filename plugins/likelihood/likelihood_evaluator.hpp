#pragma once
// Held-out log-likelihood log p~(x) − log Ẑ with Ẑ by importance sampling from a defensive mixture
// (the default), from the model's normalised base measure alone (with the DKEF Proposition 1 bound
// on the bias of log Ẑ), by annealed importance sampling, or, for D <= 2, by the midpoint rule on a
// box (quadrature.hpp); with a second, independent estimate and a verdict on whether the value can be
// trusted (reliability.hpp; docs/math.md §8).
#include <optional>
#include <string>
#include <vector>

#include "ais.hpp"
#include "bias_bound.hpp"
#include "kef/config.hpp"
#include "kef/defensive_proposal.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"
#include "quadrature.hpp"
#include "reliability.hpp"

namespace kef::likelihood {

// Quadrature grid sizes, shared by the key declarations (likelihood_keys.cpp) and the evaluator.
inline constexpr Index kDefaultGrid1 = 4096;
inline constexpr Index kDefaultGrid2 = 512;
inline constexpr Index kMinGrid = 16;       // grid/2 >= 8 cells for the error estimate
inline constexpr Index kMaxGrid = 1 << 20;  // keeps grid^D far from overflowing an Index

KeyList likelihood_keys();

class LikelihoodEvaluator final : public Clonable<LikelihoodEvaluator, Evaluator> {
 public:
  // dim: the data dimension when known (-1 otherwise), to reject quadrature for D > 2 up front.
  explicit LikelihoodEvaluator(const Config& cfg, Index dim = -1);
  EvaluationResult evaluate(const EvalInput& input) override;
  // An empty split is refused by `kef validate` and before any fit.
  void check(const DataShape& data) const override;

 private:
  void check_quadrature_dimension(Index D) const;
  // Before any work: the samplers that the method and the check need must exist for this model.
  void require_samplers(const EvalInput& in, const std::string& check) const;
  // The integration box: `extent`, or the data's range padded by pad_range·range + pad_std·std.
  Box quadrature_box(const EvalInput& in, const Matrix& evaluated, EvaluationResult& out) const;
  void evaluate_quadrature(const EvalInput& in, double mean_log_p, EvaluationResult& out) const;
  // The bound's three independent samples and Proposition 1; nullopt (with a note) when it cannot be
  // given for this model.
  std::optional<BoundResult> estimate_bound(const EvalInput& in, const ProposalSource& source, Index used,
                                            double min_log_ratio, EvaluationResult& out) const;

  // One estimate of log Z by `method` (importance, defensive or ais), with its metrics prefixed by
  // `prefix` and its notes; `fit` are the rows the data-fitted proposals are fitted to.
  struct Run;
  NormalizerEstimate estimate(const std::string& method, bool is_main, const EvalInput& in, const TrainingRows& fit,
                              Run& run, EvaluationResult& out) const;
  NormalizerEstimate estimate_importance(bool is_main, const EvalInput& in, Run& run,
                                         EvaluationResult& out) const;
  NormalizerEstimate estimate_defensive(bool is_main, const EvalInput& in, const TrainingRows& fit, Run& run,
                                        EvaluationResult& out) const;
  NormalizerEstimate estimate_ais(const EvalInput& in, const TrainingRows& fit, Run& run,
                                  EvaluationResult& out) const;
  // The verdict: metrics `reliable`, a note, the summary's last words, and strict's failure.
  void conclude(const EvalInput& in, const ReliabilityInputs& ri, EvaluationResult& out) const;

  KeySites sites_;
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
  std::string check_;
  double tolerance_;
  bool strict_;
  bool bidirectional_;
  DefensiveOptions defensive_;
  AisOptions ais_;
  std::string ais_start_;
  // Quadrature (method = "quadrature"); grid_ 0 = the default for the model's dimension.
  Index grid_ = 0;
  std::vector<double> extent_;
  double pad_range_ = 0.25;
  double pad_std_ = 3.0;
  double boundary_tolerance_ = 1e-6;
};

}  // namespace kef::likelihood
