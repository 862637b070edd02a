#pragma once
// The model of the full and Nyström estimators: f = Σ_c β_c y_c over the derivative basis
// y_(o, j, b) = ∂^o_j k(z_b, ·) (kef/derivative_basis.hpp, docs/math.md §6), log p~ = f + log q0.
// Saved as type "nystrom": model.toml (kernel, base measure, orders, the estimator that fitted it),
// points.npy (m x D) and coefficients.npy (one value per atom, in the basis's order). In the models
// layer because kernel adaptive HMC (kef/kahmc.hpp) fits one as its Nyström surrogate; the nystrom
// plugin registers its loader.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/derivative_basis.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef {

class NystromModel final : public Model {
 public:
  // basis.atoms must be empty: coefficients cover every atom (zeros for atoms a fit did not keep).
  NystromModel(KernelPtr kernel, BaseMeasurePtr base, DerivativeBasis basis, Vector coefficients,
               std::string method);

  Index dim() const override { return basis_.points.cols(); }
  std::string type_name() const override { return "nystrom"; }
  Vector log_unnormalized(const Matrix& X) const override;
  Vector log_ratio_to_base(const Matrix& X) const override;  // f, without q0
  Matrix score(const Matrix& X) const override;
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override;
  std::string describe() const override;
  const BaseMeasure* base_measure() const override { return base_.get(); }
  bool can_save() const override { return true; }
  void save(ModelWriter& writer) const override;

  void set_fit_info(std::vector<std::pair<std::string, double>> info,
                    std::vector<std::pair<std::string, std::int64_t>> counts = {}) {
    fit_info_ = std::move(info);
    fit_counts_ = std::move(counts);
  }

  const DerivativeBasis& basis() const { return basis_; }
  const Vector& coefficients() const { return coefficients_; }
  const Kernel& kernel() const { return *kernel_; }
  const std::string& method() const { return method_; }

  static ModelPtr load(const ModelReader& reader, Registry& registry);

 private:
  void check_input(const Matrix& X) const;
  void evaluate_derivatives(const Matrix& X, Matrix& score, Matrix* laplacian) const;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
  DerivativeBasis basis_;
  Vector coefficients_;
  std::string method_;
  std::vector<std::pair<std::string, double>> fit_info_;
  std::vector<std::pair<std::string, std::int64_t>> fit_counts_;
};

}  // namespace kef
