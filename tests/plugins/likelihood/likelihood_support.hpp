#pragma once
// Test models with closed-form normalisers for the log_likelihood evaluator, and a runner.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "kef/dataset.hpp"
#include "kef/error.hpp"
#include "kef/evaluator.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef::likelihood_test {

using LogRatio = std::function<Vector(const Matrix&)>;
using ScoreFn = std::function<Matrix(const Matrix&)>;

// log p~(x) = f(x) + log q0(x) for a given f: r = exp f is then known in closed form under q0.
class FunctionModel final : public Model {
 public:
  FunctionModel(BaseMeasurePtr base, Index dim, LogRatio f) : base_(std::move(base)), dim_(dim), f_(std::move(f)) {}

  Index dim() const override { return dim_; }
  std::string type_name() const override { return "test_function"; }
  Vector log_unnormalized(const Matrix& X) const override {
    if (X.cols() != dim_) throw DataError("test model: wrong dimension");
    Vector out = f_(X);
    if (base_) out += base_->log_density(X);
    return out;
  }
  // ∇ log p~ = ∇f + ∇ log q0 when a score of f is given (annealed importance sampling needs it).
  Matrix score(const Matrix& X) const override {
    if (!f_score_) throw std::logic_error("not used");
    Matrix s = f_score_(X);
    if (base_) {
      Matrix d1, d2;
      base_->derivatives(X, d1, d2);
      s += d1;
    }
    return s;
  }
  void score_and_laplacian(const Matrix&, Matrix&, Matrix&) const override { throw std::logic_error("not used"); }
  std::string describe() const override { return "test model"; }

  const BaseMeasure* base_measure() const override { return expose_base_ ? base_.get() : nullptr; }
  std::optional<double> log_ratio_lower_bound() const override { return lower_; }
  std::optional<double> log_normalizer() const override { return log_z_; }

  FunctionModel& with_lower_bound(double log_a) { lower_ = log_a; return *this; }
  FunctionModel& with_exact_log_normalizer(double log_z) { log_z_ = log_z; return *this; }
  FunctionModel& hide_base_measure() { expose_base_ = false; return *this; }
  FunctionModel& with_score(ScoreFn f_score) { f_score_ = std::move(f_score); return *this; }
  FunctionModel& with_sampler(std::function<Matrix(Index, RandomStream&)> sampler) {
    sampler_ = std::move(sampler);
    return *this;
  }
  // The sampler only approximates the model (Facet::ApproximateSampler instead of Facet::Sampler).
  FunctionModel& sampler_is_approximate() { approximate_ = true; return *this; }
  bool can_sample() const override { return static_cast<bool>(sampler_); }
  Matrix sample(Index n, RandomStream& rng) const override { return sampler_(n, rng); }
  FacetSet facets() const override {
    const FacetSet f = Model::facets();
    return approximate_ ? f.minus(Facet::Sampler) | Facet::ApproximateSampler : f;
  }

 private:
  BaseMeasurePtr base_;
  Index dim_;
  LogRatio f_;
  ScoreFn f_score_;
  std::function<Matrix(Index, RandomStream&)> sampler_;
  std::optional<double> lower_, log_z_;
  bool expose_base_ = true;
  bool approximate_ = false;
};

// A lite model (Gaussian kernel σ = 1.5, q0 = N(0, 3² I), M inducing points) fitted to `train` with
// the stream (seed, "fit"): a realistic fitted model whose normaliser is not known in closed form.
inline ModelPtr fit_lite_to(const Matrix& train, Index M, std::uint64_t seed) {
  Registry& reg = test::plugin_registry();
  auto kernel = reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.5"), {});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 3.0"), {});
  auto est = reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = " + std::to_string(M)),
                                EstimatorParts{kernel, base, &reg}, {});
  const Matrix empty(0, train.cols());
  Context context = Context(seed, 2).child("fit");
  FitReport report;
  FitInput in{train, empty, context, report};
  return est->fit(in);
}

inline BaseMeasurePtr gaussian_base(double std) {
  return test::plugin_registry().make_base_measure(
      test::config_from("type = \"gaussian\"\nstd = " + std::to_string(std)), BuildContext{});
}

// The log_likelihood evaluator with `keys` on a data set whose training split (which the defensive
// mixture fits) and test split (which is evaluated) are given separately.
inline EvaluationResult run_log_likelihood_split(const Model& model, const Matrix& train, const Matrix& test,
                                                 const std::string& keys, int threads = 2, std::uint64_t seed = 1) {
  Registry& reg = test::plugin_registry();
  auto ev = reg.make_evaluator(test::config_from("type = \"log_likelihood\"\n" + keys),
                               BuildContext{model.dim(), &reg});
  Dataset data;
  data.train = train;
  data.test = test;
  Context context = Context(seed, threads).child("evaluate[0].m");
  const std::string name = "m";
  EvalInput in{model, name, data, context};
  return ev->evaluate(in);
}

inline EvaluationResult run_log_likelihood(const Model& model, const Matrix& test_rows, const std::string& keys,
                                           int threads = 2, std::uint64_t seed = 1) {
  return run_log_likelihood_split(model, test_rows, test_rows, keys, threads, seed);
}

// The importance-sampling estimate from q0 alone (kef 0.2's only method), without a check: the tests
// of that estimator and of DKEF's bias bound.
inline EvaluationResult run_q0_log_likelihood(const Model& model, const Matrix& test_rows, const std::string& keys,
                                              int threads = 2, std::uint64_t seed = 1) {
  return run_log_likelihood(model, test_rows, "method = \"importance\"\ncheck = \"none\"\n" + keys, threads, seed);
}

inline std::optional<double> find_metric(const EvaluationResult& r, const std::string& name) {
  for (const auto& [k, v] : r.metrics)
    if (k == name) return v;
  return std::nullopt;
}

inline double metric(const EvaluationResult& r, const std::string& name) {
  auto v = find_metric(r, name);
  if (!v) throw std::runtime_error("no metric " + name);
  return *v;
}

inline bool has_note(const EvaluationResult& r, const std::string& text) {
  for (const auto& n : r.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace kef::likelihood_test
