#pragma once
// The estimator `lscde`: least-squares conditional density estimation (Sugiyama et al. 2010;
// docs/math.md §17.1). b training pairs are the centres of Gaussian basis functions φ_l(x, y); the
// coefficients minimise the empirical squared error ½ αᵀĤα − ĥᵀα + (λ/2)‖α‖², so α = (Ĥ + λI)⁻¹ ĥ,
// negative entries set to 0; σ and λ by K-fold cross-validation of that criterion over two grids.
#include <optional>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::lscde {

struct LscdeKeys {
  std::optional<std::int64_t> basis;
  std::optional<double> sigma;
  std::optional<double> lambda;
  std::vector<double> sigma_grid;
  std::vector<double> lambda_grid;
  std::int64_t folds = 5;
};
const OptionsSpec<LscdeKeys>& lscde_options();

// Ĥ and ĥ of pairs (X, Y) for centres (U, V) and width σ, in closed form:
//   Ĥ_ll' = (πσ²)^(d_y/2) exp(−‖v_l − v_l'‖²/(4σ²)) (1/n) Σ_i exp(−(‖x_i − u_l‖² + ‖x_i − u_l'‖²)/(2σ²)),
//   ĥ_l   = (1/n) Σ_i φ_l(x_i, y_i).
struct LscdeDesign {
  Matrix H;
  Vector h;
};
LscdeDesign lscde_design(const Matrix& X, const Matrix& Y, const Matrix& U, const Matrix& V, double sigma);
// α = max(0, (Ĥ + λI)⁻¹ ĥ).
Vector lscde_coefficients(const LscdeDesign& design, double lambda);
// The LSCDE criterion of α on pairs whose design is `held_out`: ½ αᵀĤα − ĥᵀα (the squared error of
// α·φ against p(y | x) up to a constant).
double lscde_criterion(const LscdeDesign& held_out, const Vector& alpha);

class LscdeEstimator final : public Clonable<LscdeEstimator, Estimator> {
 public:
  explicit LscdeEstimator(const Config& cfg);
  ModelPtr fit(const FitInput& input) override;
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 private:
  LscdeKeys opt_;
  KeySites sites_;
};

}  // namespace kef::lscde
