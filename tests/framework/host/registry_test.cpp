// The open registry: an interface the host does not know is registered, listed, validated and built
// like the host's own; an estimator's named parts come from [model.NAME] tables, checked by name.
#include "kef/registry.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "fixture_sampler.hpp"
#include "kef/error.hpp"
#include "kef/pipeline.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

using test::message_of;

namespace fs = std::filesystem;

fs::path fixture_plugin() { return fs::path(KEF_OPEN_FIXTURE_DIR) / "kef_fixture_open.so"; }

TEST(OpenRegistry, AnInterfaceUnknownToTheHostIsListedValidatedAndBuilt) {
  Registry r;
  r.load_plugin(fixture_plugin());
  const std::vector<std::string> interfaces = r.interfaces();
  EXPECT_NE(std::find(interfaces.begin(), interfaces.end(), "fixture_sampler"), interfaces.end());
  const ComponentInfo* info = r.find("fixture_sampler", "constant");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->plugin, "fixture_open");
  EXPECT_EQ(info->interface, "fixture_sampler");

  auto sampler = r.make<fixture::Sampler>(test::config_from("type = \"constant\"\ncentre = 2.5"), {});
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->centre(), 2.5);
  EXPECT_EQ(sampler->type_name(), "constant");  // a Component gets its resolved config attached
  EXPECT_EQ(sampler->config().number("centre"), 2.5);

  const std::string typo = message_of<ConfigError>(
      [&] { r.make<fixture::Sampler>(test::config_from("type = \"constant\"\ncentr = 1.0"), {}); });
  EXPECT_NE(typo.find("did you mean `centre`"), std::string::npos) << typo;
  const std::string unknown =
      message_of<ConfigError>([&] { r.make<fixture::Sampler>(test::config_from("type = \"constan\""), {}); });
  EXPECT_NE(unknown.find("unknown fixture sampler type `constan` (did you mean `constant`?)"),
            std::string::npos)
      << unknown;
}

TEST(OpenRegistry, PartsAreBuiltFromTheOwnersTablesAndReachTheEstimator) {
  Registry r;
  r.load_plugin(fixture_plugin());
  Config model = test::config_from(R"(
[estimator]
type = "fixture_sampled"
[sampler]
type = "constant"
centre = -1.5
)");
  const ComponentInfo& info = r.info_for(Estimator::kInterface, model.table("estimator"));
  ASSERT_EQ(info.all_parts().size(), 1u);
  Parts parts = r.make_parts(info, model, BuildContext{2});
  ASSERT_TRUE(parts.has("sampler"));
  EXPECT_EQ(parts.get<fixture::Sampler>("sampler")->centre(), -1.5);
  EXPECT_THROW(parts.get<Kernel>("sampler"), Error);  // a part is asked for as what it is

  BuildContext ctx{2};
  ctx.parts = &parts;
  EstimatorPtr est = r.make<Estimator>(model.table("estimator"), ctx);
  Matrix train = Matrix::Zero(4, 2);
  Matrix none(0, 2);
  Context context = Context(1, 1).child("fit");
  FitReport report;
  ModelPtr fitted = est->fit(FitInput{train, none, context, report});
  Matrix at_centre = Matrix::Constant(1, 2, -1.5);
  EXPECT_EQ(fitted->log_unnormalized(at_centre)(0), 0.0);

  Config missing = test::config_from("[estimator]\ntype = \"fixture_sampled\"\n");
  const std::string msg = message_of<ConfigError>([&] { r.make_parts(info, missing, BuildContext{2}); });
  EXPECT_NE(msg.find("estimator `fixture_sampled` needs a [sampler] table (fixture sampler)"),
            std::string::npos)
      << msg;
}

class OpenPipeline : public ::testing::Test {
 protected:
  fs::path write(const std::string& model_tables, const std::string& extra = {}) {
    const fs::path dir = test::temp_dir("open_pipeline");
    const fs::path path = dir / "p.toml";
    std::ofstream(path) << "schema_version = 1\nseed = 1\n[plugins]\npaths = [\"" << KEF_OPEN_FIXTURE_DIR
                        << "\"]\n[data]\ntype = \"synthetic/gaussian\"\nn = 300\n"
                        << "split = { test = 100, validation = 0 }\n[[model]]\nname = \"m\"\n"
                        << model_tables << extra;
    return path;
  }
  RunOptions quiet() {
    RunOptions o;
    o.quiet = true;
    o.output_dir = (test::temp_dir("open_out") / "out").string();
    return o;
  }
};

TEST_F(OpenPipeline, ARequiredPartTableIsMissing) {
  const fs::path p = write("[model.estimator]\ntype = \"fixture_sampled\"\n");
  const std::string msg = message_of<ConfigError>([&] { validate_pipeline(p.string(), quiet()); });
  EXPECT_NE(msg.find("needs a [model[0].sampler] table"), std::string::npos) << msg;
}

TEST_F(OpenPipeline, ATableTheEstimatorDoesNotDeclareIsRefusedNamingItsParts) {
  const fs::path p = write(
      "[model.estimator]\ntype = \"fixture_sampled\"\n[model.sampler]\ntype = \"constant\"\n"
      "[model.dual]\ntype = \"constant\"\n");
  const std::string msg = message_of<ConfigError>([&] { validate_pipeline(p.string(), quiet()); });
  EXPECT_NE(
      msg.find("estimator `fixture_sampled` takes no [model[0].dual] table (its parts: [model[0].sampler])"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("p.toml:"), std::string::npos) << msg;  // names the file and line
}

TEST_F(OpenPipeline, APartsKeysAreValidatedWithTheirPlace) {
  const fs::path p = write(
      "[model.estimator]\ntype = \"fixture_sampled\"\n[model.sampler]\ntype = \"constant\"\ncentr = 1.0\n");
  const std::string msg = message_of<ConfigError>([&] { validate_pipeline(p.string(), quiet()); });
  EXPECT_NE(msg.find("model[0].sampler.centr"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean `centre`"), std::string::npos) << msg;
}

TEST_F(OpenPipeline, ARunWithANewInterfacesPartFitsAndEvaluates) {
  const fs::path p =
      write("[model.estimator]\ntype = \"fixture_sampled\"\n[model.sampler]\ntype = \"constant\"\n",
            "[[evaluate]]\ntype = \"true_log_likelihood\"\n");
  RunOptions o = quiet();
  RunSummary s = run_pipeline(p.string(), o);
  EXPECT_TRUE(fs::exists(s.output_dir / "results.json"));
}

}  // namespace
}  // namespace kef
