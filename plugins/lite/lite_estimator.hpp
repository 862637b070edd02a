#pragma once
// The "lite" estimator: α in closed form for M inducing points (docs/math.md §4, DKEF Prop. 3).
#include <cstdint>
#include <filesystem>
#include <optional>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::lite {

// Exactly one of inducing_points and inducing_points_file is set (checked at construction).
struct LiteOptions {
  std::optional<std::int64_t> inducing_points;
  std::optional<std::filesystem::path> inducing_points_file;  // resolved against the pipeline's folder
  double lambda_alpha = 0, lambda_h = 0, lambda_c = 0;
  std::int64_t chunk_rows = 0;
};
const OptionsSpec<LiteOptions>& lite_options();
KeyList lite_keys();

class LiteEstimator final : public Estimator {
 public:
  LiteEstimator(const Config& cfg, const EstimatorParts& parts);
  ModelPtr fit(const FitInput& input) override;
  // More inducing points than training rows fails in `kef validate`, before any fit.
  void check(const DataShape& data) const override;
  // A lite model is f + log q0 with the configured q0 and no exact sampler or normaliser.
  std::optional<FacetSet> facets() const override;

 protected:
  // Its own clones of the kernel and base measure.
  Estimator* clone_raw() const override;

 private:
  Matrix choose_inducing_points(const Matrix& train, RandomStream& rng) const;
  LiteOptions opt_;
  KeySites sites_;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
  double lambda_alpha_, lambda_h_, lambda_c_;
  Index chunk_rows_;
};

}  // namespace kef::lite
