// Faults found by fuzzing and fault injection (issue 11 §7), through the real kef command: each input
// gets a message and exit status 2 (bad input) or 1 (a failed write), never a crash, a silent wrong
// result or exit 0.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;
using test::write_file;
using Result = test::CommandResult;

const char* kPipeline = R"(schema_version = 1
seed = 3
[data]
type = "synthetic/banana"
n = 300
split = { test = 100, validation = 0 }
[[model]]
name = "lite"
[model.estimator]
type = "lite"
inducing_points = 20
[model.kernel]
type = "gaussian"
sigma = 1.5
[model.base_measure]
type = "gaussian"
std = 4.0
[[evaluate]]
type = "score_matching_loss"
)";

// A saved model to score, sample and evaluate (one run per test program).
const fs::path& saved_model() {
  static const fs::path dir = [] {
    fs::path root = test::temp_dir("robust-model");
    fs::path cfg = write_file(root, "p.toml", kPipeline);
    Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (root / "out").string());
    EXPECT_EQ(r.status, 0) << r.output;
    return root / "out" / "models" / "lite";
  }();
  return dir;
}

TEST(Robustness, ATomlFileNested40000LevelsDeepIsAConfigError) {
  fs::path dir = test::temp_dir("robust-toml");
  std::string header = "[a";
  for (int i = 0; i < 40000; ++i) header += ".a";
  fs::path cfg = write_file(dir, "deep.toml", "schema_version = 1\n" + header + "]\n");
  Result r = kef_cmd("validate " + cfg.string());
  EXPECT_EQ(r.status, 2) << r.output.substr(0, 500);
  EXPECT_TRUE(contains(r.output, cfg.string() + ":2: ")) << r.output.substr(0, 500);
}

TEST(Robustness, AFailedWriteOfTheRunOutputIsAnErrorAndPublishesNothing) {
  // RLIMIT_FSIZE of 512 bytes (dash counts 512-byte blocks), SIGXFSZ ignored: every write past it
  // fails with EFBIG, as on a full disk. kef 0.2 exited 0 and published the truncated files.
  fs::path dir = test::temp_dir("robust-fsize");
  fs::path cfg = write_file(dir, "p.toml", std::string(kPipeline) + "[output]\nsave_models = false\n");
  std::string output;
  int status =
      test::run_command("sh -c 'ulimit -f 1; trap \"\" XFSZ; exec " + test::kef_executable() + " run " +
                            cfg.string() + " --quiet --output " + (dir / "out").string() + "'",
                        &output);
  EXPECT_EQ(status, 1) << output;
  EXPECT_TRUE(contains(output, "cannot write")) << output;
  EXPECT_FALSE(fs::exists(dir / "out"));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_FALSE(contains(e.path().filename().string(), "kef-tmp")) << e.path();
}

TEST(Robustness, AFullDiskForLogModelOrResultsFailsTheRunAndPublishesNothing) {
  // Each file alone fails as on a full disk (ENOSPC from write(2), injected by LD_PRELOAD). kef 0.2
  // checked these streams before flushing them: it exited 0 and published an empty log.txt or
  // model.toml.
  fs::path dir = test::temp_dir("robust-enospc");
  fs::path cfg = write_file(dir, "p.toml", kPipeline);
  for (const std::string file : {"/log.txt", "/model.toml", "/results.json"}) {
    std::string output;
    int status = test::run_command(
        "KEF_TEST_ENOSPC=" + file + " LD_PRELOAD=" + std::string(KEF_TEST_ENOSPC_LIB) + " " +
            test::kef_executable() + " run " + cfg.string() + " --quiet --output " + (dir / "out").string(),
        &output);
    EXPECT_EQ(status, 1) << file << "\n" << output;
    EXPECT_TRUE(contains(output, file.substr(1) + ": cannot write (disk full?)")) << file << "\n" << output;
    EXPECT_FALSE(fs::exists(dir / "out")) << file;
  }
  // Without the fault the same run succeeds: the injection hits only the named file.
  Result ok = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  EXPECT_EQ(ok.status, 0) << ok.output;
}

TEST(Robustness, AFailedWriteToStandardOutputIsAnError) {
  fs::path dir = test::temp_dir("robust-stdout");
  fs::path cfg = write_file(dir, "p.toml", kPipeline);
  std::string output;
  int status = test::run_command(
      "{ " + test::kef_executable() + " validate " + cfg.string() + " > /dev/full; }", &output);
  EXPECT_EQ(status, 2) << output;
  EXPECT_TRUE(contains(output, "cannot write to standard output")) << output;
}

TEST(Robustness, StandardisingAnOverflowingColumnIsADataErrorNamingIt) {
  fs::path dir = test::temp_dir("robust-standardize");
  // The outlier is in the training split (the last 5 rows are the test split, shuffle = false).
  std::string csv = "waiting,duration\n60,1e200\n";
  for (int i = 0; i < 50; ++i) csv += std::to_string(50 + i) + "," + std::to_string(2 + 0.05 * i) + "\n";
  write_file(dir, "d.csv", csv);
  std::string cfg = kPipeline;
  cfg.replace(cfg.find("type = \"synthetic/banana\"\nn = 300"),
              std::string("type = \"synthetic/banana\"\nn = 300").size(),
              "type = \"file\"\npath = \"d.csv\"\nstandardize = true\nshuffle = false");
  cfg.replace(cfg.find("test = 100"), std::string("test = 100").size(), "test = 5");
  fs::path p = write_file(dir, "p.toml", cfg);
  Result r = kef_cmd("validate " + p.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "data error")) << r.output;
  EXPECT_TRUE(contains(r.output, "column duration")) << r.output;
  EXPECT_TRUE(contains(r.output, "overflows")) << r.output;
  EXPECT_TRUE(contains(r.output, "1e+200")) << r.output;
}

