// `[output] plot` and `kef montage` end to end through the kef command: density.png is part of the
// atomic output, a failing plot leaves nothing behind, bad keys are config errors (exit 2), and a
// machine without fonts still gets a figure.
#include <cairo.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::kef_cmd;
using test::write_file;
using Result = test::CommandResult;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::pair<int, int> png_size(const fs::path& p) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(p.c_str());
  std::pair<int, int> size{-1, -1};
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS)
    size = {cairo_image_surface_get_width(s), cairo_image_surface_get_height(s)};
  cairo_surface_destroy(s);
  return size;
}

bool staging_left(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("kef-tmp") != std::string::npos) return true;
  return false;
}

std::string pipeline(const std::string& data, const std::string& output_extra) {
  return test::PipelineText()
      .data(data)
      .lite("lite", 40, 1.0)
      .evaluate("score_matching_loss")
      .evaluate("fisher_divergence")
      .append("[output]\nplot = true\nplot_grid = 40\n" + output_extra);
}

const char* kBanana = "type = \"synthetic/banana\"\nn = 600\nsplit = { test = 100, validation = 0 }";

TEST(PlotPipeline, WritesDensityPngIntoTheOutput) {
  fs::path dir = test::temp_dir("plot-run");
  fs::path cfg = write_file(dir, "p.toml", pipeline(kBanana, ""));
  Result r = kef_cmd("run " + cfg.string() + " --quiet --threads 1 --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(fs::exists(dir / "out" / "density.png"));
  auto [w, h] = png_size(dir / "out" / "density.png");
  // Two panels (truth and lite) of 40·8 = 320 pixels side by side, plus margins.
  EXPECT_GT(w, 2 * 320);
  EXPECT_GT(h, 320);
  const std::string log = read_text(dir / "out" / "log.txt");
  EXPECT_NE(log.find("density plot: density.png, " + std::to_string(w) + " x " + std::to_string(h)), std::string::npos)
      << log;
  EXPECT_FALSE(staging_left(dir));
  // The figure does not depend on the thread count.
  Result r2 = kef_cmd("run " + cfg.string() + " --quiet --threads 2 --output " + (dir / "out2").string());
  ASSERT_EQ(r2.status, 0) << r2.output;
  EXPECT_EQ(read_text(dir / "out" / "density.png"), read_text(dir / "out2" / "density.png"));
  // plot = false (the default) writes no figure.
  Result r3 = kef_cmd("run " + cfg.string() + " --quiet --set output.plot=false --output " + (dir / "out3").string());
  ASSERT_EQ(r3.status, 0) << r3.output;
  EXPECT_FALSE(fs::exists(dir / "out3" / "density.png"));

  // kef montage stacks the two figures: heights add up.
  Result m = kef_cmd("montage --out " + (dir / "m.png").string() + " " + (dir / "out" / "density.png").string() + " " +
                     (dir / "out2" / "density.png").string());
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_EQ(png_size(dir / "m.png"), (std::pair<int, int>{w, 2 * h}));
  Result m2 = kef_cmd("montage --columns 2 --out " + (dir / "m2.png").string() + " " +
                      (dir / "out" / "density.png").string() + " " + (dir / "out2" / "density.png").string());
  ASSERT_EQ(m2.status, 0) << m2.output;
  EXPECT_EQ(png_size(dir / "m2.png"), (std::pair<int, int>{2 * w, h}));
}

TEST(PlotPipeline, MontageRejectsMissingAndNonPngInputsNamingThem) {
  fs::path dir = test::temp_dir("plot-montage");
  write_file(dir, "notes.png", "plain text");
  Result missing = kef_cmd("montage --out " + (dir / "o.png").string() + " " + (dir / "nope.png").string());
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find((dir / "nope.png").string()), std::string::npos) << missing.output;
  Result text = kef_cmd("montage --out " + (dir / "o.png").string() + " " + (dir / "notes.png").string());
  EXPECT_EQ(text.status, 2) << text.output;
  EXPECT_NE(text.output.find((dir / "notes.png").string()), std::string::npos) << text.output;
  EXPECT_EQ(kef_cmd("montage --out " + (dir / "o.png").string()).status, 2) << "inputs are required";
  EXPECT_EQ(kef_cmd("montage --columns 0 --out " + (dir / "o.png").string() + " " + (dir / "notes.png").string()).status,
            2);
  EXPECT_FALSE(fs::exists(dir / "o.png"));
}

