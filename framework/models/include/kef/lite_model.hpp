#pragma once
// The model of every inducing-point estimator (lite, DKEF): f(x) = Σ_m α_m k(x, z_m) and
// log p~(x) = f(x) + log q0(x) (docs/math.md §4). Saved as type "lite"; the framework registers its loader.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef {

class LiteModel final : public Model {
 public:
  LiteModel(KernelPtr kernel, BaseMeasurePtr base, Matrix inducing, Vector alpha);

  Index dim() const override { return inducing_.cols(); }
  std::string type_name() const override { return "lite"; }
  Vector log_unnormalized(const Matrix& X) const override;
  Vector log_ratio_to_base(const Matrix& X) const override;  // f = K(X, Z)·α, without q0
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  std::string describe() const override;
  const BaseMeasure* base_measure() const override { return base_.get(); }
  // With 0 <= k <= 1, f(x) = Σ α_m k(x, z_m) >= Σ_m min(α_m, 0) (docs/math.md §8).
  std::optional<double> log_ratio_lower_bound() const override;
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;

  // Extra provenance written to model.toml: real values (λs, jitter) and counts (training rows,
  // steps), the counts written as TOML integers.
  void set_fit_info(std::vector<std::pair<std::string, double>> info,
                    std::vector<std::pair<std::string, std::int64_t>> counts = {}) {
    fit_info_ = std::move(info);
    fit_counts_ = std::move(counts);
  }

  const Vector& alpha() const { return alpha_; }
  const Matrix& inducing_points() const { return inducing_; }

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  void check_input(const Matrix& X) const;
  void evaluate_derivatives(const Matrix& X, Matrix& score, Matrix* laplacian) const;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
  Matrix inducing_;
  Vector alpha_;
  std::vector<std::pair<std::string, double>> fit_info_;
  std::vector<std::pair<std::string, std::int64_t>> fit_counts_;
};

}  // namespace kef
