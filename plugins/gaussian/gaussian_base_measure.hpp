#pragma once
// q0 = N(μ, σ0² I), normalised; μ a scalar (every coordinate) or one value per coordinate.
#include "kef/base_measure.hpp"
#include "kef/config.hpp"

namespace kef::gaussian {

class GaussianBaseMeasure final : public BaseMeasure {
 public:
  GaussianBaseMeasure(std::vector<double> mean, double std, Config cfg)
      : mean_(std::move(mean)), std_(std), cfg_(std::move(cfg)) {}

  void check_dimension(Index dim) const override;
  Vector log_density(const Matrix& X) const override;
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override;
  bool can_sample() const override { return true; }
  Matrix sample(Index n, Index dim, RandomStream& rng) const override;

 private:
  Eigen::RowVectorXd mean_row(Index dim) const;
  std::vector<double> mean_;
  double std_;
  Config cfg_;
};

}  // namespace kef::gaussian
