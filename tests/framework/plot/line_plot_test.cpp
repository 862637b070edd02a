// Line plots (kef/line_plot.hpp, `kef lineplot`): lines and bands land on the pixels their values map
// to on log and linear axes, every bad input is refused before anything is written, and the CSV
// reader and the command follow the same rules.
#include "kef/line_plot.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "kef/error.hpp"
#include "png_reader.hpp"
#include "test_support.hpp"

namespace kef::line_plot_test {
namespace {

namespace fs = std::filesystem;

Vector vec(std::initializer_list<double> v) {
  Vector out(static_cast<Index>(v.size()));
  Index i = 0;
  for (double x : v) out[i++] = x;
  return out;
}

// The pixel a data point maps to, from the geometry the plot reports.
struct Mapping {
  LinePlotResult r;
  LinePlotOptions o;
  double to_px(double x) const {
    auto u = [&](double v) { return o.log_x ? std::log10(v) : v; };
    return r.plot_left + (u(x) - u(r.x_min)) / (u(r.x_max) - u(r.x_min)) * o.width;
  }
  double to_py(double y) const {
    auto u = [&](double v) { return o.log_y ? std::log10(v) : v; };
    return r.plot_top + o.height - (u(y) - u(r.y_min)) / (u(r.y_max) - u(r.y_min)) * o.height;
  }
};

// The series colours: Okabe–Ito blue and vermillion.
constexpr std::array<std::uint8_t, 3> kBlue = {0x00, 0x72, 0xb2}, kVermillion = {0xd5, 0x5e, 0x00};

TEST(LinePlot, LinesAndBandsLandWhereTheirValuesMapOnLogLogAxes) {
  const fs::path dir = test::temp_dir("line_plot");
  const fs::path file = dir / "fig.png";
  // A: y = 1/x, a straight line on log-log axes; B: constant 0.01 with a band [0.005, 0.02].
  LineSeries a{"1/x", vec({10, 100, 1000, 10000}), vec({0.1, 0.01, 0.001, 0.0001}), {}, {}};
  LineSeries b{"flat", vec({10, 10000}), vec({0.01, 0.01}), vec({0.005, 0.005}), vec({0.02, 0.02})};
  LinePlotOptions o;
  o.log_x = o.log_y = true;
  o.title = "test";
  const LinePlotResult r = write_line_plot(file, {a, b}, o);
  ASSERT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dir / "fig.png.kef-tmp"));
  // The range covers the data, padded by 4% of its log span on each side.
  EXPECT_NEAR(std::log10(r.x_min), 1 - 0.04 * 3, 1e-12);
  EXPECT_NEAR(std::log10(r.x_max), 4 + 0.04 * 3, 1e-12);
  EXPECT_NEAR(std::log10(r.y_min), -4 - 0.04 * 3, 1e-12);
  EXPECT_NEAR(std::log10(r.y_max), -1 + 0.04 * 3, 1e-12);

  const Png png = read_png(file);
  ASSERT_EQ(png.width, r.width);
  ASSERT_EQ(png.height, r.height);
  const Mapping m{r, o};
  // Between the measured points (x = 10^2.5, off every grid line), on each line's centre.
  const double x = std::pow(10.0, 2.5);
  const auto on_a = png.at(static_cast<int>(m.to_px(x)), static_cast<int>(m.to_py(std::pow(10.0, -2.5))));
  const auto on_b = png.at(static_cast<int>(m.to_px(x)), static_cast<int>(m.to_py(0.01)));
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(on_a[c], kBlue[c], 40) << "channel " << c;
    EXPECT_NEAR(on_b[c], kVermillion[c], 40) << "channel " << c;
  }
  // Inside B's band (y = 0.014) the background is the series colour at 20% over white; above the band
  // (y = 0.04) it is white.
  const auto in_band = png.at(static_cast<int>(m.to_px(x)), static_cast<int>(m.to_py(0.014)));
  const auto above = png.at(static_cast<int>(m.to_px(x)), static_cast<int>(m.to_py(0.04)));
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(in_band[c], 0.8 * 255 + 0.2 * kVermillion[c], 3) << "channel " << c;
    EXPECT_EQ(above[c], 255) << "channel " << c;
  }
}

