#pragma once
// Components with closed-form normalisers for the cluster_mixture tests: an isotropic Gaussian
// log p~(x) = c − ‖x − μ‖²/(2s²), Z = e^c (2π s²)^{D/2}, exposing a Gaussian base measure (not the
// model itself, so importance sampling has real work to do), and an estimator `test_gaussian_fit`
// that fits μ and s to its rows (registered into the test registry as a built-in).
#include <cmath>
#include <optional>
#include <string>

#include "kef/error.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef::cm_test {

class GaussianModel final : public Model {
 public:
  GaussianModel(Vector mean, double std, double offset, BaseMeasurePtr base)
      : mean_(std::move(mean)), std_(std), offset_(offset), base_(std::move(base)) {}

  Index dim() const override { return mean_.size(); }
  std::string type_name() const override { return "test_gaussian"; }
  Vector log_unnormalized(const Matrix& X) const override {
    return ((X.rowwise() - mean_.transpose()).rowwise().squaredNorm().array() * (-0.5 / (std_ * std_)) +
            offset_)
        .matrix();
  }
  Matrix score(const Matrix& X) const override { return (X.rowwise() - mean_.transpose()) / (-std_ * std_); }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& h) const override {
    s = score(X);
    h = Matrix::Constant(X.rows(), X.cols(), -1.0 / (std_ * std_));
  }
  const BaseMeasure* base_measure() const override { return base_.get(); }
  std::string describe() const override { return "test Gaussian"; }
  double exact_log_normalizer() const {
    return offset_ + 0.5 * static_cast<double>(dim()) * std::log(2 * M_PI * std_ * std_);
  }

 private:
  Vector mean_;
  double std_, offset_;
  BaseMeasurePtr base_;
};

inline BaseMeasurePtr gaussian_base(double mean, double std) {
  return test::plugin_registry().make_base_measure(
      test::config_from("type = \"gaussian\"\nmean = " + std::to_string(mean) +
                        "\nstd = " + std::to_string(std)),
      BuildContext{});
}

class GaussianFit final : public Clonable<GaussianFit, Estimator> {
 public:
  GaussianFit(double offset, BaseMeasurePtr base) : offset_(offset), base_(std::move(base)) {}
  ModelPtr fit(const FitInput& in) override {
    const Vector mean = in.train.colwise().mean();
    const double var = (in.train.rowwise() - mean.transpose()).squaredNorm() /
                       static_cast<double>(in.train.rows() * in.train.cols());
    in.report.iterations = 1;
    in.report.values["std"] = std::sqrt(var);
    return std::make_shared<GaussianModel>(mean, std::sqrt(var), offset_, base_);
  }

 private:
  double offset_;
  BaseMeasurePtr base_;
};

// The shared test registry, with `estimator/test_gaussian_fit` added once.
inline Registry& registry() {
  static Registry* r = [] {
    Registry* reg = &test::plugin_registry();
    reg->register_builtin("cluster_mixture_test", [](PluginRegistrar& p) {
      ComponentInfo info;
      info.type = "test_gaussian_fit";
      info.summary = "test: isotropic Gaussian fitted by moments";
      info.keys = {KeySpec::number("offset", "c in log p~ = c − ‖x − μ‖²/(2s²)", 0.0),
                   KeySpec::integer("min_rows", "fewer training rows is a ConfigError on this key", 1)};
      info.uses_kernel = true;
      info.uses_base_measure = true;
      p.add_estimator(info, [](const Config& cfg, const EstimatorParts& parts, const BuildContext& ctx) {
        if (ctx.train_rows >= 0 && ctx.train_rows < cfg.integer("min_rows"))
          cfg.fail("min_rows", "needs " + std::to_string(cfg.integer("min_rows")) + " rows, got " +
                                   std::to_string(ctx.train_rows));
        return std::make_unique<GaussianFit>(cfg.number("offset"), parts.base_measure);
      });
    });
    return reg;
  }();
  return *r;
}

}  // namespace kef::cm_test
