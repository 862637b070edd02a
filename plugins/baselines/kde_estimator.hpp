#pragma once
// The estimator `kde`: a Gaussian kernel density estimate with kernel covariance h² Σ̂ (Σ̂ the
// training rows' maximum-likelihood covariance), h given, by Scott's or Silverman's rule, or the best
// held-out log-likelihood over a grid of multiples of Scott's h (docs/math.md §14.4).
#include <optional>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::baselines {

struct KdeKeys {
  std::optional<double> bandwidth;
  std::optional<std::string> rule;
  std::vector<double> grid;
  double covariance_floor = 0.0;
};
const OptionsSpec<KdeKeys>& kde_options();

// Scott's factor n^(−1/(D+4)) and Silverman's (n(D+2)/4)^(−1/(D+4)).
double scott_factor(Index n, Index D);
double silverman_factor(Index n, Index D);

class KdeEstimator final : public Clonable<KdeEstimator, Estimator> {
 public:
  explicit KdeEstimator(const Config& cfg);
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 private:
  KdeKeys opt_;
  KeySites sites_;
  std::string rule_;  // "given", "scott", "silverman" or "validation"
};

}  // namespace kef::baselines
