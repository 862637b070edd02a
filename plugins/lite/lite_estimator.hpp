#pragma once
// The "lite" estimator: α in closed form for M inducing points (docs/math.md §4, DKEF Prop. 3).
#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/registry.hpp"

namespace kef::lite {

KeyList lite_keys();

class LiteEstimator final : public Estimator {
 public:
  LiteEstimator(const Config& cfg, const EstimatorParts& parts);
  ModelPtr fit(const FitInput& input) override;
  // A lite model is f + log q0 with the configured q0 and no exact sampler or normaliser.
  std::optional<FacetSet> facets() const override;

 private:
  Matrix choose_inducing_points(const Matrix& train, RandomStream& rng) const;
  Config cfg_;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
  double lambda_alpha_, lambda_h_, lambda_c_;
  Index chunk_rows_;
};

}  // namespace kef::lite
