// A plugin whose components throw from every entry point the kef command calls: the model loader,
// the model's log density, score and sampler, a kernel and a base measure (used by a saved lite
// model), and an evaluator. What is thrown is chosen by a key: a kef::DataError ("kef"), a
// std::runtime_error ("std") or an exception class defined here, whose vtable and type_info live in
// this library ("custom"). The e2e test (tests/e2e/plugin_errors_test.cpp) checks that `kef score`,
// `kef eval` and `kef sample` print the message and exit with a status, not a signal.
#include <stdexcept>
#include <string>

#include "fixture_common.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"

namespace {

using kef::Index;
using kef::Matrix;
using kef::Vector;

// Deliberately local to this library (hidden visibility): only the host keeping the plugin loaded
// until the exception is handled makes catching it safe.
class FixtureFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& error, const std::string& where) {
  const std::string message = "fixture_throwing: " + where + " failed on purpose";
  if (error == "kef") throw kef::DataError(message);
  if (error == "custom") throw FixtureFailure(message);
  throw std::runtime_error(message);
}

const std::vector<std::string> kErrors = {"kef", "std", "custom"};

// log p~(x) = -|x|^2 / 2 unless `fail_in` names the method.
class ThrowingModel final : public kef::Model {
 public:
  ThrowingModel(Index dim, std::string fail_in, std::string error)
      : dim_(dim), fail_in_(std::move(fail_in)), error_(std::move(error)) {}
  Index dim() const override { return dim_; }
  std::string type_name() const override { return "fixture_throwing"; }
  Vector log_unnormalized(const Matrix& X) const override {
    check("log_density");
    return -0.5 * X.rowwise().squaredNorm();
  }
  Matrix score(const Matrix& X) const override {
    check("score");
    return -X;
  }
  void score_and_laplacian(const Matrix& X, Matrix& score_out, Matrix& laplacian) const override {
    check("score");
    score_out = -X;
    laplacian = Matrix::Constant(X.rows(), X.cols(), -1.0);
  }
  bool can_sample() const override { return true; }
  Matrix sample(Index n, kef::RandomStream& rng) const override {
    check("sample");
    return rng.normal_matrix(n, dim_);
  }
  std::string describe() const override { return "fixture model that throws from " + fail_in_; }

 private:
  void check(const std::string& method) const {
    if (method == fail_in_) fail(error_, "model " + method);
  }
  Index dim_;
  std::string fail_in_, error_;
};

class ThrowingKernel final : public kef::Clonable<ThrowingKernel, kef::Kernel> {
 public:
  explicit ThrowingKernel(std::string error) : error_(std::move(error)) {}
  kef::KernelCapabilities capabilities() const override { return {}; }
  Matrix gram(const Matrix&, const Matrix&) const override { fail(error_, "kernel gram"); }
  void derivatives(const Matrix&, const Matrix&, int, kef::KernelStacks&) const override {
    fail(error_, "kernel derivatives");
  }

 private:
  std::string error_;
};

class ThrowingBaseMeasure final : public kef::Clonable<ThrowingBaseMeasure, kef::BaseMeasure> {
 public:
  explicit ThrowingBaseMeasure(std::string error) : error_(std::move(error)) {}
  void check_dimension(Index) const override {}
  Vector log_density(const Matrix&) const override { fail(error_, "base measure log density"); }
  void derivatives(const Matrix&, Matrix&, Matrix&) const override {
    fail(error_, "base measure derivatives");
  }
  bool can_sample() const override { return true; }
  Matrix sample(Index, Index, kef::RandomStream&) const override { fail(error_, "base measure sample"); }

 private:
  std::string error_;
};

class ThrowingEvaluator final : public kef::Clonable<ThrowingEvaluator, kef::Evaluator> {
 public:
  explicit ThrowingEvaluator(std::string error) : error_(std::move(error)) {}
  kef::EvaluationResult evaluate(const kef::EvalInput&) override { fail(error_, "evaluator"); }

 private:
  std::string error_;
};

kef::KeySpec error_key() {
  return kef::KeySpec::string("error", "what to throw: kef, std or custom", std::string("kef"))
      .one_of(kErrors);
}

void register_components(kef::PluginRegistrar& r) {
  kef::ComponentInfo kernel = fixture::info("fixture_throwing");
  kernel.keys = {error_key()};
  r.add_kernel(kernel, [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Kernel> {
    return std::make_unique<ThrowingKernel>(cfg.string("error"));
  });

  kef::ComponentInfo base = fixture::info("fixture_throwing");
  base.keys = {error_key()};
  r.add_base_measure(
      base, [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::BaseMeasure> {
        return std::make_unique<ThrowingBaseMeasure>(cfg.string("error"));
      });

  kef::ComponentInfo evaluator = fixture::info("fixture_throwing");
  evaluator.keys = {error_key()};
  r.add_evaluator(evaluator,
                  [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Evaluator> {
                    return std::make_unique<ThrowingEvaluator>(cfg.string("error"));
                  });

  // model.toml: type = "fixture_throwing", dim, fail_in (loader, log_density, score, sample or none),
  // error (kef, std or custom).
  r.add_model_loader(
      fixture::info("fixture_throwing"), [](const kef::ModelReader& reader, kef::Registry&) -> kef::ModelPtr {
        const kef::Config& m = reader.manifest();
        const std::string fail_in = m.string("fail_in");
        const std::string error = m.string("error");
        if (fail_in == "loader") fail(error, "model loader");
        return std::make_shared<ThrowingModel>(static_cast<Index>(m.integer("dim")), fail_in, error);
      });
}

}  // namespace

KEF_PLUGIN("fixture_throwing", "0.0.1", "throws from every entry point", register_components)
