// Faults found by fuzzing and fault injection, through the real kef command: each input
// gets a message and exit status 2 (bad input) or 1 (a failed write), never a crash, a silent wrong
// result or exit 0.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <fstream>
#include <limits>

#include "kef/error.hpp"
#include "kef/memory_budget.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;
using test::write_file;
using Result = test::CommandResult;

// 300 banana rows, a lite model of 20 inducing points, one evaluator.
const std::string kSmallPipeline =
    test::PipelineText().banana(300, 100).lite("lite", 20).evaluate("score_matching_loss");

// A saved model to score, sample and evaluate (one run per test program).
const fs::path& saved_model() {
  static const fs::path dir = [] {
    fs::path root = test::temp_dir("robust-model");
    fs::path cfg = write_file(root, "p.toml", kSmallPipeline);
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
  fs::path cfg = write_file(dir, "p.toml", kSmallPipeline + "[output]\nsave_models = false\n");
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
  fs::path cfg = write_file(dir, "p.toml", kSmallPipeline);
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
  fs::path cfg = write_file(dir, "p.toml", kSmallPipeline);
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
  std::string cfg = kSmallPipeline;
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
      kSmallPipeline + "[[evaluate]]\ntype = \"log_likelihood\"\nsamples = 9223372036854775807\n");
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
  fs::path cfg = write_file(dir, "p.toml", kSmallPipeline);
  Result run = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "plain" / "out").string());
  EXPECT_EQ(run.status, 2) << run.output;
}

TEST(Robustness, ModelNamesWithControlCharactersOrOver255BytesAreConfigErrors) {
  fs::path dir = test::temp_dir("robust-names");
  for (const std::string& name :
       {std::string("a\\u0000b"), std::string("tab\\u0009"), std::string(256, 'm')}) {
    std::string cfg = kSmallPipeline;
    cfg.replace(cfg.find("name = \"lite\""), std::string("name = \"lite\"").size(),
                "name = \"" + name + "\"");
    fs::path p = write_file(dir, "p.toml", cfg);
    Result r = kef_cmd("run " + p.string() + " --quiet --output " + (dir / "out").string());
    EXPECT_EQ(r.status, 2) << r.output.substr(0, 400);
    EXPECT_TRUE(contains(r.output, "1 to 255 bytes")) << r.output.substr(0, 400);
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
  std::string cfg = kSmallPipeline;
  cfg.replace(cfg.find("name = \"lite\""), std::string("name = \"lite\"").size(),
              "name = \"" + std::string(255, 'm') + "\"");
  Result ok = kef_cmd("validate " + write_file(dir, "p.toml", cfg).string());
  EXPECT_EQ(ok.status, 0) << ok.output.substr(0, 400);
}

// Where a regular file is expected, a directory, a FIFO or a device is refused before it is read: a
// directory read as an empty pipeline ("missing required key `data`"), a FIFO blocked forever and
// /dev/zero grew memory without limit.
TEST(Robustness, APipelineOrDataFileThatIsNotARegularFileIsRefused) {
  fs::path dir = test::temp_dir("robust-irregular");
  fs::create_directory(dir / "pipeline_dir");
  Result directory = kef_cmd("validate " + (dir / "pipeline_dir").string());
  EXPECT_EQ(directory.status, 2) << directory.output;
  EXPECT_TRUE(contains(directory.output, "is a directory")) << directory.output;
  EXPECT_FALSE(contains(directory.output, "missing required key")) << directory.output;
  ASSERT_EQ(::mkfifo((dir / "fifo.toml").c_str(), 0600), 0);
  // `timeout`: before the check, opening the FIFO waited for a writer forever.
  Result fifo = kef_cmd("validate " + (dir / "fifo.toml").string(), "timeout 20");
  EXPECT_EQ(fifo.status, 2) << fifo.output;
  EXPECT_TRUE(contains(fifo.output, "is a named pipe (FIFO)")) << fifo.output;
  Result zero = kef_cmd("validate /dev/zero", "timeout 20");
  EXPECT_EQ(zero.status, 2) << zero.output;
  EXPECT_TRUE(contains(zero.output, "/dev/zero: is a character device")) << zero.output;
  // The same for a data file (a .csv name pointing at /dev/zero) and a saved model's model.toml.
  fs::create_symlink("/dev/zero", dir / "zero.csv");
  std::string cfg = kSmallPipeline;
  cfg.replace(cfg.find("type = \"synthetic/banana\"\nn = 300"),
              std::string("type = \"synthetic/banana\"\nn = 300").size(),
              "type = \"file\"\npath = \"zero.csv\"");
  Result data = kef_cmd("validate " + write_file(dir, "p.toml", cfg).string(), "timeout 20");
  EXPECT_EQ(data.status, 2) << data.output;
  EXPECT_TRUE(contains(data.output, "zero.csv: is a character device")) << data.output;
  fs::create_directory(dir / "model");
  fs::create_symlink("/dev/zero", dir / "model" / "model.toml");
  Result model = kef_cmd("score " + (dir / "model").string() + " --data " + (dir / "zero.csv").string() +
                             " --out " + (dir / "s.npy").string(),
                         "timeout 20");
  EXPECT_EQ(model.status, 2) << model.output;
  EXPECT_TRUE(contains(model.output, "model.toml: is a character device")) << model.output;
}

TEST(Robustness, AnEmptyOutputDirectoryIsRefused) {
  fs::path dir = test::temp_dir("robust-empty-output");
  fs::path cfg = write_file(dir, "p.toml", kSmallPipeline);
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output ''");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--output: empty path")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "runs"));
}

