// What a run tells and records about its models: progress lines name the model and the
// evaluator, results.json has evaluation times, model.toml writes counts as integers and names the
// plugin of every component; `kef score` takes --quiet, --threads and --path, and a model whose
// third-party component cannot be found fails with a hint naming the plugin and --path.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kef/lite_model.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/registry.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;
using test::read_json;
using test::write_file;
using Result = test::CommandResult;

// 700 banana rows, a lite model of 40 inducing points, KSD and the score-matching loss.
const std::string kSavedPipeline = test::PipelineText()
                                       .seed(4)
                                       .banana(700, 200)
                                       .lite("lite", 40)
                                       .evaluate("ksd", "bootstrap_draws = 0")
                                       .evaluate("score_matching_loss", "name = \"sm\"");

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One run of kSavedPipeline shared by the tests below (not quiet: its output has the progress lines).
struct SharedRun {
  fs::path dir, out;
  Result result;
};
const SharedRun& shared_run() {
  static const SharedRun run = [] {
    SharedRun r;
    r.dir = test::temp_dir("saved-cli");
    r.out = r.dir / "out";
    const fs::path cfg = write_file(r.dir, "p.toml", kSavedPipeline);
    r.result = kef_cmd("run " + cfg.string() + " --output " + r.out.string());
    return r;
  }();
  return run;
}

TEST(RunOutput, ProgressLinesNameTheModelAndTheEvaluator) {
  const SharedRun& run = shared_run();
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  // The lite system's progress during the fit, and the KSD evaluator's own lines.
  EXPECT_TRUE(contains(run.result.output, "[kef] model lite / lite system")) << run.result.output;
  EXPECT_TRUE(contains(run.result.output, "[kef] model lite, evaluate[0] (ksd) / ksd")) << run.result.output;
}

TEST(RunOutput, ResultsRecordSecondsPerEvaluationPerModel) {
  const SharedRun& run = shared_run();
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  const nlohmann::json j = read_json(run.out / "results.json");
  const nlohmann::json& seconds = j["models"]["lite"]["evaluation_seconds"];
  ASSERT_TRUE(seconds.is_object()) << j["models"]["lite"].dump(2);
  // Keyed like the metrics: the evaluator's `name` when it has one, else its type.
  ASSERT_TRUE(seconds.contains("ksd")) << seconds.dump();
  ASSERT_TRUE(seconds.contains("sm")) << seconds.dump();
  EXPECT_EQ(seconds.size(), 2u);
  EXPECT_GT(seconds["ksd"].get<double>(), 0.0);
  EXPECT_GT(seconds["sm"].get<double>(), 0.0);
}

TEST(SavedModel, CountsAreTomlIntegersAndOldFloatCountsStillLoad) {
  const SharedRun& run = shared_run();
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  const fs::path model_dir = run.out / "models" / "lite";
  const std::string text = read_text(model_dir / "model.toml");
  EXPECT_TRUE(contains(text, "train_rows = 500\n")) << text;
  const Config manifest = Config::parse_file((model_dir / "model.toml").string());
  for (const char* key : {"dim", "inducing_points", "train_rows"})
    EXPECT_TRUE(manifest.holds_integer(key)) << key << "\n" << text;
  EXPECT_FALSE(manifest.holds_integer("lambda_alpha")) << "a real value stays a float";

  // A model written by kef 0.3.0 (train_rows = 500.0) loads and gives the same values.
  const fs::path old_dir = run.dir / "old_model";
  fs::copy(model_dir, old_dir);
  std::string old_text = text;
  old_text.replace(old_text.find("train_rows = 500\n"), 17, "train_rows = 500.0\n");
  std::ofstream(old_dir / "model.toml") << old_text;
  const SavedModel a = load_saved_model(model_dir, test::plugin_registry());
  const SavedModel b = load_saved_model(old_dir, test::plugin_registry());
  Matrix X(2, 2);
  X << 0.3, -0.2, 1.0, 2.0;
  EXPECT_EQ((a.model->log_unnormalized(X) - b.model->log_unnormalized(X)).cwiseAbs().maxCoeff(), 0.0);
}

TEST(SavedModel, RecordsThePluginOfTheModelAndOfEveryComponent) {
  const SharedRun& run = shared_run();
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  const Config manifest = Config::parse_file((run.out / "models" / "lite" / "model.toml").string());
  ASSERT_TRUE(manifest.has("origins")) << manifest.to_toml(false);
  const Config origins = manifest.table("origins");
  Registry& reg = test::plugin_registry();
  EXPECT_EQ(origins.table("model").string("type"), "lite");
  EXPECT_EQ(origins.table("model").string("plugin"), "kef core");
  EXPECT_FALSE(origins.table("model").has("file")) << "built into libkef";
  for (const auto& [section, interface, type] :
       {std::tuple<std::string, std::string, std::string>{"kernel", "kernel", "gaussian"},
        {"base_measure", "base_measure", "gaussian"}}) {
    const Config o = origins.table(section);
    EXPECT_EQ(o.string("interface"), interface);
    EXPECT_EQ(o.string("type"), type);
    const ComponentInfo* info = reg.find(interface, type);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(o.string("plugin"), info->plugin);
    const std::string file = o.string("file");
    EXPECT_EQ(file.rfind("kef_", 0), 0u) << file;
    EXPECT_TRUE(fs::exists(test::plugin_dir() / file)) << file;
  }
}

