// `kef fit DATA`: one model fitted to a data file with the defaults of a fit without a pipeline, saved
// as a model directory that `kef sample` and `kef score` use, with the pipeline it ran beside it.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;
using test::write_file;

// 200 rows of two correlated columns far from the origin and of different scales (mean 100 and -3,
// standard deviations 10 and 0.5): a model that forgot the data's units would sample near 0.
std::string csv_text(int rows = 200) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream s;
  s.precision(17);
  s << "height,offset\n";
  for (int i = 0; i < rows; ++i) {
    const double a = z(rng), b = z(rng);
    s << 100.0 + 10.0 * a << "," << -3.0 + 0.5 * (0.6 * a + 0.8 * b) << "\n";
  }
  return s.str();
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FitCommand, FitsACsvWithAHeaderAndTheModelIsSampledInDataUnits) {
  const fs::path dir = test::temp_dir("fit-csv");
  const fs::path data = write_file(dir, "heights.csv", csv_text());
  const fs::path out = dir / "model";
  const auto r = kef_cmd("fit " + data.string() + " --out " + out.string() + " --quiet 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  // The summary: rows, columns, model, the defaults it chose, where the model is and what to run next.
  EXPECT_TRUE(contains(r.output, "fitted lite to 200 rows x 2 columns")) << r.output;
  EXPECT_TRUE(contains(r.output, "columns: height, offset")) << r.output;
  EXPECT_TRUE(contains(r.output, "default kernel.sigma = \"median\"")) << r.output;
  EXPECT_TRUE(contains(r.output, "chosen kernel.sigma = ")) << r.output;
  EXPECT_TRUE(contains(r.output, "model: " + out.string())) << r.output;
  EXPECT_TRUE(contains(r.output, "kef sample " + out.string())) << r.output;
  EXPECT_TRUE(fs::exists(out / "model.toml"));
  EXPECT_TRUE(fs::exists(out / "pipeline.toml"));
  EXPECT_TRUE(fs::exists(out / "fit.json"));

  const fs::path samples = dir / "samples.npy";
  const auto s = kef_cmd("sample " + out.string() + " -n 400 --seed 1 --allow-poor-mixing --quiet --out " +
                         samples.string() + " 2>&1");
  ASSERT_EQ(s.status, 0) << s.output;
  const Matrix X = read_npy(samples);
  ASSERT_EQ(X.rows(), 400);
  ASSERT_EQ(X.cols(), 2);
  ASSERT_TRUE(X.allFinite());
  const Vector mean = X.colwise().mean();
  EXPECT_NEAR(mean(0), 100.0, 5.0);  // 10 / sqrt(400) = 0.5 per independent draw: loose for HMC's
  EXPECT_NEAR(mean(1), -3.0, 0.25);

  const fs::path scores = dir / "scores.npy";
  const auto sc = kef_cmd("score " + out.string() + " --data " + data.string() + " --quiet --out " +
                          scores.string() + " 2>&1");
  ASSERT_EQ(sc.status, 0) << sc.output;
  EXPECT_EQ(read_npy(scores).rows(), 200);
}

TEST(FitCommand, ThePipelineItWroteFitsTheSameModelUnderKefRun) {
  const fs::path dir = test::temp_dir("fit-pipeline");
  const fs::path data = write_file(dir, "d.csv", csv_text(120));
  const fs::path out = dir / "m";
  const auto r = kef_cmd("fit " + data.string() + " --out " + out.string() +
                         " --set lambda_alpha=0.01 --set kernel.sigma=median --quiet 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path run = dir / "run";
  const auto k = kef_cmd("run " + (out / "pipeline.toml").string() + " --output " + run.string() + " --quiet 2>&1");
  ASSERT_EQ(k.status, 0) << k.output;
  int arrays = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() != ".npy") continue;
    ++arrays;
    EXPECT_EQ(read_bytes(entry.path()), read_bytes(run / "models" / "model" / entry.path().filename()))
        << entry.path().filename();
  }
  EXPECT_GT(arrays, 2);
  EXPECT_TRUE(contains(read_bytes(out / "pipeline.toml"), "lambda_alpha = 0.01"));
}

TEST(FitCommand, ABadCsvRowIsNamedAndNothingIsWritten) {
  const fs::path dir = test::temp_dir("fit-bad-row");
  std::string text = csv_text(20);
  const auto line5 = [&] {  // the start of the file's fifth line
    std::size_t at = 0;
    for (int i = 0; i < 4; ++i) at = text.find('\n', at) + 1;
    return at;
  }();
  text.replace(line5, text.find('\n', line5) - line5, "1.5,oops");
  const fs::path data = write_file(dir, "bad.csv", text);
  const auto r = kef_cmd("fit " + data.string() + " --out " + (dir / "m").string() + " --quiet 2>&1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bad.csv")) << r.output;
  EXPECT_TRUE(contains(r.output, "line 5")) << r.output;
  EXPECT_TRUE(contains(r.output, "oops")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "m"));
}

