// The plugin host against real .so fixtures: broken plugins are refused with a reason naming the
// file, good ones still load, exceptions from plugin code become host exceptions, and objects made
// by a plugin keep its library loaded after the registry is gone.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace kef;
using ::testing::HasSubstr;

namespace {

using test::message_of;

fs::path fixture_dir() { return KEF_FIXTURE_DIR; }
fs::path fixture(const std::string& name) { return fixture_dir() / name; }
fs::path good_plugin() { return fixture("kef_fixture_good.so"); }

const PluginRecord* record_for(const Registry& r, const fs::path& file) {
  for (const auto& p : r.plugins())
    if (p.path == file) return &p;
  return nullptr;
}

// Whether the dynamic loader has the file mapped (RTLD_NOLOAD never loads it).
bool is_loaded(const fs::path& file) {
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

// Sets an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct FitFixture {
  Matrix train = Matrix::Random(20, 3);
  Matrix validation = Matrix(0, 3);
  Context context = Context(7, 1).child("test");
  FitReport report;
  FitInput input() { return FitInput{train, validation, context, report}; }
};

std::vector<std::string> component_list(const PluginRecord& r) { return r.components; }

}  // namespace

TEST(PluginHost, RefusesEveryBrokenFixtureAndLoadsTheGoodOne) {
  Registry r;
  r.load_plugins({fixture_dir()});

  const PluginRecord* good = record_for(r, good_plugin());
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->status, PluginRecord::Status::Loaded) << good->reason;
  EXPECT_EQ(good->name, "fixture_good");
  EXPECT_EQ(good->version, "1.2.3");
  EXPECT_EQ(good->summary, "plugin-host test fixture that works");
  EXPECT_EQ(
      component_list(*good),
      (std::vector<std::string>{"kernel/fixture_constant", "estimator/fixture_mean", "model/fixture_mean"}));

  const std::string good_label = "plugin fixture_good (" + good_plugin().string() + ")";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"kef_fixture_wrong_abi.so", "plugin ABI version mismatch (expected 1, got 999)"},
      {"kef_fixture_wrong_major.so", "kef major version mismatch (expected 0, got 1)"},
      {"kef_fixture_wrong_minor.so",
       "built for kef 0.2, this is kef 0.3: kef 0.x plugins must match the minor version (expected 3, got "
       "2); rebuild the plugin against this kef"},
      {"kef_fixture_no_descriptor.so",
       "no kef plugin descriptor (symbol kef_plugin_descriptor not exported; was it declared with "
       "KEF_PLUGIN?)"},
      {"kef_fixture_throwing_registration.so", "registration threw: fixture registration failure"},
      {"kef_fixture_good_duplicate.so",
       "registers kernel/fixture_constant, which " + good_label + " already registered"},
      {"kef_fixture_double_registration.so", "registers kernel/fixture_twice twice"},
      {"kef_garbage.so", "not an ELF file"},
  };
  for (const auto& [file, reason] : refused) {
    SCOPED_TRACE(file);
    const PluginRecord* rec = record_for(r, fixture(file));
    ASSERT_NE(rec, nullptr);
    EXPECT_EQ(rec->status, PluginRecord::Status::Refused);
    EXPECT_THAT(rec->reason, HasSubstr(reason));
    EXPECT_TRUE(rec->components.empty());
    EXPECT_FALSE(is_loaded(fixture(file)));  // refused plugins do not stay mapped
  }
  EXPECT_EQ(r.plugins().size(), refused.size() + 1);  // subdirectories are not searched

  // Registration is all or nothing.
  EXPECT_EQ(r.find(ComponentKind::Kernel, "fixture_other"), nullptr);
  EXPECT_EQ(r.find(ComponentKind::Kernel, "fixture_from_throwing"), nullptr);
  EXPECT_EQ(r.find(ComponentKind::Kernel, "fixture_twice"), nullptr);
  ASSERT_NE(r.find(ComponentKind::Kernel, "fixture_constant"), nullptr);
  EXPECT_EQ(r.find(ComponentKind::Kernel, "fixture_constant")->plugin, "fixture_good");

  // The descriptor is checked before loading: mismatched plugins never ran their initialisers.
  EXPECT_EQ(std::getenv("KEF_FIXTURE_WRONG_ABI_RAN"), nullptr);
  EXPECT_EQ(std::getenv("KEF_FIXTURE_WRONG_MAJOR_RAN"), nullptr);
  EXPECT_EQ(std::getenv("KEF_FIXTURE_WRONG_MINOR_RAN"), nullptr);
}

