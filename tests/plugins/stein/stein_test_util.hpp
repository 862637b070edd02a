#pragma once
// Models with exact scores and helpers to run the Stein evaluators in the tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kef/dataset.hpp"
#include "kef/evaluator.hpp"
#include "kef/model.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef::stein::test_util {

// N(mean, std² I) with its exact score. Rows whose first coordinate exceeds nan_above get a NaN score
// (to test the error naming the row).
class GaussianModel final : public Model {
 public:
  GaussianModel(Vector mean, double std, double nan_above = std::numeric_limits<double>::infinity())
      : mean_(std::move(mean)), std_(std), nan_above_(nan_above) {}
  GaussianModel(Index dim, double shift, double std) : GaussianModel(Vector::Constant(dim, shift), std) {}

  Index dim() const override { return mean_.size(); }
  std::string type_name() const override { return "test/gaussian"; }
  Vector log_unnormalized(const Matrix& X) const override {
    return -0.5 * (X.rowwise() - mean_.transpose()).rowwise().squaredNorm() / (std_ * std_);
  }
  Matrix score(const Matrix& X) const override {
    Matrix S = -(X.rowwise() - mean_.transpose()) / (std_ * std_);
    for (Index n = 0; n < X.rows(); ++n)
      if (X(n, 0) > nan_above_) S(n, 0) = std::numeric_limits<double>::quiet_NaN();
    return S;
  }
  void score_and_laplacian(const Matrix& X, Matrix& S, Matrix& L) const override {
    S = score(X);
    L = Matrix::Constant(X.rows(), X.cols(), -1.0 / (std_ * std_));
  }
  std::string describe() const override { return "test Gaussian"; }

 private:
  Vector mean_;
  double std_;
  double nan_above_;
};

inline Dataset test_data(const Matrix& X) {
  Dataset d;
  d.train = X;
  d.test = X;
  return d;
}

// Builds an evaluator through the plugin registry, with the evaluator's own stream seeded by `seed`.
inline EvaluatorPtr make_evaluator(const std::string& toml, Index dim, std::uint64_t seed = 1) {
  auto& reg = kef::test::plugin_registry();
  RandomStream init(seed, "evaluator-init");
  std::vector<std::string> host = {"models", "name"};
  Config cfg = kef::test::config_from(toml);
  if (reg.info_for(ComponentKind::Evaluator, cfg).compares_two_models) host.push_back("against");
  return reg.make_evaluator(cfg, BuildContext{dim, &reg, &init, -1}, host);
}

struct Metrics {
  std::vector<std::pair<std::string, double>> values;
  double operator[](const std::string& key) const {
    for (const auto& [k, v] : values)
      if (k == key) return v;
    ADD_FAILURE() << "no metric " << key;
    return std::numeric_limits<double>::quiet_NaN();
  }
};

inline Metrics run(Evaluator& e, const Model& model, const Dataset& data, std::uint64_t seed, int threads = 1,
                   const Model* other = nullptr) {
  Context context = Context(seed, threads).child("evaluate");
  EvalInput in{model, "m", data, context, other, other ? "q" : ""};
  return Metrics{e.evaluate(in).metrics};
}

// Kolmogorov–Smirnov distance between the sample and U(0, 1).
inline double ks_uniform(std::vector<double> p) {
  std::sort(p.begin(), p.end());
  const double n = static_cast<double>(p.size());
  double d = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i)
    d = std::max({d, (static_cast<double>(i) + 1.0) / n - p[i], p[i] - static_cast<double>(i) / n});
  return d;
}

// Mean and standard deviation (n − 1) of a sample.
inline std::pair<double, double> mean_sd(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double s = 0.0;
  for (double x : v) s += (x - m) * (x - m);
  return {m, std::sqrt(s / static_cast<double>(v.size() - 1))};
}

}  // namespace kef::stein::test_util
