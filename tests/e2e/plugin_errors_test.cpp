// Errors thrown by plugin code reach the user as a message and an exit status, never as a crash:
// `kef score`, `kef eval` and `kef sample` on models whose plugin (tests/bad_plugins/
// throwing_components.cpp) throws a kef::DataError, a std::runtime_error or an exception class of
// its own from the model loader, the model's log density, score and sampler, a kernel, a base
// measure and an evaluator. kef 0.2 died with SIGSEGV on the kef::DataError cases: the error's
// vtable was the plugin's copy, and the command unloaded the plugin while the error propagated.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef::plugin_errors_test {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status;  // -1 when the command died from a signal
  std::string output;
};

Result kef_cmd(const std::string& args) {
  Result r;
  // Only the throwing fixture besides the built-in components and the project's plugins.
  r.status = test::run_command(
      "KEF_PLUGIN_PATH=" + std::string(KEF_THROWING_FIXTURE_DIR) + " " + test::kef_executable() + " " + args,
      &r.output);
  return r;
}

// A model directory of the fixture's own model type.
fs::path fixture_model(const fs::path& root, const std::string& fail_in, const std::string& error) {
  fs::path dir = root / ("model-" + fail_in + "-" + error);
  fs::create_directories(dir);
  std::ofstream(dir / "model.toml") << "type = \"fixture_throwing\"\ndim = 2\nfail_in = \"" << fail_in
                                    << "\"\nerror = \"" << error << "\"\n";
  return dir;
}

// A saved lite model (a built-in model type) whose kernel or base measure is the fixture's.
fs::path lite_model(const fs::path& root, const std::string& component, const std::string& error) {
  fs::path dir = root / ("lite-" + component + "-" + error);
  fs::create_directories(dir);
  const std::string thrower = "type = \"fixture_throwing\"\nerror = \"" + error + "\"\n";
  const std::string kernel = component == "kernel" ? thrower : "type = \"gaussian\"\nsigma = 1.5\n";
  const std::string base =
      component == "base_measure" ? thrower : "type = \"gaussian\"\nstd = 4.0\nmean = [0.0]\n";
  std::ofstream(dir / "model.toml") << "type = \"lite\"\ndim = 2\ninducing_points = 3\nlambda_alpha = 0.001\n"
                                    << "[kernel]\n"
                                    << kernel << "[base_measure]\n"
                                    << base;
  Matrix Z(3, 2);
  Z << 0.0, 0.0, 1.0, 0.5, -1.0, 0.2;
  write_npy(dir / "inducing_points.npy", Z);
  const Vector alpha = Vector::Constant(3, 0.1);
  write_npy(dir / "alpha.npy", alpha);
  if (component == "kernel") {
    // The Gaussian kernel's parameter (log sigma) is not there: the fixture kernel has none.
  } else {
    const Vector log_sigma = Vector::Constant(1, std::log(1.5));
    write_npy(dir / "kernel_parameters.npy", log_sigma);
  }
  return dir;
}

class PluginErrors : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    root_ = test::temp_dir("plugin-errors-" + GetParam());
    Matrix X(4, 2);
    X << 0.1, 0.2, -1.0, 0.5, 2.0, -0.3, 0.0, 0.0;
    data_ = root_ / "x.npy";
    write_npy(data_, X);
  }

  // The command failed cleanly: an exit status (not a signal), the fixture's message on stderr
  // under the expected kind, and no output file.
  void expect_clean_failure(const Result& r, int status, const std::string& where, const fs::path& out) {
    EXPECT_EQ(r.status, status) << r.output;
    EXPECT_NE(r.output.find("fixture_throwing: " + where), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("failed on purpose"), std::string::npos) << r.output;
    if (GetParam() == "kef") {
      EXPECT_NE(r.output.find("kef: data error:"), std::string::npos) << r.output;
    }
    EXPECT_FALSE(fs::exists(out)) << out;
  }
  // A kef::DataError keeps its class (exit 2); anything else from a plugin is a failure of that
  // plugin, a PluginError (exit 2), whichever command and whichever code called it: every call into a
  // plugin's loaders, factories, estimators, evaluators, models, kernels and base measures passes
  // through the registry's guard (a plugin kernel called by a model of libkef, a saved lite model, too).
  int guarded_status() const { return 2; }

  fs::path root_, data_;
};

