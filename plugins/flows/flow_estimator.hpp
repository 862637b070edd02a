#pragma once
// Training of MADE, MADE-MoG, MAF, MAF-MoG and Real NVP by maximum likelihood as Papamakarios et al. (2017)
// do it (docs/math.md §15): Adam on minibatches of the mean negative log-likelihood plus an L2 term, one
// validation pass per epoch, early stopping with patience, the best epoch's parameters restored.
#include <cstdint>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::flows {

enum class FlowKind { made, made_mog, maf, maf_mog, real_nvp };
std::string kind_name(FlowKind kind);

struct FlowOptions {
  std::vector<double> hidden_units;
  std::string activation, hidden_degrees, shift_activation;
  std::int64_t layers = 1, components = 0;
  bool batch_norm = false, standardize = true;
  double batch_norm_epsilon = 1e-5;
  double learning_rate = 1e-3, weight_decay = 1e-6, beta1 = 0.9, beta2 = 0.999, adam_epsilon = 1e-8;
  std::int64_t batch_size = 100, max_epochs = 1000, patience = 30;
};
// The keys of each kind (MADE has no `layers` or `batch_norm`; only the -MoG kinds have `components`;
// Real NVP has no `hidden_degrees`, and `shift_activation` for its shift nets).
const OptionsSpec<FlowOptions>& flow_options(FlowKind kind);

class FlowEstimator final : public Estimator {
 public:
  FlowEstimator(const Config& cfg, FlowKind kind);
  ModelPtr fit(const FitInput& input) override;
  // No validation split fails in `kef validate` (training early-stops on it).
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 protected:
  Estimator* clone_raw() const override { return new FlowEstimator(*this); }

 private:
  [[noreturn]] void no_validation_split() const;
  // Refuses, before any fit, layers and widths whose weights would not fit in memory.
  void check_memory(Index dim) const;
  FlowKind kind_;
  FlowOptions opt_;
  std::vector<Index> hidden_;
  KeySites sites_;
};

}  // namespace kef::flows
