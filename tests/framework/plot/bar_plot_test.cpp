// Bar plots with a dot per value (kef/bar_plot.hpp, `kef barplot`): each bar reaches its group's mean
// and each dot sits at its value, in the pixels the reported geometry maps them to; labels keep one
// colour across panels; every bad input is refused before anything is written, naming the file and
// the row.
#include "kef/bar_plot.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kef/error.hpp"
#include "png_reader.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::uint8_t, 3> kBlue = {0x00, 0x72, 0xb2}, kVermillion = {0xd5, 0x5e, 0x00},
                                      kWhite = {0xff, 0xff, 0xff};

double to_py(const BarPanelGeometry& g, const BarPlotOptions& o, double v) {
  return g.plot_top + o.panel_height - (v - g.y_min) / (g.y_max - g.y_min) * o.panel_height;
}

// The bar's fill is its colour at 35% over white.
std::array<double, 3> light(const std::array<std::uint8_t, 3>& c) {
  return {0.35 * c[0] + 0.65 * 255, 0.35 * c[1] + 0.65 * 255, 0.35 * c[2] + 0.65 * 255};
}

void expect_colour(const std::array<std::uint8_t, 3>& got, const std::array<double, 3>& want, double tol,
                   const std::string& what) {
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(got[c], want[c], tol) << what << ", channel " << c;
}

TEST(BarPlot, BarsReachTheMeanAndDotsSitAtTheValues) {
  const fs::path dir = test::temp_dir("bar_plot");
  const fs::path file = dir / "fig.png";
  // Panel 1: A = {1, 3} (mean 2), B = {-1} (a negative bar). Panel 2 lists B first: it keeps B's colour.
  const std::vector<BarPanel> panels = {{"first", {{"A", {1.0, 3.0}}, {"B", {-1.0}}}},
                                        {"second", {{"B", {4.0}}, {"A", {2.0}}}}};
  BarPlotOptions o;
  o.title = "test";
  const BarPlotResult r = write_bar_plot(file, panels, o);
  ASSERT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dir / "fig.png.kef-tmp"));
  ASSERT_EQ(r.panels.size(), 2u);
  // The ranges include 0 and every value, padded by 5% of the span.
  EXPECT_NEAR(r.panels[0].y_min, -1 - 0.05 * 4, 1e-12);
  EXPECT_NEAR(r.panels[0].y_max, 3 + 0.05 * 4, 1e-12);
  EXPECT_EQ(r.panels[1].y_min, 0.0);
  EXPECT_NEAR(r.panels[1].y_max, 4 + 0.05 * 4, 1e-12);

  const Png png = read_png(file);
  ASSERT_EQ(png.width, r.width);
  ASSERT_EQ(png.height, r.height);
  const BarPanelGeometry& p0 = r.panels[0];
  const int ax = static_cast<int>(p0.bar_centres[0]), bx = static_cast<int>(p0.bar_centres[1]);
  // A's bar: filled between 0 and its mean 2 (at 1.5, away from the dots and the mean's line), white
  // above the mean (at 2.5, between the mean and the dot at 3, off the bar's centre line... the dots
  // are at ±35% of the width, so the centre column has no dot).
  expect_colour(png.at(ax, static_cast<int>(to_py(p0, o, 1.5))), light(kBlue), 12, "A's bar at 1.5");
  expect_colour(png.at(ax, static_cast<int>(to_py(p0, o, 2.5))), {255, 255, 255}, 12, "above A's mean");
  // The mean's line in full colour: the darkest red channel within a pixel of the mean's row is the
  // blue's (antialiasing spreads the 2-pixel line over up to three rows).
  const int mean_row = static_cast<int>(std::round(to_py(p0, o, 2.0)));
  int darkest = 255;
  for (int y = mean_row - 1; y <= mean_row + 1; ++y) darkest = std::min<int>(darkest, png.at(ax, y)[0]);
  EXPECT_LE(darkest, kBlue[0] + 20) << "A's mean line";
  // The two dots, at ±35% of the bar's width, dark ink at their values (3 above the bar, 1 inside).
  const int left_dot = static_cast<int>(std::round(p0.bar_centres[0] - 0.35 * p0.bar_width));
  const int right_dot = static_cast<int>(std::round(p0.bar_centres[0] + 0.35 * p0.bar_width));
  for (int c = 0; c < 3; ++c) {
    EXPECT_LT(png.at(left_dot, static_cast<int>(std::round(to_py(p0, o, 1.0))))[c], 90) << "dot at 1";
    EXPECT_LT(png.at(right_dot, static_cast<int>(std::round(to_py(p0, o, 3.0))))[c], 90) << "dot at 3";
  }
  // B's bar goes down from 0 to -1: filled at -0.5 (left of its single, centred dot), white below -1.
  const int b_fill_x = static_cast<int>(p0.bar_centres[1] - 0.25 * p0.bar_width);
  expect_colour(png.at(b_fill_x, static_cast<int>(to_py(p0, o, -0.5))), light(kVermillion), 12, "B's bar");
  expect_colour(png.at(b_fill_x, static_cast<int>(to_py(p0, o, -1.15))), {255, 255, 255}, 12, "below B");
  (void)bx;
  // Panel 2: B comes first but keeps vermillion, A keeps blue.
  const BarPanelGeometry& p1 = r.panels[1];
  expect_colour(
      png.at(static_cast<int>(p1.bar_centres[0] - 0.25 * p1.bar_width), static_cast<int>(to_py(p1, o, 2.3))),
      light(kVermillion), 12, "B in panel 2");
  expect_colour(
      png.at(static_cast<int>(p1.bar_centres[1] - 0.25 * p1.bar_width), static_cast<int>(to_py(p1, o, 0.7))),
      light(kBlue), 12, "A in panel 2");
  (void)kWhite;
}

