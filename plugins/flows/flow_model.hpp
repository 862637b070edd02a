#pragma once
// A fitted MADE / MADE-MoG / MAF / MAF-MoG (flow_density.hpp) as a kef Model: the exact normalised log
// density, the exact score (reverse pass through the networks), the exact diagonal of the Hessian for
// score matching (forward mode through the networks), exact sampling (the inverse flow).
//
// Saved as type "flow": model.toml (kind, dim, the architecture, fit information) and .npy arrays:
// shift, scale (the standardisation), made<k>_parameters, made<k>_order, made<k>_degrees<l> for the
// Gaussian MADEs, bn<k>_parameters, bn<k>_mean, bn<k>_variance for their batch norms, and base_* for
// a mixture base. Parameters are stored as float64, so a reloaded model is bitwise the same.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flow_density.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef::flows {

class FlowModel final : public Model {
 public:
  // kind: "made", "made_mog", "maf" or "maf_mog" (for descriptions and the saved record). The density
  // must be in evaluation mode.
  FlowModel(std::string kind, FlowDensity density);

  Index dim() const override { return density_.dim(); }
  std::string type_name() const override { return "flow"; }
  FacetSet facets() const override;
  Vector log_unnormalized(const Matrix& X) const override;
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  std::optional<double> log_normalizer() const override { return 0.0; }
  bool can_sample() const override { return true; }
  Matrix sample(Index n, RandomStream& rng) const override;
  std::string describe() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;

  const FlowDensity& density() const { return density_; }
  const std::string& kind() const { return kind_; }
  void set_fit_info(std::vector<std::pair<std::string, double>> info,
                    std::vector<std::pair<std::string, std::int64_t>> counts = {}) {
    fit_info_ = std::move(info);
    fit_counts_ = std::move(counts);
  }

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  std::string kind_;
  FlowDensity density_;
  std::vector<std::pair<std::string, double>> fit_info_;
  std::vector<std::pair<std::string, std::int64_t>> fit_counts_;
};

// log p at the rows of X over fixed chunks of rows in parallel: the same numbers for any thread count.
Vector chunked_log_density(const FlowDensity& density, const Matrix& X, int threads);

}  // namespace kef::flows
