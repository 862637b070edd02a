// Model facets: what a model declares, what evaluators need, and the errors when they do not meet —
// before any fit when the estimator declares its models' facets, at evaluation otherwise.
#include <gtest/gtest.h>

#include <fstream>

#include "kef/error.hpp"
#include "kef/lite_model.hpp"
#include "kef/pipeline.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using test::message_of;

namespace fs = std::filesystem;

TEST(FacetSet, SetOperationsAndNames) {
  const FacetSet a{Facet::LogDensity, Facet::Score};
  EXPECT_TRUE(a.has(Facet::Score));
  EXPECT_FALSE(a.has(Facet::Laplacian));
  EXPECT_TRUE(a.contains(Facet::LogDensity));
  EXPECT_FALSE(a.contains(Facet::LogDensity | Facet::Sampler));
  EXPECT_EQ(a.minus(Facet::Score), FacetSet(Facet::LogDensity));
  EXPECT_EQ(a.text(), "log density, score");
  EXPECT_EQ(FacetSet().text(), "nothing");
  EXPECT_EQ(FacetSet{Facet::ConditionalSampler}.text(), "conditional sampler");
}

// A model with only a log density: the defaults of the facets it lacks refuse, naming the facet.
class DensityOnly final : public Model {
 public:
  Index dim() const override { return 1; }
  std::string type_name() const override { return "density_only"; }
  FacetSet facets() const override { return Facet::LogDensity; }
  Vector log_unnormalized(const Matrix& X) const override { return -X.col(0); }
  std::string describe() const override { return "test"; }
};

TEST(ModelFacets, RequireNamesTheAskerTheModelAndWhatIsMissing) {
  DensityOnly m;
  EXPECT_NO_THROW(require_facets(m, Facet::LogDensity, "fssd", "m"));
  const std::string msg =
      message_of<ConfigError>([&] { require_facets(m, Facet::Score | Facet::Sampler, "fssd", "m"); });
  EXPECT_NE(msg.find("fssd: model `m` (type density_only) has no score, sampler (it has: log density)"),
            std::string::npos)
      << msg;
  const Matrix X = Matrix::Zero(2, 1);
  EXPECT_THROW(m.score(X), ConfigError);
  Matrix s, l;
  EXPECT_THROW(m.score_and_laplacian(X, s, l), ConfigError);
}

TEST(ModelFacets, TheDefaultDescribesAScoreMatchingModelAndItsOptionalParts) {
  // A fitted lite model: density, score, Laplacian and q0 for importance sampling; no sampler.
  Registry& reg = test::plugin_registry();
  auto kernel = reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.0"), {});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 2.0"), {});
  auto est = reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = 10"),
                                EstimatorParts{kernel, base, &reg}, {});
  const test::PointPair pts = test::random_points(50, 1, 2, 7, "facets");
  Matrix none(0, 2);
  Context context = Context(1, 1).child("fit");
  FitReport report;
  ModelPtr model = est->fit(FitInput{pts.X, none, context, report});
  const FacetSet f = model->facets();
  EXPECT_EQ(f, (FacetSet{Facet::LogDensity, Facet::Score, Facet::Laplacian, Facet::BaseMeasureRatio}))
      << f.text();
  // The type's declaration is what every lite model has; this estimator's q0 samples, so it adds that.
  EXPECT_TRUE(f.contains(reg.find(Estimator::kInterface, "lite")->facets));
  EXPECT_EQ(est->facets(), f);
}

class FacetPipeline : public ::testing::Test {
 protected:
  fs::path write(const std::string& estimator, const std::string& evaluator) {
    const fs::path dir = test::temp_dir("facet_pipeline");
    const fs::path path = dir / "p.toml";
    std::ofstream(path) << "schema_version = 1\nseed = 1\n[plugins]\npaths = [\"" << KEF_OPEN_FIXTURE_DIR
                        << "\"]\n[data]\ntype = \"synthetic/gaussian\"\nn = 300\n"
                        << "split = { test = 100, validation = 0 }\n[[model]]\nname = \"m\"\n"
                        << "[model.estimator]\ntype = \"" << estimator
                        << "\"\n[model.sampler]\ntype = \"constant\"\n"
                        << "[[evaluate]]\ntype = \"" << evaluator << "\"\n";
    return path;
  }
  RunOptions quiet(const std::string& tag) {
    RunOptions o;
    o.quiet = true;
    output_ = test::temp_dir(tag) / "out";
    o.output_dir = output_.string();
    return o;
  }
  fs::path output_;
};

TEST_F(FacetPipeline, AnEvaluatorNeedingAFacetTheEstimatorDeclaresItLacksFailsBeforeAnyFit) {
  const fs::path p = write("fixture_sampled", "fssd");
  const std::string msg = message_of<ConfigError>([&] { validate_pipeline(p.string(), quiet("v")); });
  EXPECT_NE(
      msg.find("`fssd` needs the score of model `m`, which estimator `fixture_sampled` does not provide"),
      std::string::npos)
      << msg;
}

TEST_F(FacetPipeline, AnUndeclaredEstimatorsModelIsCheckedWhenEvaluated) {
  const fs::path p = write("fixture_sampled_undeclared", "fssd");
  EXPECT_NO_THROW(validate_pipeline(p.string(), quiet("v")));
  const std::string msg = message_of<ConfigError>([&] { run_pipeline(p.string(), quiet("r")); });
  EXPECT_NE(msg.find("evaluate[0] (fssd): model `m` (type fixture_sample_only) has no score"),
            std::string::npos)
      << msg;
}

TEST_F(FacetPipeline, AnEvaluatorNeedingOnlyWhatTheModelHasRuns) {
  const fs::path p = write("fixture_sampled", "log_likelihood");
  EXPECT_NO_THROW(run_pipeline(p.string(), quiet("ok")));
}

}  // namespace
}  // namespace kef