TEST(PlotPipeline, AFailingPlotLeavesNoOutput) {
  fs::path dir = test::temp_dir("plot-fail");
  // The fixture model is NaN for x0 > 0: the plot fails after fitting and evaluating.
  std::string text = R"(schema_version = 1
[data]
type = "synthetic/banana"
n = 300
split = { test = 50, validation = 0 }
[[model]]
name = "broken"
[model.estimator]
type = "plot_fixture"
nan = true
nan_above = 0.0
[output]
plot = true
plot_grid = 20
[plugins]
paths = [")" + std::string(KEF_PLOT_FIXTURE_DIR) + R"("]
)";
  fs::path cfg = write_file(dir, "p.toml", text);
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("model broken"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NaN"), std::string::npos) << r.output;
  // The failure comes after the fit: the fitted model's results are kept, with the failed step recorded
  // and no figure.
  std::ifstream in(dir / "out" / "results.json");
  const std::string results((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(results.find("\"status\": \"failed\""), std::string::npos) << results;
  EXPECT_NE(results.find("\"step\": \"density plot\""), std::string::npos) << results;
  EXPECT_FALSE(fs::exists(dir / "out" / "density.png"));
  EXPECT_FALSE(staging_left(dir));
  // The same model without its NaN region plots fine (the failure above is the NaN, not the fixture).
  Result ok = kef_cmd("run " + cfg.string() + " --quiet --set model.broken.estimator.nan=false --output " +
                      (dir / "ok").string());
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_TRUE(fs::exists(dir / "ok" / "density.png"));
}

TEST(PlotPipeline, BadPlotKeysAreConfigErrors) {
  fs::path dir = test::temp_dir("plot-keys");
  fs::path cfg = write_file(dir, "p.toml", pipeline(kBanana, ""));
  struct Case {
    std::string set, expect;
  };
  const Case cases[] = {
      {"output.plot_grid=5", "plot_grid"},
      {"output.plot_grid=100000", "plot_grid"},
      {"output.plot=\"yes\"", "output.plot"},
      {"output.plot_max_points=0", "plot_max_points"},
      {"output.plot_extent=[0,1]", "plot_extent"},
      {"output.plot_extent=[1,0,0,1]", "plot_extent"},
      {"output.plot_extent=[0,1,0,\"a\"]", "plot_extent"},
      {"output.plot_gird=50", "plot_grid"},  // did you mean
  };
  for (const auto& c : cases) {
    Result r = kef_cmd("run " + cfg.string() + " --quiet --set '" + c.set + "' --output " + (dir / "out").string());
    EXPECT_EQ(r.status, 2) << c.set << ": " << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.set << ": " << r.output;
    EXPECT_FALSE(fs::exists(dir / "out")) << c.set;
    Result v = kef_cmd("validate " + cfg.string() + " --set '" + c.set + "'");
    EXPECT_EQ(v.status, 2) << "validate " << c.set << ": " << v.output;
  }
  EXPECT_FALSE(staging_left(dir));
  // A valid explicit extent is used as given.
  Result r = kef_cmd("run " + cfg.string() + " --quiet --set 'output.plot_extent=[-3,3,-2,6]' --output " +
                     (dir / "ext").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(read_text(dir / "ext" / "log.txt").find("extent x [-3, 3] y [-2, 6]"), std::string::npos)
      << read_text(dir / "ext" / "log.txt");
}

TEST(PlotPipeline, OneDimensionalDataAndHigherDimensions) {
  fs::path dir = test::temp_dir("plot-dims");
  fs::path one = write_file(dir, "one.toml",
                            pipeline("type = \"synthetic/mixture_1d\"\nn = 400\nsplit = { test = 100, validation = 0 }",
                                     "plot_extent = [-3, 4]\n"));
  Result r1 = kef_cmd("run " + one.string() + " --quiet --output " + (dir / "one").string());
  ASSERT_EQ(r1.status, 0) << r1.output;
  EXPECT_GT(png_size(dir / "one" / "density.png").first, 0);
  EXPECT_NE(read_text(dir / "one" / "log.txt").find("extent x [-3, 4]"), std::string::npos);

  fs::path three = write_file(
      dir, "three.toml",
      pipeline("type = \"synthetic/gaussian\"\ndim = 3\nn = 300\nsplit = { test = 50, validation = 0 }", ""));
  Result r3 = kef_cmd("run " + three.string() + " --quiet --output " + (dir / "three").string());
  ASSERT_EQ(r3.status, 0) << r3.output;
  EXPECT_FALSE(fs::exists(dir / "three" / "density.png"));
  EXPECT_NE(read_text(dir / "three" / "log.txt").find("density plot: skipped, the data has dimension 3"),
            std::string::npos)
      << read_text(dir / "three" / "log.txt");
}

TEST(PlotPipeline, WithoutAnyFontTheFigureIsStillWritten) {
  fs::path dir = test::temp_dir("plot-nofont");
  // A fontconfig configuration with no font directory: cairo falls back to its built-in font.
  write_file(dir, "fonts.conf",
             "<?xml version=\"1.0\"?>\n<!DOCTYPE fontconfig SYSTEM \"fonts.dtd\">\n<fontconfig><dir>" +
                 (dir / "no-fonts").string() + "</dir><cachedir>" + (dir / "cache").string() +
                 "</cachedir></fontconfig>\n");
  fs::path cfg = write_file(dir, "p.toml", pipeline(kBanana, ""));
  Result r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string(),
                     "FONTCONFIG_FILE=" + (dir / "fonts.conf").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_GT(png_size(dir / "out" / "density.png").first, 0);
  EXPECT_NE(read_text(dir / "out" / "log.txt").find("no system font"), std::string::npos)
      << read_text(dir / "out" / "log.txt");
}

}  // namespace
}  // namespace kef
