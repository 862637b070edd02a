#pragma once
// The estimator `kcef`: the kernel conditional exponential family of Arbel & Gretton (2018), fitted by
// score matching in y (docs/math.md §17.4). The representer theorem puts f in the span of
// ∂_(y_i) k((x_a, y_a), ·) and of ξ, so the fit is one (n·d_y) x (n·d_y) Cholesky solve
//
//   (G + nλ I) β = h/λ,   G[(i, a), (j, b)] = ⟨∂_(y_i) k(z_a, ·), ∂_(y_j) k(z_b, ·)⟩,   h_(j, b) = ⟨∂_(y_j)
//   k(z_b, ·), ξ⟩,
//
// the same system as the unconditional `full` estimator with the derivatives restricted to the y
// coordinates of the product kernel k_x k_y. Bandwidths and λ by K-fold cross-validation of the
// held-out conditional score-matching loss over grids.
#include <cstdint>
#include <optional>
#include <vector>

#include "kcef_model.hpp"
#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"

namespace kef::kcef {

struct KcefKeys {
  std::optional<double> lambda;
  std::optional<std::vector<double>> sigma_x;
  std::optional<double> sigma_y;
  std::vector<double> lambda_grid;
  std::vector<double> scale_grid;
  std::int64_t folds = 10;
  std::int64_t grid_extensions = 0;
  double q0_sd = 2.0;
  std::int64_t max_system = 20000;
};
const OptionsSpec<KcefKeys>& kcef_options();

// G and h of pairs (X, Y), unknowns indexed i·n + a (target coordinate i, pair a); h is divided by n.
struct KcefSystem {
  Matrix G;
  Vector h;
};
KcefSystem kcef_system(const Matrix& X, const Matrix& Y, const Vector& sigma_x, double sigma_y, double q0_sd);

// The model of the solution of (G + nλ I) β = h/λ: c_ai = β_(i, a) − ∂_i log q0(y_a)/(nλ), e = −1/(nλ).
// `jitter` (when given) receives what SpdFactor added to the diagonal.
KcefModel kcef_solve(const KcefSystem& system, const Matrix& X, const Matrix& Y, const Vector& sigma_x,
                     double sigma_y, double q0_sd, double lambda, double* jitter = nullptr);

class KcefEstimator final : public Clonable<KcefEstimator, Estimator> {
 public:
  explicit KcefEstimator(const Config& cfg);
  ModelPtr fit(const FitInput& input) override;
  // n·d_y above max_system, more folds than training rows and a sigma_x list of the wrong length
  // fail in `kef validate`.
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 private:
  void check_size(Index rows, Index target_dim) const;
  void check_sigma_x(Index input_dim) const;
  KcefKeys opt_;
  KeySites sites_;
};

}  // namespace kef::kcef
