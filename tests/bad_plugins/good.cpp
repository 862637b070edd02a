// The well-behaved fixture: a kernel, an estimator and a model loader, each with a switch that makes
// its plugin code throw a non-kef exception (the host must turn it into kef::PluginError).
#include <stdexcept>

#include "fixture_common.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"

namespace {

using kef::Index;
using kef::Matrix;
using kef::Vector;

// log p~(x) = -|x - mean|^2 / 2.
class MeanModel final : public kef::Model {
 public:
  explicit MeanModel(Vector mean) : mean_(std::move(mean)) {}
  Index dim() const override { return mean_.size(); }
  std::string type_name() const override { return "fixture_mean"; }
  Vector log_unnormalized(const Matrix& X) const override {
    return -0.5 * (X.rowwise() - mean_.transpose()).rowwise().squaredNorm();
  }
  Matrix score(const Matrix& X) const override { return -(X.rowwise() - mean_.transpose()); }
  void score_and_laplacian(const Matrix& X, Matrix& score_out, Matrix& laplacian) const override {
    score_out = score(X);
    laplacian = Matrix::Constant(X.rows(), X.cols(), -1.0);
  }
  std::string describe() const override { return "fixture mean model"; }

 private:
  Vector mean_;
};

class MeanEstimator final : public kef::Clonable<MeanEstimator, kef::Estimator> {
 public:
  explicit MeanEstimator(std::string failure) : failure_(std::move(failure)) {}
  kef::ModelPtr fit(const kef::FitInput& input) override {
    if (failure_ == "std") throw std::logic_error("fixture fit failure");
    if (failure_ == "kef") throw kef::DataError("fixture: the data is unusable");
    // make_shared: the model's control block is plugin code, which the host must wrap.
    return std::make_shared<MeanModel>(input.train.colwise().mean().transpose());
  }

 private:
  std::string failure_;
};

void register_components(kef::PluginRegistrar& r) {
  kef::ComponentInfo kernel = fixture::info("fixture_constant");
  kernel.keys = {kef::KeySpec::number("value", "the constant", 1.0).positive(),
                 kef::KeySpec::boolean("explode", "throw from the factory", false)};
  r.add_kernel(kernel, [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Kernel> {
    if (cfg.boolean("explode")) throw std::runtime_error("fixture factory exploded");
    return std::make_unique<fixture::ConstantKernel>(cfg.number("value"));
  });

  kef::ComponentInfo estimator = fixture::info("fixture_mean");
  estimator.keys = {
      kef::KeySpec::string("fail", "none, std or kef", std::string("none")).one_of({"none", "std", "kef"})};
  r.add_estimator(estimator,
                  [](const kef::Config& cfg, const kef::EstimatorParts&,
                     const kef::BuildContext&) -> std::unique_ptr<kef::Estimator> {
                    return std::make_unique<MeanEstimator>(cfg.string("fail"));
                  });

  r.add_model_loader(fixture::info("fixture_mean"),
                     [](const kef::ModelReader& reader, kef::Registry&) -> kef::ModelPtr {
                       if (reader.manifest().has("explode"))
                         throw std::runtime_error("fixture loader exploded");
                       return std::make_shared<MeanModel>(
                           Vector::Zero(static_cast<Index>(reader.manifest().integer("dim"))));
                     });
}

}  // namespace

KEF_PLUGIN("fixture_good", "1.2.3", "plugin-host test fixture that works", register_components)
