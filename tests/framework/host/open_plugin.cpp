// A plugin that registers components of an interface the host has never heard of ("fixture_sampler"),
// an estimator that takes one as the part [model.sampler], and models that lack the score facet: with
// an estimator that declares its models' facets (checked before fitting) and one that does not
// (checked when the model is evaluated).
#include <memory>
#include <stdexcept>

#include "fixture_sampler.hpp"
#include "kef/error.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

using kef::Index;
using kef::Matrix;
using kef::Vector;

class ConstantSampler final : public kef::Clonable<ConstantSampler, fixture::Sampler> {
 public:
  explicit ConstantSampler(double centre) : centre_(centre) {}
  double centre() const override { return centre_; }

 private:
  double centre_;
};

// log p(x) = -|x - c|² / 2 - (D/2) log 2π, with an exact sampler and no score or Laplacian.
class SampleOnlyModel final : public kef::Model {
 public:
  SampleOnlyModel(Index dim, double centre) : dim_(dim), centre_(centre) {}
  Index dim() const override { return dim_; }
  std::string type_name() const override { return "fixture_sample_only"; }
  kef::FacetSet facets() const override {
    return {kef::Facet::LogDensity, kef::Facet::NormalizedDensity, kef::Facet::Sampler};
  }
  Vector log_unnormalized(const Matrix& X) const override {
    return -0.5 * (X.array() - centre_).matrix().rowwise().squaredNorm();
  }
  std::optional<double> log_normalizer() const override {
    return 0.5 * static_cast<double>(dim_) * std::log(2.0 * 3.14159265358979323846);
  }
  bool can_sample() const override { return true; }
  Matrix sample(Index n, kef::RandomStream& rng) const override {
    Matrix out(n, dim_);
    for (Index i = 0; i < n; ++i)
      for (Index d = 0; d < dim_; ++d) out(i, d) = centre_ + rng.normal();
    return out;
  }
  std::string describe() const override { return "fixture: unit Gaussian at the sampler's centre"; }

 private:
  Index dim_;
  double centre_;
};

class SampledEstimator final : public kef::Clonable<SampledEstimator, kef::Estimator> {
 public:
  explicit SampledEstimator(std::shared_ptr<fixture::Sampler> sampler) : sampler_(std::move(sampler)) {}
  kef::ModelPtr fit(const kef::FitInput& input) override {
    return std::make_shared<SampleOnlyModel>(input.train.cols(), sampler_->centre());
  }

 private:
  std::shared_ptr<fixture::Sampler> sampler_;
};

std::unique_ptr<kef::Estimator> make_estimator(const kef::Config&, const kef::EstimatorParts& parts,
                                               const kef::BuildContext&) {
  auto sampler = parts.parts.get<fixture::Sampler>("sampler");
  if (!sampler) throw kef::Error("fixture_sampled: built without its sampler part");
  return std::make_unique<SampledEstimator>(std::move(sampler));
}

void register_components(kef::PluginRegistrar& r) {
  kef::ComponentInfo sampler;
  sampler.type = "constant";
  sampler.summary = "a sampler of a new interface, centred at `centre`";
  sampler.keys = {kef::KeySpec::number("centre", "the centre", 0.0)};
  r.add<fixture::Sampler>(sampler, [](const kef::Config& cfg, const kef::BuildContext&) {
    return std::make_unique<ConstantSampler>(cfg.number("centre"));
  });

  kef::ComponentInfo declared;
  declared.type = "fixture_sampled";
  declared.summary = "an estimator with a [model.sampler] part whose models have no score";
  declared.parts = {{"sampler", fixture::Sampler::kInterface, true, "where the model is centred"}};
  declared.facets = {kef::Facet::LogDensity, kef::Facet::NormalizedDensity, kef::Facet::Sampler};
  r.add_estimator(declared, make_estimator);

  kef::ComponentInfo undeclared = declared;
  undeclared.type = "fixture_sampled_undeclared";
  undeclared.facets = {};  // the host learns the facets from the fitted model
  r.add_estimator(undeclared, make_estimator);
}

}  // namespace

KEF_PLUGIN("fixture_open", "0.0.1", "registry test fixture: a new interface and parts", register_components)