TEST(FitCommand, AnUnknownSetKeyIsRefusedWithASuggestion) {
  const fs::path dir = test::temp_dir("fit-bad-key");
  const fs::path data = write_file(dir, "d.csv", csv_text(50));
  const auto r = kef_cmd("fit " + data.string() + " --out " + (dir / "m").string() + " --set lamda_alpha=1 2>&1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--set lamda_alpha=1")) << r.output;
  EXPECT_TRUE(contains(r.output, "did you mean `lambda_alpha`")) << r.output;
  const auto part = kef_cmd("fit " + data.string() + " --out " + (dir / "m").string() + " --set kernel.sigam=2 2>&1");
  EXPECT_EQ(part.status, 2) << part.output;
  EXPECT_TRUE(contains(part.output, "did you mean `kernel.sigma`")) << part.output;
  const auto model = kef_cmd("fit " + data.string() + " --out " + (dir / "m").string() + " --model litee 2>&1");
  EXPECT_EQ(model.status, 2) << model.output;
  EXPECT_TRUE(contains(model.output, "did you mean `lite`")) << model.output;
  // A value of the wrong type is named by its key in the pipeline kef fit wrote, with no line and column
  // of a text the user never saw.
  const auto value = kef_cmd("fit " + data.string() + " --out " + (dir / "m").string() + " --set lambda_alpha=abc 2>&1");
  EXPECT_EQ(value.status, 2) << value.output;
  EXPECT_TRUE(contains(value.output, "kef fit: model[0].estimator.lambda_alpha: expected")) << value.output;
  EXPECT_FALSE(fs::exists(dir / "m"));
}

TEST(FitCommand, AnExistingOutIsRefusedUnlessForcedAndOnlyASavedModelIsReplaced) {
  const fs::path dir = test::temp_dir("fit-existing");
  const fs::path data = write_file(dir, "d.csv", csv_text(60));
  const fs::path mine = dir / "mine";
  fs::create_directories(mine);
  write_file(mine, "notes.txt", "my notes");
  const auto r = kef_cmd("fit " + data.string() + " --model gaussian_fit --out " + mine.string() + " 2>&1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--force")) << r.output;
  const auto forced =
      kef_cmd("fit " + data.string() + " --model gaussian_fit --force --out " + mine.string() + " 2>&1");
  EXPECT_EQ(forced.status, 2) << forced.output;  // not a saved model: never replaced
  EXPECT_EQ(read_bytes(mine / "notes.txt"), "my notes");
  EXPECT_FALSE(fs::exists(mine / "model.toml"));

  const fs::path model = dir / "model";
  ASSERT_EQ(kef_cmd("fit " + data.string() + " --model gaussian_fit --quiet --out " + model.string()).status, 0);
  const auto again = kef_cmd("fit " + data.string() + " --model gaussian_fit --quiet --out " + model.string() + " 2>&1");
  EXPECT_EQ(again.status, 2) << again.output;
  const auto replaced = kef_cmd("fit " + data.string() + " --model gmm --force --quiet --out " + model.string() + " 2>&1");
  EXPECT_EQ(replaced.status, 0) << replaced.output;
  EXPECT_TRUE(contains(read_bytes(model / "pipeline.toml"), "type = \"gmm\""));
}

TEST(FitCommand, EachModelTypeFitsWithItsDefaultsAndIsScored) {
  const fs::path dir = test::temp_dir("fit-types");
  const fs::path data = write_file(dir, "d.csv", csv_text(150));
  for (const std::string model : {"gaussian_fit", "gmm", "kde", "nystrom"}) {
    const fs::path out = dir / model;
    const auto r = kef_cmd("fit " + data.string() + " --model " + model + " --quiet --out " + out.string() + " 2>&1");
    ASSERT_EQ(r.status, 0) << model << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "fitted " + model + " to ")) << r.output;
    const fs::path scores = dir / (model + ".npy");
    const auto sc =
        kef_cmd("score " + out.string() + " --data " + data.string() + " --quiet --out " + scores.string() + " 2>&1");
    ASSERT_EQ(sc.status, 0) << model << ": " << sc.output;
    EXPECT_TRUE(read_npy(scores).allFinite()) << model;
  }
}

TEST(FitCommand, TheDefaultOutIsNamedAfterTheDataAndTheModel) {
  const fs::path dir = test::temp_dir("fit-default-out");
  write_file(dir, "iris.csv", csv_text(40));
  const auto r = kef_cmd("fit iris.csv --model gaussian_fit --quiet 2>&1", "cd " + dir.string() + " &&");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "iris-gaussian_fit" / "model.toml"));
}

}  // namespace
}  // namespace kef