TEST(PluginHost, OlderMinorIsRefusedWithTheExactReasonWhileKefIsZeroX) {
  // An older plugin's vtables may lack slots a 0.x host calls, so it must not load at all.
  Registry r;
  const fs::path file = fixture("kef_fixture_wrong_minor.so");
  const std::string msg = message_of<PluginError>([&] { r.load_plugin(file); });
  ASSERT_EQ(r.plugins().size(), 1u);
  const PluginRecord& rec = r.plugins()[0];
  EXPECT_EQ(rec.status, PluginRecord::Status::Refused);
  EXPECT_EQ(rec.name, "fixture_wrong_minor");
  EXPECT_EQ(rec.reason,
            "built for kef 0.2, this is kef 0.3: kef 0.x plugins must match the minor version "
            "(expected 3, got 2); rebuild the plugin against this kef");
  EXPECT_THAT(msg, HasSubstr(rec.reason));
  EXPECT_EQ(r.find(ComponentKind::Kernel, "fixture_wrong_minor"), nullptr);
  EXPECT_FALSE(is_loaded(file));
  EXPECT_EQ(std::getenv("KEF_FIXTURE_WRONG_MINOR_RAN"), nullptr);
}

TEST(PluginHost, LoadPluginThrowsPluginErrorNamingTheFile) {
  for (const char* file :
       {"kef_fixture_wrong_abi.so", "kef_fixture_wrong_major.so", "kef_fixture_wrong_minor.so",
        "kef_fixture_no_descriptor.so", "kef_fixture_throwing_registration.so",
        "kef_fixture_double_registration.so", "kef_garbage.so"}) {
    SCOPED_TRACE(file);
    Registry r;
    const std::string msg = message_of<PluginError>([&] { r.load_plugin(fixture(file)); });
    EXPECT_THAT(msg, HasSubstr(fixture(file).string() + ": plugin"));
    EXPECT_THAT(msg, HasSubstr("refused: "));
    ASSERT_EQ(r.plugins().size(), 1u);
    EXPECT_EQ(r.plugins()[0].status, PluginRecord::Status::Refused);
  }

  Registry r;
  r.load_plugin(good_plugin());
  const std::string msg =
      message_of<PluginError>([&] { r.load_plugin(fixture("kef_fixture_good_duplicate.so")); });
  EXPECT_THAT(msg, HasSubstr("kef_fixture_good_duplicate.so: plugin fixture_good_duplicate refused"));
  EXPECT_THAT(msg, HasSubstr("plugin fixture_good (" + good_plugin().string() + ")"));
  // The host keeps working after a refusal.
  EXPECT_NE(r.make_kernel(test::config_from("type = \"fixture_constant\""), {}), nullptr);
}

TEST(PluginHost, MalformedFilesAreRefusedCleanly) {
  const fs::path dir = test::temp_dir("malformed");
  std::ifstream in(good_plugin(), std::ios::binary);
  const std::string good_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(good_bytes.size(), 4096u);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
  };
  write("kef_empty.so", "");
  write("kef_header_only.so", good_bytes.substr(0, 64));
  write("kef_half.so", good_bytes.substr(0, good_bytes.size() / 2));
  std::string elf32 = good_bytes.substr(0, 64);
  elf32[4] = 1;  // EI_CLASS = ELFCLASS32
  write("kef_elf32.so", elf32);
  fs::create_directory(dir / "kef_directory.so");

  Registry r;
  r.load_plugins({dir, "/nonexistent/kef/plugin/dir"});
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"kef_empty.so", "not an ELF file"},
      {"kef_header_only.so", "truncated ELF file"},
      {"kef_half.so", "truncated ELF file"},
      {"kef_elf32.so", "not a 64-bit ELF file"},
  };
  for (const auto& [file, reason] : expected) {
    SCOPED_TRACE(file);
    const PluginRecord* rec = record_for(r, dir / file);
    ASSERT_NE(rec, nullptr);
    EXPECT_EQ(rec->status, PluginRecord::Status::Refused);
    EXPECT_THAT(rec->reason, HasSubstr(reason));
  }
  EXPECT_EQ(r.plugins().size(), expected.size());  // the directory and the missing dir are skipped

  const std::string msg = message_of<PluginError>([&] { r.load_plugin(dir / "kef_directory.so"); });
  EXPECT_THAT(msg, HasSubstr("not a regular file"));
  EXPECT_THAT(message_of<PluginError>([&] { r.load_plugin(dir / "kef_missing.so"); }),
              HasSubstr("kef_missing.so: plugin refused: no such file"));
}