TEST_P(PluginErrors, ScoreEvalAndSampleExitCleanlyWhenTheModelThrows) {
  const std::string error = GetParam();
  fs::path out = root_ / "out.npy";
  const std::string score_args = " --data " + data_.string() + " --out " + out.string();
  const std::string sample_args = " -n 5 --quiet --out " + out.string();
  const std::string eval_args = " --data " + data_.string() + " --type score_matching_loss --quiet";

  fs::path loader = fixture_model(root_, "loader", error);
  expect_clean_failure(kef_cmd("score " + loader.string() + score_args), guarded_status(), "model loader",
                       out);
  expect_clean_failure(kef_cmd("sample " + loader.string() + sample_args), guarded_status(), "model loader",
                       out);
  expect_clean_failure(kef_cmd("eval " + loader.string() + eval_args), guarded_status(), "model loader", out);

  fs::path log_density = fixture_model(root_, "log_density", error);
  expect_clean_failure(kef_cmd("score " + log_density.string() + score_args), guarded_status(),
                       "model log_density", out);

  fs::path score = fixture_model(root_, "score", error);
  expect_clean_failure(kef_cmd("score " + score.string() + score_args), guarded_status(), "model score",
                       out);
  expect_clean_failure(kef_cmd("eval " + score.string() + eval_args), guarded_status(), "model score", out);

  fs::path sample = fixture_model(root_, "sample", error);
  expect_clean_failure(kef_cmd("sample " + sample.string() + sample_args), guarded_status(), "model sample",
                       out);

  // The same model without a failing method works: the fixture is not broken in some other way.
  fs::path none = fixture_model(root_, "none", error);
  Result ok = kef_cmd("score " + none.string() + score_args);
  ASSERT_EQ(ok.status, 0) << ok.output;
  EXPECT_EQ(read_npy(out).rows(), 4);
}

TEST_P(PluginErrors, ScoreEvalAndSampleExitCleanlyWhenAKernelOrBaseMeasureThrows) {
  const std::string error = GetParam();
  fs::path out = root_ / "out.npy";
  for (const std::string component : {"kernel", "base_measure"}) {
    SCOPED_TRACE(component);
    fs::path dir = lite_model(root_, component, error);
    const std::string where = component == "kernel" ? "kernel" : "base measure";
    Result s = kef_cmd("score " + dir.string() + " --data " + data_.string() + " --out " + out.string());
    expect_clean_failure(s, guarded_status(), where, out);
    Result e =
        kef_cmd("eval " + dir.string() + " --data " + data_.string() + " --type score_matching_loss --quiet");
    expect_clean_failure(e, guarded_status(), where, out);
    // One exception, one error in every command: a non-kef exception is the plugin error of the
    // component's own plugin, not of the code that called it (the lite model, the evaluator's plugin).
    if (error != "kef") {
      for (const Result* r : {&s, &e}) {
        EXPECT_NE(r->output.find("kef: plugin error: plugin fixture_throwing ("), std::string::npos) << r->output;
      }
    }
    // HMC may count a component's error inside a trajectory as a divergence (docs: "non-finite values
    // during sampling count as divergences"), so the status is not pinned here: only that the command
    // ends with one, and names the fixture when it fails.
    Result h = kef_cmd("sample " + dir.string() + " -n 5 --quiet --out " + out.string());
    EXPECT_GE(h.status, 0) << "killed by a signal: " << h.output;
    if (h.status != 0) {
      EXPECT_NE(h.output.find("fixture_throwing: " + where), std::string::npos) << h.output;
    }
    fs::remove(out);
  }
}

TEST_P(PluginErrors, EvalExitsCleanlyWhenTheEvaluatorThrows) {
  fs::path none = fixture_model(root_, "none", GetParam());
  fs::path out = root_ / "eval.json";
  Result r = kef_cmd("eval " + none.string() + " --data " + data_.string() +
                     " --type fixture_throwing --set error=" + GetParam() + " --quiet --out " + out.string());
  expect_clean_failure(r, guarded_status(), "evaluator", out);
}

// `kef run` and `kef validate` hold their plugins in the pipeline's own registry: a run whose kernel
// throws ends with a message and a status too, and leaves no output.
TEST_P(PluginErrors, RunExitsCleanlyWhenAKernelThrows) {
  const std::string toml = "schema_version = 1\n[data]\ntype = \"file\"\npath = \"" + data_.string() +
                           "\"\nsplit = { test = 1, validation = 0 }\n[[model]]\nname = \"m\"\n"
                           "[model.estimator]\ntype = \"lite\"\ninducing_points = 2\n"
                           "[model.kernel]\ntype = \"fixture_throwing\"\nerror = \"" +
                           GetParam() + "\"\n[model.base_measure]\ntype = \"gaussian\"\nstd = 4.0\n";
  const fs::path cfg = root_ / "p.toml";
  std::ofstream(cfg) << toml;
  const fs::path out = root_ / "run";
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + out.string());
  expect_clean_failure(r, guarded_status(), "kernel", out);
  Result v = kef_cmd("validate " + cfg.string());
  EXPECT_EQ(v.status, 0) << v.output;  // validation builds the kernel but never calls it
}

