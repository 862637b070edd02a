#pragma once
// q0 = N(μ, σ0² I), normalised; μ a scalar (every coordinate) or one value per coordinate.
#include "kef/base_measure.hpp"
#include "kef/options.hpp"

namespace kef::gaussian {

class GaussianBaseMeasure final : public Clonable<GaussianBaseMeasure, BaseMeasure> {
 public:
  // `sites` place the keys for errors found later (a `mean` list of the wrong length).
  GaussianBaseMeasure(std::vector<double> mean, double std, KeySites sites)
      : mean_(std::move(mean)), std_(std), sites_(std::move(sites)) {}

  void check_dimension(Index dim) const override;
  Vector log_density(const Matrix& X) const override;
  void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const override;
  bool can_sample() const override { return true; }
  Matrix sample(Index n, Index dim, RandomStream& rng) const override;

 private:
  Eigen::RowVectorXd mean_row(Index dim) const;
  std::vector<double> mean_;
  double std_;
  KeySites sites_;
};

}  // namespace kef::gaussian