TEST(BarPlot, RefusesBadPanelsAndOptionsBeforeWriting) {
  const fs::path dir = test::temp_dir("bar_plot");
  const fs::path file = dir / "bad.png";
  EXPECT_THROW(write_bar_plot(file, {}), DataError);
  EXPECT_THROW(write_bar_plot(file, {{"p", {}}}), DataError);
  EXPECT_THROW(write_bar_plot(file, {{"p", {{"A", {}}}}}), DataError);
  try {
    write_bar_plot(file, {{"p", {{"A", {1.0, std::numeric_limits<double>::quiet_NaN()}}}}});
    ADD_FAILURE() << "a NaN value was drawn";
  } catch (const DataError& e) {
    EXPECT_TRUE(test::contains(e.what(), "panel 1 ('p'), bar 'A', value 2 is not finite")) << e.what();
  }
  BarPlotOptions o;
  o.columns = 0;
  EXPECT_THROW(write_bar_plot(file, {{"p", {{"A", {1.0}}}}}, o), ConfigError);
  o = {};
  o.panel_height = 10;
  EXPECT_THROW(write_bar_plot(file, {{"p", {{"A", {1.0}}}}}, o), ConfigError);
  EXPECT_FALSE(fs::exists(file));
}

TEST(BarPlot, ReadsPanelsFromALongCsvInOrderOfAppearance) {
  const fs::path dir = test::temp_dir("bar_plot");
  test::write_file(dir, "ok.csv",
                   "seed,panel,bar,value\n0,\"Red, FSSD\",DKEF,0.5\n0,\"Red, FSSD\",KEF,1e-3\n"
                   "1,\"Red, FSSD\",DKEF,0.7\n0,White,KEF,-2\n\n");
  const std::vector<BarPanel> p = read_bar_panels(dir / "ok.csv");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].title, "Red, FSSD");
  ASSERT_EQ(p[0].groups.size(), 2u);
  EXPECT_EQ(p[0].groups[0].label, "DKEF");
  EXPECT_EQ(p[0].groups[0].values, (std::vector<double>{0.5, 0.7}));
  EXPECT_EQ(p[0].groups[1].values, (std::vector<double>{1e-3}));
  EXPECT_EQ(p[1].groups[0].values, (std::vector<double>{-2.0}));

  auto refused = [&](const std::string& name, const std::string& body, const std::string& message) {
    test::write_file(dir, name, body);
    try {
      (void)read_bar_panels(dir / name);
      ADD_FAILURE() << name << " was read";
    } catch (const DataError& e) {
      EXPECT_TRUE(test::contains(e.what(), (dir / name).string() + message)) << e.what();
    }
  };
  refused("nocol.csv", "panel,group,value\np,A,1\n", ":1: no column 'bar'");
  refused("nan.csv", "panel,bar,value\np,A,1\np,B,nan\n", ":3, column value: 'nan' is not a finite number");
  refused("text.csv", "panel,bar,value\np,A,1x\n", ":2, column value: '1x'");
  refused("short.csv", "panel,bar,value\np,A\n", ":2: 2 fields (expected 3");
  refused("empty.csv", "panel,bar,value\n,A,1\n", ":2, column panel: empty");
  refused("none.csv", "panel,bar,value\n", ": no data rows");
}

TEST(BarPlot, CommandDrawsFromCsvAndRefusesBadInputWithExitTwo) {
  const fs::path dir = test::temp_dir("bar_plot");
  test::write_file(dir, "a.csv",
                   "panel,bar,value\nRed: FSSD²,DKEF,0.1\nRed: FSSD²,DKEF,0.2\nRed: FSSD²,MAF,0.3\n");
  const std::string kef = test::kef_executable();
  const fs::path out = dir / "fig.png";
  std::string output;
  EXPECT_EQ(test::run_command(kef + " barplot " + (dir / "a.csv").string() + " --columns 2 --title T --out " +
                                  out.string() + " 2>&1",
                              &output),
            0)
      << output;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(test::contains(output, "wrote")) << output;

  const fs::path out2 = dir / "fig2.png";
  test::write_file(dir, "bad.csv", "panel,bar,value\np,A,1\np,B,inf\n");
  EXPECT_EQ(
      test::run_command(kef + " barplot " + (dir / "bad.csv").string() + " --out " + out2.string() + " 2>&1",
                        &output),
      2)
      << output;
  EXPECT_TRUE(test::contains(output, (dir / "bad.csv").string() + ":3, column value")) << output;
  EXPECT_EQ(test::run_command(kef + " barplot " + (dir / "a.csv").string() + " --columns 0 --out " +
                                  out2.string() + " 2>&1",
                              &output),
            2)
      << output;
  EXPECT_FALSE(fs::exists(out2));
}

}  // namespace
}  // namespace kef
