// Estimator::facets is a promise about the model fit() returns: for every estimator that declares
// facets, they must equal what the fitted model's own virtuals answer (the brute-force twin).
#include <gtest/gtest.h>

#include "kef/base_measure.hpp"
#include "kef/estimator.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

void expect_facets_match_the_fit(const std::string& estimator_toml, const std::string& base_toml) {
  Registry& reg = test::plugin_registry();
  RandomStream init(3, "init");
  auto kernel =
      reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.0"), BuildContext{2, &reg, &init});
  auto base = reg.make_base_measure(test::config_from(base_toml), BuildContext{2, &reg, &init});
  auto est = reg.make_estimator(test::config_from(estimator_toml), EstimatorParts{kernel, base, &reg},
                                BuildContext{2, &reg, &init, 150});
  const std::optional<FacetSet> f = est->facets();
  ASSERT_TRUE(f.has_value()) << estimator_toml;
  Context context = Context(4, 1).child("data");  // the data and the fit draw from one stream
  RandomStream& rng = context.rng();
  const Matrix train = rng.normal_matrix(150, 2), validation = rng.normal_matrix(60, 2);
  FitReport report;
  ModelPtr model = est->fit(FitInput{train, validation, context, report});
  EXPECT_EQ(*f, model->facets()) << estimator_toml << ": declared " << f->text() << ", the model has "
                                 << model->facets().text();
  EXPECT_EQ(f->has(Facet::Sampler), model->can_sample()) << estimator_toml;
  EXPECT_EQ(f->has(Facet::BaseMeasureRatio), model->base_measure() && model->base_measure()->can_sample())
      << estimator_toml;
  EXPECT_EQ(f->has(Facet::NormalizedDensity), model->log_normalizer().has_value()) << estimator_toml;
}

TEST(EstimatorFacets, LiteDeclaresWhatItsModelDoes) {
  expect_facets_match_the_fit("type = \"lite\"\ninducing_points = 20", "type = \"gaussian\"\nstd = 2.0");
}

TEST(EstimatorFacets, DkefDeclaresWhatItsModelDoes) {
  expect_facets_match_the_fit(
      "type = \"dkef\"\ninducing_points = 10\nbatch_fit = 20\nbatch_loss = 20\nmax_steps = 3\nstage2_steps = "
      "1",
      "type = \"generalized_normal\"");
}

}  // namespace
}  // namespace kef