// A misspelt command or option is named, with the closest known word, as pipeline keys are.
TEST(Robustness, AMisspeltCommandOrOptionIsNamedWithASuggestion) {
  Result command = kef_cmd("smaple model -n 3 --out x.npy");
  EXPECT_EQ(command.status, 2) << command.output;
  EXPECT_TRUE(contains(command.output, "unknown command `smaple` (did you mean `sample`?)"))
      << command.output;
  Result option = kef_cmd("run p.toml --ouput out");
  EXPECT_EQ(option.status, 2) << option.output;
  EXPECT_TRUE(contains(option.output, "unknown option `--ouput` of `kef run` (did you mean `--output`?)"))
      << option.output;
  Result score = kef_cmd("score m --data d.npy --ouput x.npy");
  EXPECT_EQ(score.status, 2) << score.output;
  EXPECT_TRUE(contains(score.output, "unknown option `--ouput` of `kef score` (did you mean `--out`?)"))
      << score.output;
  EXPECT_FALSE(contains(score.output, "--out is required")) << score.output;
  // Known words with a different error keep CLI11's message.
  Result missing = kef_cmd("score m --data d.npy");
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_TRUE(contains(missing.output, "--out is required")) << missing.output;
}

// A saved model with a finite but extreme parameter (preprocessing_matrix[0, 1] = 1e308: the matrix
// stays triangular, so its log|det| still agrees) drew ±inf samples and `kef sample` wrote them with
// exit 0. Now nothing is written and the error names the model, the row and the component.
TEST(Robustness, SampleRefusesToWriteNonFiniteDraws) {
  fs::path dir = test::temp_dir("robust-extreme-sample");
  std::string cfg = kSmallPipeline;
  cfg.replace(cfg.find("n = 300\n"), std::string("n = 300\n").size(), "n = 300\nstandardize = true\n");
  fs::path p = write_file(dir, "p.toml", cfg);
  Result run = kef_cmd("run " + p.string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path model = dir / "out" / "models" / "lite";
  Matrix A = read_npy(model / "preprocessing_matrix.npy");
  A(0, 1) = 1e308;
  write_npy(model / "preprocessing_matrix.npy", A);
  const fs::path out = dir / "s.npy";
  Result r =
      kef_cmd("sample " + model.string() + " -n 400 --quiet --allow-poor-mixing --out " + out.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "numerical error: model " + model.string() + ": sample ")) << r.output;
  EXPECT_TRUE(contains(r.output, "component ")) << r.output;
  EXPECT_TRUE(contains(r.output, "values are not finite")) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

// -n inside its documented limit (10^9) needs more memory than the machine has: refused up front with
// the estimate, not a bare std::bad_alloc after minutes of sampling.
TEST(Robustness, SampleRefusesAnOutputLargerThanTheAvailableMemory) {
  if (const auto available = available_memory_bytes(); !available || *available > 40e9)
    GTEST_SKIP() << "the test needs a machine with less than 40 GB of memory available";
  const fs::path& model = saved_model();
  fs::path dir = test::temp_dir("robust-sample-memory");
  Result r = kef_cmd("sample " + model.string() + " -n 1000000000 --quiet --out " + (dir / "s.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "-n 1000000000: needs an estimated 48 GB for the samples")) << r.output;
  EXPECT_TRUE(contains(r.output, "of memory available")) << r.output;
  EXPECT_FALSE(contains(r.output, "bad_alloc")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "s.npy"));
}

// Memory that runs out after the up-front estimate passed (here a limit below what the draws need) is
// one error kind with one exit status, naming the step and the size of the allocation that failed (one
// of the 4 chains' draws, 2.5e7 x 2 doubles: 400 MB): not "internal error: std::bad_alloc" (exit 1),
// nor "plugin error" when a plugin's allocation failed (exit 2). The limit is `ulimit -v`, which ASan's
// shadow memory cannot start under; under ASan it is ASan's own limit on one allocation (below a
// chain's draws, so that no chain starts), with a failed allocation returning null as malloc does.
TEST(Robustness, RunningOutOfMemoryIsOneErrorKindNamingTheStepAndSize) {
  const std::string limit =
      test::built_with_address_sanitizer()
          ? "ASAN_OPTIONS=\"$ASAN_OPTIONS:allocator_may_return_null=1:max_allocation_size_mb=300\""
          : "ulimit -v 1500000;";
  const fs::path& model = saved_model();
  fs::path dir = test::temp_dir("robust-oom");
  Result r =
      kef_cmd("sample " + model.string() + " -n 100000000 --quiet --out " + (dir / "s.npy").string(), limit);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "kef: out of memory: kef sample: an allocation of 400 MB failed"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "s.npy"));
  // A fit through a plugin: lite's 20000 x 20000 system (3.2 GB), the first allocation over either limit.
  const std::string big = test::PipelineText().banana(30000, 100).lite("lite", 20000).str();
  Result fit = kef_cmd(
      "run " + write_file(dir, "big.toml", big).string() + " --quiet --output " + (dir / "out").string(),
      limit);
  EXPECT_EQ(fit.status, 2) << fit.output;
  EXPECT_TRUE(contains(fit.output, "kef: out of memory: plugin lite (")) << fit.output;
  EXPECT_TRUE(contains(fit.output, "estimator/lite failed in fit: an allocation of 3.2 GB failed"))
      << fit.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// A saved model is an output too: a non-finite parameter is refused when written, naming the array and
// the entry, so that no run publishes a model that draws or scores non-finite values.
TEST(Robustness, ASavedModelNeverHoldsANonFiniteParameter) {
  fs::path dir = test::temp_dir("robust-save-nonfinite") / "m";
  ModelWriter writer(dir, "lite");
  Matrix A = Matrix::Ones(3, 2);
  writer.write_array("inducing_points", A);
  A(1, 0) = std::numeric_limits<double>::infinity();
  try {
    writer.write_array("alpha", A);
    ADD_FAILURE() << "a non-finite array was saved";
  } catch (const NumericalError& e) {
    EXPECT_TRUE(contains(e.what(), "alpha.npy[1, 0] is not finite")) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "alpha.npy"));
  EXPECT_TRUE(fs::exists(dir / "inducing_points.npy"));
}

}  // namespace
}  // namespace kef
