// Scatter plots (kef/scatter_plot.hpp, `kef scatterplot`): points land on the pixels their values map
// to in the shared region the reference sets, panels are laid out by columns, sets are thinned to
// evenly spaced rows, and bad input is refused before anything is written.
#include "kef/scatter_plot.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "png_reader.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

Matrix grid_points(double lo, double hi, int n) {
  Matrix P(n * n, 2);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      P(i * n + j, 0) = lo + (hi - lo) * i / (n - 1);
      P(i * n + j, 1) = lo + (hi - lo) * j / (n - 1);
    }
  return P;
}

bool bluish(const std::array<std::uint8_t, 3>& p) { return p[2] > p[0] + 60 && p[2] > 120; }
bool greyish(const std::array<std::uint8_t, 3>& p) {
  return std::abs(int(p[0]) - int(p[1])) < 8 && std::abs(int(p[1]) - int(p[2])) < 8 && p[0] < 235 && p[0] > 100;
}

TEST(ScatterPlot, PointsLandWhereTheirValuesMapInTheReferencesRegion) {
  const fs::path dir = test::temp_dir("scatter_plot");
  const fs::path file = dir / "fig.png";
  ScatterPlotOptions o;
  o.reference = grid_points(-2, 2, 21);  // the region: data_extent of these
  o.columns = 2;
  o.title = "samples over data";
  Matrix a(2, 2), b(1, 2);
  a << 1.05, -0.55, -1.45, 1.35;  // between the reference's grid points (spacing 0.2)
  b << 0.35, 0.75;
  const ScatterPlotResult r = write_scatter_plot(file, {{"A", a}, {"B", b}}, o);
  ASSERT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dir / "fig.png.kef-tmp"));
  const PlotExtent e = data_extent(o.reference);
  EXPECT_EQ(r.extent.xmin, e.xmin);
  EXPECT_EQ(r.extent.ymax, e.ymax);
  ASSERT_EQ(r.panels.size(), 2u);
  EXPECT_EQ(r.panels[0].drawn, 2);
  EXPECT_EQ(r.panels[1].drawn, 1);
  EXPECT_EQ(r.panels[0].plot_top, r.panels[1].plot_top);  // two columns: side by side
  EXPECT_GT(r.panels[1].plot_left, r.panels[0].plot_left + o.panel_size);
  const Png png = read_png(file);
  ASSERT_EQ(png.width, r.width);
  ASSERT_EQ(png.height, r.height);
  auto at = [&](const ScatterPanelGeometry& g, double x, double y) {
    const double px = g.plot_left + (x - e.xmin) / (e.xmax - e.xmin) * o.panel_size;
    const double py = g.plot_top + o.panel_size - (y - e.ymin) / (e.ymax - e.ymin) * o.panel_size;
    return png.at(static_cast<int>(px), static_cast<int>(py));
  };
  EXPECT_TRUE(bluish(at(r.panels[0], 1.05, -0.55)));
  EXPECT_TRUE(bluish(at(r.panels[0], -1.45, 1.35)));
  EXPECT_TRUE(bluish(at(r.panels[1], 0.35, 0.75)));
  // B's point is not in A's panel, and the reference is under both.
  EXPECT_FALSE(bluish(at(r.panels[0], 0.35, 0.75)));
  EXPECT_TRUE(greyish(at(r.panels[0], 0.4, 0.6)));
  EXPECT_TRUE(greyish(at(r.panels[1], -1.0, -1.0)));
  // Between reference points and away from every set: white.
  const auto blank = at(r.panels[1], -0.9, -0.9);
  EXPECT_EQ(blank[0], 255);
  EXPECT_EQ(blank[2], 255);
  EXPECT_TRUE(r.notes.empty() || test::contains(r.notes[0], "font")) << r.notes[0];
}

TEST(ScatterPlot, ThinsToEvenlySpacedRowsAndCountsPointsOutsideTheRegion) {
  EXPECT_EQ(thinned_rows(10, 3), (std::vector<Index>{0, 4, 8}));
  EXPECT_EQ(thinned_rows(3, 10), (std::vector<Index>{0, 1, 2}));
  EXPECT_EQ(thinned_rows(6, 3), (std::vector<Index>{0, 2, 4}));
  const fs::path dir = test::temp_dir("scatter_plot");
  ScatterPlotOptions o;
  o.reference = grid_points(0, 1, 5);
  o.max_points = 4;
  Matrix far(10, 2);
  far.setConstant(0.5);
  far(0, 0) = 50.0;  // row 0 is drawn (the first of every third) and lies outside the region
  far(1, 0) = 60.0;  // row 1 is thinned away
  const ScatterPlotResult r = write_scatter_plot(dir / "thin.png", {{"far", far}}, o);
  EXPECT_EQ(r.panels[0].drawn, 4);
  EXPECT_EQ(r.panels[0].outside, 1);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_TRUE(test::contains(r.notes[0], "1 of its 4 drawn points are outside")) << r.notes[0];
  // Without a reference the region covers every set.
  ScatterPlotOptions none;
  const ScatterPlotResult all = write_scatter_plot(dir / "all.png", {{"far", far}}, none);
  EXPECT_GE(all.extent.xmax, 60.0);
}

TEST(ScatterPlot, RefusesBadInputBeforeWriting) {
  const fs::path dir = test::temp_dir("scatter_plot");
  const fs::path file = dir / "bad.png";
  auto draw = [&](std::vector<ScatterPanel> p, ScatterPlotOptions o = {}) { write_scatter_plot(file, p, o); };
  Matrix three(4, 3), nan_row = Matrix::Zero(4, 2), empty(0, 2);
  nan_row(2, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { draw({}); }), "no panel"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { draw({{"A", three}}); }),
                             "panel 1 ('A') has 3 columns"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { draw({{"A", empty}}); }), "has no points"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { draw({{"A", Matrix::Zero(2, 2)}, {"B", nan_row}}); }),
                             "panel 2 ('B'), row 3, column 2 is not finite"));
  ScatterPlotOptions o;
  o.reference = three;
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { draw({{"A", Matrix::Zero(2, 2)}}, o); }),
                             "the reference set has 3 columns"));
  ScatterPlotOptions small;
  small.panel_size = 10;
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { draw({{"A", Matrix::Zero(2, 2)}}, small); }),
                             "60 to 4000"));
  EXPECT_FALSE(fs::exists(file));
}

TEST(ScatterPlot, TheCommandReadsNpyAndCsvAndRefusesBadFilesWithExitTwo) {
  const fs::path dir = test::temp_dir("scatter_plot_cli");
  write_npy(dir / "a.npy", grid_points(-1, 1, 5));
  test::write_file(dir, "b.csv", "x,y\n0.1,0.2\n0.3,-0.4\n");
  write_npy(dir / "ref.npy", grid_points(-2, 2, 9));
  write_npy(dir / "three.npy", Matrix(Matrix::Zero(3, 3)));
  const std::string out = (dir / "fig.png").string();
  test::CommandResult r = test::kef_cmd("scatterplot A=" + (dir / "a.npy").string() + " B=" +
                                        (dir / "b.csv").string() + " --reference " + (dir / "ref.npy").string() +
                                        " --columns 2 --title t --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(test::contains(r.output, "wrote")) << r.output;
  r = test::kef_cmd("scatterplot A=" + (dir / "three.npy").string() + " --out " + (dir / "x.png").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "three.npy (A): has 3 columns")) << r.output;
  r = test::kef_cmd("scatterplot " + (dir / "a.npy").string() + " --out " + (dir / "x.png").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "expected LABEL=FILE")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.png"));
}

}  // namespace
}  // namespace kef
