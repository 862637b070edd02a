// The figure of an aggregated test's single tests (kef/aggregated_test_figure.hpp, `kef test two-sample
// --aggregate --plot`): each single test's statistic and threshold land on the pixels their values map
// to in their kernel's panel, the rejecting tests are marked, a bad report or path writes nothing, and
// the command draws its report with the same function.
#include "kef/aggregated_test_figure.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kef/error.hpp"
#include "png_reader.hpp"
#include "test_support.hpp"

namespace kef::aggregated_test_figure_test {
namespace {

namespace fs = std::filesystem;

// The series colours: Okabe–Ito blue (statistic), vermillion (threshold) and bluish green (rejects).
constexpr std::array<std::uint8_t, 3> kBlue = {0x00, 0x72, 0xb2}, kVermillion = {0xd5, 0x5e, 0x00},
                                      kGreen = {0x00, 0x9e, 0x73};

// A report as kef/aggregated_test_report.hpp writes it. Laplace's tests are out of bandwidth order;
// two of them reject (statistic above its quantile), none of the Gaussian's.
const char* kReport = R"({
  "test": "two-sample",
  "seed": 1,
  "aggregate": {
    "test": "mmdagg", "statistic": "MMD²", "approximation": "wild bootstrap", "alpha": 0.05,
    "bootstrap_draws": 500, "level_draws": 500, "bisection_steps": 50, "weights": "uniform", "rows": 40,
    "level_correction": 0.03, "reject": true,
    "single_tests": [
      {"kernel": "laplace", "bandwidth": 2, "weight": 0.2, "statistic": 1.0, "quantile": 0.25,
       "p_value": 0.002, "threshold": 0.006, "reject": true},
      {"kernel": "laplace", "bandwidth": 0.5, "weight": 0.2, "statistic": 0.2, "quantile": 0.3,
       "p_value": 0.1, "threshold": 0.006, "reject": false},
      {"kernel": "laplace", "bandwidth": 8, "weight": 0.2, "statistic": 0.6, "quantile": 0.2,
       "p_value": 0.002, "threshold": 0.006, "reject": true},
      {"kernel": "gaussian", "bandwidth": 1, "weight": 0.2, "statistic": -0.1, "quantile": 0.4,
       "p_value": 0.5, "threshold": 0.006, "reject": false},
      {"kernel": "gaussian", "bandwidth": 4, "weight": 0.2, "statistic": 0.05, "quantile": 0.35,
       "p_value": 0.3, "threshold": 0.006, "reject": false}
    ]
  }
})";

// A panel's pixel of (bandwidth, value), from the geometry the figure reports.
struct PanelMap {
  const AggregatedTestPanel& p;
  int px(double b) const {
    const double u = (std::log10(b) - std::log10(p.x_min)) / (std::log10(p.x_max) - std::log10(p.x_min));
    return static_cast<int>(p.plot_left + u * p.plot_width);
  }
  int py(double v) const {
    return static_cast<int>(p.plot_top + p.plot_height - (v - p.y_min) / (p.y_max - p.y_min) * p.plot_height);
  }
};

void expect_colour(const Png& png, int x, int y, const std::array<std::uint8_t, 3>& colour,
                   const std::string& what) {
  const auto c = png.at(x, y);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(c[k], colour[k], 40) << what << ", channel " << k;
}