TEST(LinePlot, LinearAxesAndASinglePoint) {
  const fs::path dir = test::temp_dir("line_plot");
  LineSeries s{"one", vec({2.0}), vec({-3.0}), {}, {}};
  LinePlotOptions o;
  const LinePlotResult r = write_line_plot(dir / "one.png", {s}, o);
  // One value: a window of ±10% around it (±1 around 0), padded by 4%.
  EXPECT_LT(r.x_min, 2.0);
  EXPECT_GT(r.x_max, 2.0);
  EXPECT_NEAR(r.y_max - r.y_min, 0.6 * 1.08, 1e-12);
  const Png png = read_png(dir / "one.png");
  const Mapping m{r, o};
  const auto marker = png.at(static_cast<int>(m.to_px(2.0)), static_cast<int>(m.to_py(-3.0)));
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(marker[c], kBlue[c], 40) << "channel " << c;
}

TEST(LinePlot, MarkersOnlySeriesAreNotJoinedAndAWideTitleWidensTheFigure) {
  const fs::path dir = test::temp_dir("line_plot");
  LineSeries line{"line", vec({1, 3}), vec({0, 0}), {}, {}};
  LineSeries dots{"dots", vec({1, 3}), vec({1.7, 1.7}), {}, {}};
  dots.markers_only = true;
  LinePlotOptions o;
  const LinePlotResult r = write_line_plot(dir / "dots.png", {line, dots}, o);
  const Png png = read_png(dir / "dots.png");
  const Mapping m{r, o};
  // Each point has its marker, in the series' colour (the second, vermillion); between them (off the
  // grid lines), white.
  for (double x : {1.0, 3.0}) {
    const auto marker = png.at(static_cast<int>(m.to_px(x)), static_cast<int>(m.to_py(1.7)));
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(marker[c], kVermillion[c], 40) << "x " << x << ", channel " << c;
  }
  const auto between = png.at(static_cast<int>(m.to_px(2.3)), static_cast<int>(m.to_py(1.7)));
  for (int c = 0; c < 3; ++c) EXPECT_EQ(between[c], 255) << "channel " << c;
  dots.lower = vec({1, 1});
  dots.upper = vec({3, 3});
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { write_line_plot(dir / "band.png", {dots}); }),
                             "series 'dots' is drawn as markers only and cannot have a band"));
  EXPECT_FALSE(fs::exists(dir / "band.png"));

  // A title far wider than the plotting area: the figure grows to hold it.
  LinePlotOptions titled;
  titled.width = 100;
  titled.title = std::string(60, 'W');
  LinePlotOptions untitled;
  untitled.width = 100;
  const LinePlotResult narrow = write_line_plot(dir / "narrow.png", {line}, untitled);
  const LinePlotResult wide = write_line_plot(dir / "wide.png", {line}, titled);
  EXPECT_GT(wide.width, narrow.width + 300);
  // Its last letter lands inside the figure: ink in the right-most 60 pixels of the title's row.
  const Png w = read_png(dir / "wide.png");
  int ink = 0;
  for (int x = wide.width - 60; x < wide.width; ++x)
    for (int y = 14; y < 30; ++y) ink += w.at(x, y)[0] < 128;
  EXPECT_GT(ink, 0);
}

TEST(LinePlot, RefusesBadSeriesAndOptionsBeforeWriting) {
  const fs::path dir = test::temp_dir("line_plot");
  const fs::path file = dir / "bad.png";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LinePlotOptions log;
  log.log_x = log.log_y = true;
  auto draw = [&](std::vector<LineSeries> s, LinePlotOptions o = {}) { write_line_plot(file, s, o); };

  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { draw({}); }), "no series"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               draw({{"A", vec({}), vec({}), {}, {}}});
                             }),
                             "series 'A' has no points"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               draw({{"A", vec({1, 2}), vec({1}), {}, {}}});
                             }),
                             "2 x values but 1 y values"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               draw({{"A", vec({1, 2}), vec({1, 0}), {}, {}}}, log);
                             }),
                             "series 'A', point 2: y is 0.000000 on a logarithmic axis"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               draw({{"A", vec({1, nan}), vec({1, 2}), {}, {}}});
                             }),
                             "point 2: x is not finite"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               draw({{"A", vec({1}), vec({1}), vec({2}), vec({1})}});
                             }),
                             "lower end 2.000000 exceeds its upper end 1.000000"));
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] {
                               draw({{"A", vec({1}), vec({1}), vec({0}), {}}});
                             }),
                             "band has 1 lower and 0 upper values"));
  LinePlotOptions narrow;
  narrow.width = 50;
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] {
                               draw({{"A", vec({1}), vec({1}), {}, {}}}, narrow);
                             }),
                             "100 to 4000 pixels"));
  EXPECT_FALSE(fs::exists(file));
  EXPECT_THROW(write_line_plot(dir / "missing" / "f.png", {{"A", vec({1}), vec({1}), {}, {}}}), ConfigError);
}