TEST(PluginHost, UnknownOrMissingTypeListsTheValidTypes) {
  Registry r;
  r.load_plugins({fixture_dir()});
  std::string msg = message_of<ConfigError>([&] { r.make_kernel(test::config_from("type = \"nope\""), {}); });
  EXPECT_THAT(msg, HasSubstr("unknown kernel type `nope`; valid types: fixture_constant"));
  EXPECT_THAT(msg, HasSubstr("(8 plugins were refused; run `kef plugins`)"));

  msg = message_of<ConfigError>([&] { r.make_kernel(test::config_from("value = 2.0"), {}); });
  EXPECT_THAT(msg, HasSubstr("missing `type`; valid types: fixture_constant"));

  msg = message_of<ConfigError>(
      [&] { r.info_for(ComponentKind::Evaluator, test::config_from("type = \"fssd\"")); });
  EXPECT_THAT(msg, HasSubstr("unknown evaluator type `fssd`; valid types: (none)"));

  // The type's keys are checked before the factory runs.
  EXPECT_THROW(r.make_kernel(test::config_from("type = \"fixture_constant\"\nsigma = 1.0"), {}), ConfigError);
  EXPECT_THROW(r.make_kernel(test::config_from("type = \"fixture_constant\"\nvalue = -1.0"), {}),
               ConfigError);
}

TEST(PluginHost, ExceptionsFromPluginCodeBecomeHostExceptions) {
  Registry r;
  r.load_plugin(good_plugin());
  const std::string label = "plugin fixture_good (" + good_plugin().string() + ")";

  std::string msg = message_of<PluginError>(
      [&] { r.make_kernel(test::config_from("type = \"fixture_constant\"\nexplode = true"), {}); });
  EXPECT_THAT(msg, HasSubstr(label + ": kernel/fixture_constant failed"));
  EXPECT_THAT(msg, HasSubstr("fixture factory exploded"));

  FitFixture fit;
  EstimatorPtr failing_std =
      r.make_estimator(test::config_from("type = \"fixture_mean\"\nfail = \"std\""), {}, {});
  msg = message_of<PluginError>([&] { failing_std->fit(fit.input()); });
  EXPECT_THAT(msg, HasSubstr(label + ": estimator/fixture_mean failed in fit: fixture fit failure"));

  // kef::Errors pass with their class and message unchanged.
  EstimatorPtr failing_kef =
      r.make_estimator(test::config_from("type = \"fixture_mean\"\nfail = \"kef\""), {}, {});
  msg = message_of<DataError>([&] { failing_kef->fit(fit.input()); });
  EXPECT_EQ(msg, "fixture: the data is unusable");
}

TEST(PluginHost, ModelLoadersAreGuardedAndWrapped) {
  Registry r;
  r.load_plugin(good_plugin());
  const fs::path dir = test::temp_dir("loader");
  fs::create_directories(dir / "ok");
  std::ofstream(dir / "ok" / "model.toml") << "type = \"fixture_mean\"\ndim = 3\n";
  fs::create_directories(dir / "explode");
  std::ofstream(dir / "explode" / "model.toml") << "type = \"fixture_mean\"\ndim = 3\nexplode = true\n";
  fs::create_directories(dir / "unknown");
  std::ofstream(dir / "unknown" / "model.toml") << "type = \"no_such_model\"\n";

  ModelPtr model = load_model(dir / "ok", r);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->dim(), 3);
  EXPECT_THAT(message_of<PluginError>([&] { load_model(dir / "explode", r); }),
              HasSubstr("fixture loader exploded"));
  EXPECT_THAT(message_of<ModelFileError>([&] { load_model(dir / "unknown", r); }),
              HasSubstr("unknown model type `no_such_model`; valid types: fixture_mean"));
}

TEST(PluginHost, ObjectsKeepTheirLibraryLoadedAfterTheRegistryIsGone) {
  ASSERT_FALSE(is_loaded(good_plugin()));
  KernelPtr kernel;
  EstimatorPtr estimator;
  {
    Registry r;
    r.load_plugin(good_plugin());
    kernel = r.make_kernel(test::config_from("type = \"fixture_constant\"\nvalue = 2.5"), {});
    estimator = r.make_estimator(test::config_from("type = \"fixture_mean\""), {}, {});
  }
  EXPECT_TRUE(is_loaded(good_plugin()));

  const Matrix X = Matrix::Random(4, 2), Y = Matrix::Random(3, 2);
  EXPECT_TRUE(kernel->gram(X, Y).isApproxToConstant(2.5));
  KernelStacks stacks;
  kernel->derivatives(X, Y, 2, stacks);
  EXPECT_EQ(stacks.d2.rows(), 8);
  EXPECT_EQ(stacks.d2.cols(), 3);
  EXPECT_EQ(kernel->type_name(), "fixture_constant");
  EXPECT_EQ(kernel->config().number("value"), 2.5);

  FitFixture fit;
  ModelPtr model = estimator->fit(fit.input());
  kernel.reset();
  estimator.reset();
  EXPECT_TRUE(is_loaded(good_plugin()));  // the model is plugin code too
  EXPECT_EQ(model->dim(), 3);
  EXPECT_EQ(model->describe(), "fixture mean model");
  EXPECT_NEAR(model->score(fit.train.colwise().mean()).norm(), 0.0, 1e-12);

  model.reset();
  EXPECT_FALSE(is_loaded(good_plugin()));  // and nothing leaks the library
}

