// An embedding program loads a saved lite model with the public API only: a Registry, the plugins
// kef would find, load_saved_model. kef 0.3.0 also needed an undocumented
// kef::register_core_components call first (else "unknown model type `lite`"); now the core
// components are added on demand. No test registry is used here: test::plugin_registry() registers
// the core components itself and would hide the problem.
#include <gtest/gtest.h>

#include <fstream>

#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/registry.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// A lite model fitted and saved by the kef command; `kef score`'s values at X for comparison.
struct Saved {
  fs::path model_dir;
  Matrix X, scored;
};
Saved fit_with_kef() {
  Saved s;
  const fs::path dir = test::temp_dir("embed-load");
  const fs::path cfg = test::write_file(dir, "p.toml", test::PipelineText()
                                                              .seed(5)
                                                              .data("type = \"synthetic/banana\"\nn = 400\n"
                                                                    "split = { test = 100, validation = 0 }\n"
                                                                    "standardize = true")
                                                              .lite("m", 30, 1.0, 3.0)
                                                              .str());
  const test::CommandResult run =
      test::kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  EXPECT_EQ(run.status, 0) << run.output;
  s.model_dir = dir / "out" / "models" / "m";
  s.X.resize(3, 2);
  s.X << 0.1, 0.2, -1.0, 3.5, 2.0, -0.3;
  write_npy(dir / "x.npy", s.X);
  const test::CommandResult score =
      test::kef_cmd("score " + s.model_dir.string() + " --data " + (dir / "x.npy").string() + " --out " +
                    (dir / "s.npy").string());
  EXPECT_EQ(score.status, 0) << score.output;
  s.scored = read_npy(dir / "s.npy");
  return s;
}

TEST(Embedding, LoadsASavedLiteModelWithoutRegisteringCoreComponents) {
  const Saved s = fit_with_kef();
  Registry registry;
  registry.load_plugins(plugin_search_path({}));
  const SavedModel saved = load_saved_model(s.model_dir, registry);
  ASSERT_NE(saved.model, nullptr);
  EXPECT_EQ(saved.model->type_name(), "lite");
  EXPECT_EQ(saved.transform.kind, "standardize");
  // log p~ in data units, as `kef score` writes it: the model's value at the mapped rows plus log|det|.
  const Vector log_p =
      saved.model->log_unnormalized(saved.transform.to_model(s.X)).array() + saved.transform.log_abs_det;
  EXPECT_EQ((log_p - s.scored.col(0)).cwiseAbs().maxCoeff(), 0.0);

  // The lower-level entry points too, each on a registry of its own.
  Registry second;
  second.load_plugins(plugin_search_path({}));
  EXPECT_EQ(load_model(s.model_dir, second)->log_unnormalized(s.X), saved.model->log_unnormalized(s.X));
  Registry third;
  third.load_plugins(plugin_search_path({}));
  EXPECT_EQ(third.load_model(ModelReader(s.model_dir))->dim(), 2);
  // The core components are then registered once, and asking again changes nothing.
  EXPECT_TRUE(third.add_core_components());
  EXPECT_NE(third.find("data_source", "file"), nullptr);
  int core_records = 0;
  for (const PluginRecord& p : third.plugins()) core_records += p.name == "kef core";
  EXPECT_EQ(core_records, 1);
}

}  // namespace
}  // namespace kef