TEST(LinePlot, ReadsSeriesFromCsvWithOrWithoutABand) {
  const fs::path dir = test::temp_dir("line_plot");
  test::write_file(dir, "band.csv", "x,seed_count,y,lower,upper\n1,5,2,1.5,2.5\n2,5,3,2.5,3.5\n");
  const LineSeries s = read_line_series(dir / "band.csv", "with band");
  EXPECT_EQ(s.label, "with band");
  EXPECT_EQ(s.x, vec({1, 2}));
  EXPECT_EQ(s.y, vec({2, 3}));
  EXPECT_EQ(s.lower, vec({1.5, 2.5}));
  EXPECT_EQ(s.upper, vec({2.5, 3.5}));
  test::write_file(dir, "plain.csv", "y,x\n4,1\n");
  const LineSeries p = read_line_series(dir / "plain.csv", "plain");
  EXPECT_EQ(p.x, vec({1}));
  EXPECT_EQ(p.y, vec({4}));
  EXPECT_EQ(p.lower.size(), 0);

  test::write_file(dir, "half.csv", "x,y,lower\n1,2,1\n");
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { read_line_series(dir / "half.csv", "h"); }),
                             "has a 'lower' column but no 'upper'"));
  test::write_file(dir, "noy.csv", "x,z\n1,2\n");
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { read_line_series(dir / "noy.csv", "n"); }),
                             "no column named 'y'"));
  test::write_file(dir, "text.csv", "x,y\n1,abc\n");
  EXPECT_TRUE(test::contains(test::message_of<DataError>([&] { read_line_series(dir / "text.csv", "t"); }),
                             "line 2"));
}

TEST(LinePlot, CommandDrawsFromCsvAndRefusesBadInputWithExitTwo) {
  const fs::path dir = test::temp_dir("line_plot");
  test::write_file(dir, "a.csv",
                   "x,y,lower,upper\n100,0.5,0.4,0.6\n1000,0.2,0.15,0.25\n10000,0.05,0.03,0.07\n");
  test::write_file(dir, "b.csv", "x,y\n100,0.6\n1000,0.4\n");
  const std::string kef = test::kef_executable();
  const fs::path out = dir / "fig.png";
  std::string output;
  const std::string good = kef + " lineplot 'Nyström θ = 1/2=" + (dir / "a.csv").string() +
                           "' b=" + (dir / "b.csv").string() +
                           " --log-x --log-y --x-label n --y-label J --out " + out.string() + " 2>&1";
  EXPECT_EQ(test::run_command(good, &output), 0) << output;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(test::contains(output, "wrote")) << output;

  const fs::path out2 = dir / "fig2.png";
  EXPECT_EQ(test::run_command(kef + " lineplot nolabel --out " + out2.string() + " 2>&1", &output), 2)
      << output;
  EXPECT_TRUE(test::contains(output, "expected LABEL=FILE.csv")) << output;
  test::write_file(dir, "zero.csv", "x,y\n0,1\n");
  EXPECT_EQ(test::run_command(kef + " lineplot z=" + (dir / "zero.csv").string() + " --log-x --out " +
                                  out2.string() + " 2>&1",
                              &output),
            2)
      << output;
  EXPECT_TRUE(test::contains(output, "series 'z', point 1: x is 0.000000 on a logarithmic axis")) << output;
  EXPECT_FALSE(fs::exists(out2));
}

}  // namespace
}  // namespace kef::line_plot_test