TEST(PluginHost, SearchPathOrder) {
  const fs::path a = fixture_dir() / "shadow_a", b = fixture_dir() / "shadow_b";
  ScopedEnv env("KEF_PLUGIN_PATH", b.string() + "::" + a.string() + ":" + b.string());
  const std::vector<fs::path> path = plugin_search_path({"/from/config"});
  const std::vector<fs::path> expected = {"/from/config", b, a, installed_plugin_dir()};
  EXPECT_EQ(path, expected);  // the empty entry (working directory) and the repeat are dropped

  EXPECT_EQ(fs::weakly_canonical(installed_plugin_dir()), fs::weakly_canonical(test::plugin_dir()));
}

TEST(PluginHost, FirstPluginOfANameInSearchOrderWins) {
  const fs::path a = fixture_dir() / "shadow_a", b = fixture_dir() / "shadow_b";
  for (const auto& [first, second, winner] : {std::tuple{a, b, "a"}, std::tuple{b, a, "b"}}) {
    SCOPED_TRACE(winner);
    ScopedEnv env("KEF_PLUGIN_PATH", second.string());
    std::vector<fs::path> path = plugin_search_path({first.string()});
    ASSERT_GE(path.size(), 2u);
    path.resize(2);  // leave out the installed plugins
    Registry r;
    r.load_plugins(path);
    ASSERT_EQ(r.plugins().size(), 2u);
    EXPECT_EQ(r.plugins()[0].status, PluginRecord::Status::Loaded);
    EXPECT_EQ(r.plugins()[0].version, std::string("0.0.") + winner);
    EXPECT_EQ(r.plugins()[1].status, PluginRecord::Status::Shadowed);
    EXPECT_THAT(r.plugins()[1].reason, HasSubstr("shadowed by plugin fixture_shadow from " +
                                                 (first / "kef_fixture_shadow.so").string()));
    EXPECT_NE(r.find(ComponentKind::Kernel, std::string("fixture_shadow_") + winner), nullptr);
    EXPECT_EQ(r.components(ComponentKind::Kernel).size(), 1u);
    EXPECT_FALSE(is_loaded(second / "kef_fixture_shadow.so"));
  }
}

TEST(PluginHost, BuiltinsShareTheRegistrationRules) {
  Registry r;
  r.register_builtin("test builtins", [](PluginRegistrar& reg) {
    ComponentInfo info;
    info.type = "fixture_constant";
    reg.add_kernel(info, [](const Config&, const BuildContext&) -> std::unique_ptr<Kernel> {
      throw std::runtime_error("builtin factory failure");
    });
  });
  ASSERT_NE(r.find(ComponentKind::Kernel, "fixture_constant"), nullptr);
  EXPECT_EQ(r.find(ComponentKind::Kernel, "fixture_constant")->plugin, "test builtins");
  // The program's own exceptions are not re-labelled as plugin errors.
  EXPECT_THROW(r.make_kernel(test::config_from("type = \"fixture_constant\""), {}), std::runtime_error);

  // A plugin clashing with a builtin is refused, naming both.
  const std::string msg = message_of<PluginError>([&] { r.load_plugin(good_plugin()); });
  EXPECT_THAT(msg,
              HasSubstr("registers kernel/fixture_constant, which builtin test builtins already registered"));
  EXPECT_EQ(r.find(ComponentKind::Estimator, "fixture_mean"), nullptr);

  // And a builtin clashing with a plugin is refused too, leaving the registry unchanged.
  Registry r2;
  r2.load_plugin(good_plugin());
  const std::string msg2 = message_of<PluginError>([&] {
    r2.register_builtin("late builtins", [](PluginRegistrar& reg) {
      ComponentInfo other;
      other.type = "late_kernel";
      reg.add_kernel(other, [](const Config&, const BuildContext&) { return std::unique_ptr<Kernel>(); });
      ComponentInfo clash;
      clash.type = "fixture_mean";
      reg.add_estimator(clash, [](const Config&, const EstimatorParts&, const BuildContext&) {
        return std::unique_ptr<Estimator>();
      });
    });
  });
  EXPECT_THAT(msg2, HasSubstr("registers estimator/fixture_mean, which plugin fixture_good ("));
  EXPECT_EQ(r2.find(ComponentKind::Kernel, "late_kernel"), nullptr);
}

TEST(PluginHost, Version) { EXPECT_STREQ(version(), "0.3.0"); }