TEST(Robustness, CountKeysHaveAMaximum) {
  fs::path dir = test::temp_dir("robust-counts");
  fs::path p = write_file(
      dir, "p.toml",
      std::string(kPipeline) + "[[evaluate]]\ntype = \"log_likelihood\"\nsamples = 9223372036854775807\n");
  Result r = kef_cmd("validate " + p.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "samples")) << r.output;
  EXPECT_TRUE(contains(r.output, "out of range")) << r.output;
  // The run seed may use the whole non-negative range.
  Result seed =
      kef_cmd("validate " + p.string() + " --set seed=9223372036854775807 --set evaluate[1].samples=1000");
  EXPECT_EQ(seed.status, 0) << seed.output;
}

TEST(Robustness, CommandLineCountsAndSeedsAreChecked) {
  const fs::path& model = saved_model();
  fs::path dir = test::temp_dir("robust-cli");
  const std::string out = (dir / "s.npy").string();
  Result threads = kef_cmd("sample " + model.string() + " -n 5 --out " + out + " --threads 0");
  EXPECT_EQ(threads.status, 2) << threads.output;
  EXPECT_TRUE(contains(threads.output, "--threads: expected an integer from 1 to 4096, got `0`"))
      << threads.output;
  EXPECT_LT(threads.output.size(), 300u) << threads.output;
  for (const std::string& args :
       {"sample " + model.string() + " -n 5 --out " + out + " --seed -1",
        "eval " + model.string() + " --data " + out + " --type score_matching_loss --seed -1",
        "sample " + model.string() + " -n 9223372036854775807 --out " + out,
        "sample " + model.string() + " -n 0 --out " + out, std::string("run x.toml --threads -2")}) {
    Result r = kef_cmd(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "expected an integer from")) << args << "\n" << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
  Result ok = kef_cmd(
      "sample " + model.string() + " -n 5 --quiet --allow-poor-mixing --out " + out +
      " --seed 18446744073709551615");  // 5 draws are too few for the mixing check, not the point here
  EXPECT_EQ(ok.status, 0) << ok.output;
}

TEST(Robustness, OutputFilesMustBeRegularFilesInAWritableDirectory) {
  const fs::path& model = saved_model();
  fs::path dir = test::temp_dir("robust-out");
  Matrix X = Matrix::Zero(2, 2);
  fs::path data = dir / "x.npy";
  write_npy(data, X);
  fs::create_directory(dir / "sub");
  fs::create_symlink(dir / "target.npy", dir / "link.npy");
  write_file(dir, "plain", "not a directory");
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/null", "not a regular file"},
      {(dir / "link.npy").string(), "symbolic link"},
      {(dir / "sub").string(), "not a regular file"},
      {(dir / "missing" / "o.npy").string(), "does not exist"},
      {(dir / "plain" / "o.npy").string(), "does not exist"}};
  for (const auto& [out, why] : cases) {
    for (const std::string& args : {"score " + model.string() + " --data " + data.string() + " --out " + out,
                                    "sample " + model.string() + " -n 3 --quiet --out " + out,
                                    "eval " + model.string() + " --data " + data.string() +
                                        " --type score_matching_loss --quiet --out " + out}) {
      Result r = kef_cmd(args);
      EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, why)) << args << "\n" << r.output;
    }
  }
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  EXPECT_TRUE(fs::is_symlink(dir / "link.npy"));
  EXPECT_FALSE(fs::exists(dir / "target.npy"));
  // An unwritable output directory for a run is bad input too (exit 2).
  fs::path cfg = write_file(dir, "p.toml", kPipeline);
  Result run = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "plain" / "out").string());
  EXPECT_EQ(run.status, 2) << run.output;
}

TEST(Robustness, ModelNamesWithControlCharactersOrOver255BytesAreConfigErrors) {
  fs::path dir = test::temp_dir("robust-names");
  for (const std::string& name :
       {std::string("a\\u0000b"), std::string("tab\\u0009"), std::string(256, 'm')}) {
    std::string cfg = kPipeline;
    cfg.replace(cfg.find("name = \"lite\""), std::string("name = \"lite\"").size(),
                "name = \"" + name + "\"");
    fs::path p = write_file(dir, "p.toml", cfg);
    Result r = kef_cmd("run " + p.string() + " --quiet --output " + (dir / "out").string());
    EXPECT_EQ(r.status, 2) << r.output.substr(0, 400);
    EXPECT_TRUE(contains(r.output, "1 to 255 bytes")) << r.output.substr(0, 400);
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
  std::string cfg = kPipeline;
  cfg.replace(cfg.find("name = \"lite\""), std::string("name = \"lite\"").size(),
              "name = \"" + std::string(255, 'm') + "\"");
  Result ok = kef_cmd("validate " + write_file(dir, "p.toml", cfg).string());
  EXPECT_EQ(ok.status, 0) << ok.output.substr(0, 400);
}

}  // namespace
}  // namespace kef