// Plugins run as the user: a plugin file or directory anyone can write is reported on stderr.
TEST(PluginPermissions, WorldWritablePluginFilesAndDirectoriesAreReported) {
  const fs::path dir = test::temp_dir("plugin-permissions") / "plugins";
  fs::create_directories(dir);
  const fs::path so = dir / "kef_fixture_throwing.so";
  fs::copy_file(fs::path(KEF_THROWING_FIXTURE_DIR) / "kef_fixture_throwing.so", so);
  auto run = [&](const std::string& command) {
    Result r;
    r.status = test::run_command(
        "KEF_PLUGIN_PATH=" + dir.string() + " " + test::kef_executable() + " " + command, &r.output);
    return r;
  };
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(
      so, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  Result quiet = run("plugins");
  ASSERT_EQ(quiet.status, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("writable by every user"), std::string::npos) << quiet.output;

  fs::permissions(so, fs::perms::others_write, fs::perm_options::add);
  fs::permissions(dir, fs::perms::others_write, fs::perm_options::add);
  for (const std::string& command :
       std::vector<std::string>{"plugins", "score /nonexistent --data x.npy --out y.npy"}) {
    Result r = run(command);
    EXPECT_NE(r.output.find("[kef] warning: plugin " + so.string() + " is writable by every user"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("[kef] warning: plugin directory " + dir.string() + " is writable by every user"),
              std::string::npos)
        << r.output;
  }
}

// A plugin that crashes while it loads (a static initialiser run by dlopen, or its registration
// function) still ends the command, but names itself first, in every command that loads plugins.
TEST(PluginCrash, APluginThatCrashesWhileLoadingIsNamed) {
  for (const char* stage : {"init", "register"}) {
    SCOPED_TRACE(stage);
    const fs::path dir = fs::path(KEF_CRASHING_FIXTURE_DIR) / stage;
    const fs::path so = dir / "kef_fixture_crashing.so";
    ASSERT_TRUE(fs::exists(so)) << so;
    for (const char* command : {"plugins", "score /nonexistent --data x.npy --out y.npy"}) {
      SCOPED_TRACE(command);
      Result r;
      r.status = test::run_command(
          "KEF_PLUGIN_PATH=" + dir.string() + " " + test::kef_executable() + " " + command, &r.output);
      // Killed by the signal (the shell may report it as 128 + SIGSEGV). Under ASan, kef's handler
      // hands the signal back to ASan's, which reports the crash and exits with status 1.
      if (test::built_with_address_sanitizer()) {
        EXPECT_EQ(r.status, 1) << r.output;
        EXPECT_NE(r.output.find("AddressSanitizer: SEGV"), std::string::npos) << r.output;
      } else {
        EXPECT_TRUE(r.status == -1 || r.status == 128 + SIGSEGV) << r.status << ": " << r.output;
      }
      EXPECT_NE(r.output.find("kef: crashed while loading plugin fixture_crashing (" + so.string() + ")"),
                std::string::npos)
          << r.output;
    }
  }
}

// Whoever can write the directory above a plugin directory can put a directory of their own in its
// place: reported too, unless that directory is sticky (only an entry's owner may rename it there).
TEST(PluginPermissions, WorldWritableParentOfAPluginDirectoryIsReported) {
  const fs::path parent = test::temp_dir("plugin-parent") / "shared";
  const fs::path dir = parent / "plugins";
  fs::create_directories(dir);
  fs::copy_file(fs::path(KEF_THROWING_FIXTURE_DIR) / "kef_fixture_throwing.so", dir / "kef_fixture_throwing.so");
  const fs::perms readable = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(dir, readable);
  auto run = [&] {
    Result r;
    r.status =
        test::run_command("KEF_PLUGIN_PATH=" + dir.string() + " " + test::kef_executable() + " plugins", &r.output);
    return r;
  };
  const std::string warning = "[kef] warning: directory " + parent.string() + ", above plugin directory " +
                              dir.string() + ", is writable by every user";
  fs::permissions(parent, readable);
  Result quiet = run();
  ASSERT_EQ(quiet.status, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("writable by every user"), std::string::npos) << quiet.output;

  fs::permissions(parent, readable | fs::perms::others_write);
  Result r = run();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(warning), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning: plugin directory"), std::string::npos) << r.output;  // the directory is not

  fs::permissions(parent, readable | fs::perms::others_write | fs::perms::sticky_bit);
  Result sticky = run();
  ASSERT_EQ(sticky.status, 0) << sticky.output;
  EXPECT_EQ(sticky.output.find("writable by every user"), std::string::npos) << sticky.output;
}

INSTANTIATE_TEST_SUITE_P(EveryKindOfException, PluginErrors, ::testing::Values("kef", "std", "custom"));

}  // namespace
}  // namespace kef::plugin_errors_test