TEST(AggregatedTestFigure, EachSingleTestLandsOnItsKernelsPanelAtItsBandwidthAndValues) {
  const fs::path dir = test::temp_dir("aggregated_test_figure");
  const fs::path file = dir / "fig.png";
  const AggregatedTestFigure f = write_aggregated_test_figure(file, kReport);
  ASSERT_TRUE(fs::exists(file));
  const Png png = read_png(file);
  ASSERT_EQ(png.width, f.width);
  ASSERT_EQ(png.height, f.height);
  // Side by side: as wide as both panels, each with its plotting area of 340 x 220 pixels.
  ASSERT_EQ(f.panels.size(), 2u);
  const AggregatedTestPanel &lap = f.panels[0], &gau = f.panels[1];
  EXPECT_EQ(lap.kernel, "laplace");
  EXPECT_EQ(gau.kernel, "gaussian");
  EXPECT_EQ(lap.tests, (std::vector<std::size_t>{1, 0, 2}));  // by increasing bandwidth
  EXPECT_EQ(gau.tests, (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(lap.plot_width, 340);
  EXPECT_EQ(lap.plot_height, 220);
  EXPECT_EQ(gau.plot_top, lap.plot_top);
  EXPECT_GT(gau.plot_left, lap.plot_left + lap.plot_width);
  EXPECT_LT(gau.plot_left + gau.plot_width, f.width);
  // The ranges are the report's values, padded by 4% of their (log) span: Laplace's bandwidths 0.5 to
  // 8 and values 0.2 (a statistic and a quantile) to 1.0; the Gaussian's values -0.1 to 0.4.
  const double span = std::log10(16.0);
  EXPECT_NEAR(std::log10(lap.x_min), std::log10(0.5) - 0.04 * span, 1e-12);
  EXPECT_NEAR(std::log10(lap.x_max), std::log10(8.0) + 0.04 * span, 1e-12);
  EXPECT_NEAR(lap.y_min, 0.2 - 0.04 * 0.8, 1e-12);
  EXPECT_NEAR(lap.y_max, 1.0 + 0.04 * 0.8, 1e-12);
  EXPECT_NEAR(gau.y_min, -0.1 - 0.04 * 0.5, 1e-12);
  EXPECT_NEAR(gau.y_max, 0.4 + 0.04 * 0.5, 1e-12);

  const PanelMap L{lap}, G{gau};
  // The rejecting tests' statistics carry the large green marker; the others a blue one.
  expect_colour(png, L.px(2), L.py(1.0), kGreen, "laplace, bandwidth 2 (rejects)");
  expect_colour(png, L.px(8), L.py(0.6), kGreen, "laplace, bandwidth 8 (rejects)");
  expect_colour(png, L.px(0.5), L.py(0.2), kBlue, "laplace, bandwidth 0.5 (does not reject)");
  expect_colour(png, G.px(1), G.py(-0.1), kBlue, "gaussian, bandwidth 1");
  // Halfway (in log bandwidth) between two tests, each line runs through the mean of their values:
  // the statistic between the two rejecting tests (the markers are not joined), the threshold.
  expect_colour(png, L.px(4), L.py(0.8), kBlue, "laplace statistic between bandwidths 2 and 8");
  expect_colour(png, L.px(1), L.py(0.275), kVermillion, "laplace threshold between bandwidths 0.5 and 2");
  expect_colour(png, G.px(2), G.py(0.375), kVermillion, "gaussian threshold between bandwidths 1 and 4");
  expect_colour(png, G.px(2), G.py(-0.025), kBlue, "gaussian statistic between bandwidths 1 and 4");
  // Nothing is left beside the figure.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename() != "fig.png";
  EXPECT_EQ(files, 0);
}

TEST(AggregatedTestFigure, HsicAggHasAPanelPerBandwidthOfY) {
  const fs::path dir = test::temp_dir("aggregated_test_figure");
  auto j = nlohmann::json::parse(kReport)["aggregate"];
  j["test"] = "hsicagg";
  j["statistic"] = "HSIC";
  for (std::size_t i = 0; i < j["single_tests"].size(); ++i) {
    j["single_tests"][i]["kernel"] = "gaussian";
    j["single_tests"][i]["bandwidth_y"] = i < 2 ? 0.5 : 3.0;
  }
  const AggregatedTestFigure f = write_aggregated_test_figure(dir / "hsic.png", j.dump());
  ASSERT_EQ(f.panels.size(), 2u);
  EXPECT_EQ(f.panels[0].bandwidth_y, 0.5);
  EXPECT_EQ(f.panels[0].tests, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(f.panels[1].bandwidth_y, 3.0);
  EXPECT_EQ(f.panels[1].tests, (std::vector<std::size_t>{3, 4, 2}));
  const Png png = read_png(dir / "hsic.png");
  EXPECT_EQ(png.width, f.width);
}

TEST(AggregatedTestFigure, ABadReportOrDirectoryIsRefusedAndWritesNothing) {
  const fs::path dir = test::temp_dir("aggregated_test_figure");
  const fs::path file = dir / "bad.png";
  auto message = [&](const std::string& report) {
    return test::message_of<DataError>([&] { write_aggregated_test_figure(file, report); });
  };
  auto with = [&](const std::string& pointer, const nlohmann::json& value) {
    auto j = nlohmann::json::parse(kReport);
    j[nlohmann::json::json_pointer(pointer)] = value;
    return j.dump();
  };
  EXPECT_TRUE(test::contains(message("{"), "the report is not JSON"));
  EXPECT_TRUE(test::contains(message(with("/aggregate/single_tests", nlohmann::json::array())),
                             "has no single tests to draw"));
  EXPECT_TRUE(test::contains(message(with("/aggregate/single_tests/1/statistic", nullptr)),
                             "single_tests[1] field 'statistic' is not a finite number (got null)"));
  EXPECT_TRUE(test::contains(message(with("/aggregate/single_tests/2/bandwidth", -1.0)),
                             "single_tests[2] bandwidth is not positive"));
  auto no_reject = nlohmann::json::parse(kReport);
  no_reject["aggregate"].erase("reject");
  EXPECT_TRUE(test::contains(message(no_reject.dump()), "object has no field 'reject'"));
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] {
                               write_aggregated_test_figure(dir / "missing" / "f.png", kReport, "--plot");
                             }),
                             "--plot " + (dir / "missing" / "f.png").string() + ": directory"));
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(AggregatedTestFigure, TheCommandsPlotIsTheFigureOfItsReportAndABadPathIsExitTwo) {
  const fs::path dir = test::temp_dir("aggregated_test_figure");
  std::ostringstream x, y;
  x << "x\n";
  y << "x\n";
  for (int i = 0; i < 20; ++i) {
    x << std::sin(1.3 * i) << "\n";
    y << 0.8 + std::cos(0.7 * i) << "\n";
  }
  test::write_file(dir, "x.csv", x.str());
  test::write_file(dir, "y.csv", y.str());
  const std::string head = test::kef_executable() + " test two-sample " + (dir / "x.csv").string() + " " +
                           (dir / "y.csv").string() + " --aggregate --bootstrap-draws 500 --level-draws 500 ";
  const fs::path out = dir / "agg.png";
  std::string output;
  ASSERT_EQ(test::run_command(head + "--json --plot " + out.string() + " 2>/dev/null", &output), 0) << output;
  const auto report = nlohmann::json::parse(output);
  EXPECT_EQ(report["plot"], out.string());
  // The library draws the printed report to the same bytes.
  const fs::path again = dir / "again.png";
  write_aggregated_test_figure(again, output);
  auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_TRUE(fs::exists(out));
  EXPECT_EQ(bytes(out), bytes(again));

  const fs::path bad = dir / "nodir" / "agg.png";
  EXPECT_EQ(test::run_command(head + "--plot " + bad.string() + " 2>&1", &output), 2) << output;
  EXPECT_TRUE(test::contains(output, "--plot " + bad.string() + ": directory")) << output;
  EXPECT_EQ(test::run_command(head + "--plot " + dir.string() + " 2>&1", &output), 2) << output;
  EXPECT_TRUE(test::contains(output, "--plot " + dir.string() + ": exists and is not a regular file"))
      << output;
  const fs::path plain = dir / "plain.png";
  EXPECT_EQ(test::run_command(test::kef_executable() + " test two-sample " + (dir / "x.csv").string() + " " +
                                  (dir / "y.csv").string() + " --plot " + plain.string() + " 2>&1",
                              &output),
            2)
      << output;
  EXPECT_TRUE(test::contains(output, "--plot requires --aggregate")) << output;
  EXPECT_FALSE(fs::exists(plain));
  EXPECT_FALSE(fs::exists(dir / "nodir"));
}

}  // namespace
}  // namespace kef::aggregated_test_figure_test