TEST(ScoreCli, QuietAndThreads) {
  const SharedRun& run = shared_run();
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  const fs::path model_dir = run.out / "models" / "lite";
  Matrix X(5, 2);
  X << 0.1, 0.2, -1.0, 0.5, 2.0, -0.3, 0.0, 0.0, -2.5, 1.5;
  const fs::path xfile = run.dir / "x.npy";
  write_npy(xfile, X);
  const std::string base = "score " + model_dir.string() + " --data " + xfile.string() + " --out ";
  const Result loud = kef_cmd(base + (run.dir / "s0.npy").string());
  ASSERT_EQ(loud.status, 0) << loud.output;
  EXPECT_TRUE(contains(loud.output, "[kef] wrote 5 x 3")) << loud.output;
  const Result one = kef_cmd(base + (run.dir / "s1.npy").string() + " --quiet --threads 1");
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_EQ(one.output, "") << "--quiet: nothing but warnings and errors";
  const Result two = kef_cmd(base + (run.dir / "s2.npy").string() + " --quiet --threads 2");
  ASSERT_EQ(two.status, 0) << two.output;
  const Matrix s0 = read_npy(run.dir / "s0.npy"), s1 = read_npy(run.dir / "s1.npy"),
               s2 = read_npy(run.dir / "s2.npy");
  EXPECT_EQ((s1 - s0).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((s2 - s1).cwiseAbs().maxCoeff(), 0.0) << "results do not depend on the thread count";
  const Result zero = kef_cmd(base + (run.dir / "s3.npy").string() + " --threads 0");
  EXPECT_EQ(zero.status, 2) << zero.output;
}

// A lite model whose kernel comes from a plugin outside the default search path (the plugin-host
// fixture `fixture_good`, copied into a directory of its own).
struct ThirdPartyModel {
  fs::path plugin_dir, model_dir, data;
};
ThirdPartyModel third_party_model(const std::string& tag) {
  ThirdPartyModel t;
  const fs::path root = test::temp_dir(tag);
  t.plugin_dir = root / "plugins";
  fs::create_directories(t.plugin_dir);
  fs::copy_file(KEF_GOOD_FIXTURE_PLUGIN, t.plugin_dir / fs::path(KEF_GOOD_FIXTURE_PLUGIN).filename());
  Registry reg;
  reg.add_core_components();
  reg.load_plugins(plugin_search_path({t.plugin_dir.string()}));
  const KernelPtr kernel =
      reg.make_kernel(test::config_from("type = \"fixture_constant\"\nvalue = 2.0"), BuildContext{2, &reg});
  const BaseMeasurePtr base =
      reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 2.0"), BuildContext{2, &reg});
  Matrix Z(3, 2);
  Z << 0.0, 0.0, 1.0, 0.0, 0.0, 1.0;
  const auto model = std::make_shared<LiteModel>(kernel, base, Z, Vector::Constant(3, 0.25));
  t.model_dir = root / "model";
  save_model(*model, t.model_dir, DataTransform{}, &reg);
  Matrix X(2, 2);
  X << 0.5, -0.5, 1.0, 1.0;
  t.data = root / "x.npy";
  write_npy(t.data, X);
  return t;
}

TEST(ThirdPartyPlugin, AMissingPluginIsNamedWithTheOptionThatFindsIt) {
  const ThirdPartyModel t = third_party_model("third-party");
  const std::string text = read_text(t.model_dir / "model.toml");
  EXPECT_TRUE(contains(text, "fixture_good")) << text;
  const std::string file = fs::path(KEF_GOOD_FIXTURE_PLUGIN).filename().string();
  const std::string out = (t.model_dir.parent_path() / "s.npy").string();

  const Result missing =
      kef_cmd("score " + t.model_dir.string() + " --data " + t.data.string() + " --out " + out);
  EXPECT_EQ(missing.status, 2) << missing.output;
  for (const char* part : {"kernel/fixture_constant", "plugin `fixture_good`", "--path"})
    EXPECT_TRUE(contains(missing.output, part)) << part << "\n" << missing.output;
  EXPECT_TRUE(contains(missing.output, file)) << missing.output;
  EXPECT_FALSE(fs::exists(out));

  // With --path, score, eval and sample find it.
  const std::string path = " --path " + t.plugin_dir.string();
  const Result score =
      kef_cmd("score " + t.model_dir.string() + " --data " + t.data.string() + " --out " + out + path);
  ASSERT_EQ(score.status, 0) << score.output;
  EXPECT_EQ(read_npy(out).rows(), 2);
  const Result eval = kef_cmd("eval " + t.model_dir.string() + " --data " + t.data.string() +
                              " --type score_matching_loss --quiet" + path);
  EXPECT_EQ(eval.status, 0) << eval.output;
  const Result eval_missing = kef_cmd("eval " + t.model_dir.string() + " --data " + t.data.string() +
                                      " --type score_matching_loss --quiet");
  EXPECT_EQ(eval_missing.status, 2) << eval_missing.output;
  EXPECT_TRUE(contains(eval_missing.output, "--path")) << eval_missing.output;
  const std::string samples = (t.model_dir.parent_path() / "samples.npy").string();
  const Result sample_missing = kef_cmd("sample " + t.model_dir.string() + " -n 10 --out " + samples);
  EXPECT_EQ(sample_missing.status, 2) << sample_missing.output;
  EXPECT_TRUE(contains(sample_missing.output, "plugin `fixture_good`")) << sample_missing.output;
  const Result sample = kef_cmd("sample " + t.model_dir.string() +
                                " -n 10 --quiet --allow-poor-mixing --out " + samples + path);
  EXPECT_EQ(sample.status, 0) << sample.output;
}

}  // namespace
}  // namespace kef
