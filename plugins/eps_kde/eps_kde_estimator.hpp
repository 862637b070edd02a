#pragma once
// The estimator `eps_kde`: the ε-neighbourhood kernel density estimate of p(y | x) as Sugiyama et al.
// (2010) define it (docs/math.md §17.2), ε and the bandwidth σ chosen by K-fold cross-validated
// log-likelihood over two grids (or given).
#include <optional>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::eps_kde {

struct EpsKdeKeys {
  std::optional<double> epsilon;
  std::optional<double> bandwidth;
  std::vector<double> epsilon_grid;
  std::vector<double> bandwidth_grid;
  std::int64_t folds = 5;
};
const OptionsSpec<EpsKdeKeys>& eps_kde_options();

class EpsKdeEstimator final : public Clonable<EpsKdeEstimator, Estimator> {
 public:
  explicit EpsKdeEstimator(const Config& cfg);
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 private:
  EpsKdeKeys opt_;
  KeySites sites_;
};

}  // namespace kef::eps_kde
