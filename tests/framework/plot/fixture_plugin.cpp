// A test-only plugin for the plot pipeline tests: an estimator whose model is a unit Gaussian around
// the training mean, optionally NaN where x0 > nan_above (a broken model that must fail the plot).
#include <cmath>
#include <limits>

#include "kef/sdk/plugin.hpp"

namespace {

using kef::Index;
using kef::Matrix;
using kef::Vector;

class BrokenGaussian final : public kef::Model {
 public:
  BrokenGaussian(Vector mean, bool nan, double nan_above) : mean_(std::move(mean)), nan_(nan), nan_above_(nan_above) {}
  Index dim() const override { return mean_.size(); }
  std::string type_name() const override { return "plot_fixture"; }
  Vector log_unnormalized(const Matrix& X) const override {
    Vector v = -0.5 * (X.rowwise() - mean_.transpose()).rowwise().squaredNorm();
    if (nan_)
      for (Index i = 0; i < X.rows(); ++i)
        if (X(i, 0) > nan_above_) v[i] = std::numeric_limits<double>::quiet_NaN();
    return v;
  }
  Matrix score(const Matrix& X) const override { return -(X.rowwise() - mean_.transpose()); }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& laplacian) const override {
    s = score(X);
    laplacian = Matrix::Constant(X.rows(), X.cols(), -1.0);
  }
  std::string describe() const override { return "plot fixture: unit Gaussian at the training mean"; }

 private:
  Vector mean_;
  bool nan_;
  double nan_above_;
};

class FixtureEstimator final : public kef::Clonable<FixtureEstimator, kef::Estimator> {
 public:
  FixtureEstimator(bool nan, double nan_above) : nan_(nan), nan_above_(nan_above) {}
  kef::ModelPtr fit(const kef::FitInput& in) override {
    return std::make_shared<BrokenGaussian>(in.train.colwise().mean().transpose(), nan_, nan_above_);
  }

 private:
  bool nan_;
  double nan_above_;
};

void register_components(kef::PluginRegistrar& r) {
  kef::ComponentInfo info;
  info.type = "plot_fixture";
  info.summary = "test fixture: unit Gaussian at the training mean, optionally NaN for x0 > nan_above";
  info.keys = {kef::KeySpec::boolean("nan", "return NaN where x0 > nan_above", false),
               kef::KeySpec::number("nan_above", "threshold of the NaN region", 0.0)};
  r.add_estimator(info, [](const kef::Config& cfg, const kef::EstimatorParts&,
                           const kef::BuildContext&) -> std::unique_ptr<kef::Estimator> {
    return std::make_unique<FixtureEstimator>(cfg.boolean("nan"), cfg.number("nan_above"));
  });
}

}  // namespace

KEF_PLUGIN("plot_fixture", "0.0.1", "density plot test fixture", register_components)
