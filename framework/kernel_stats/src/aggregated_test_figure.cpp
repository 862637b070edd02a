// The figure of an aggregated test's single tests (kef/aggregated_test_figure.hpp): one line plot per
// panel (kef/line_plot.hpp), drawn into a private directory beside the output and pasted into one PNG
// by the montage (kef/png_montage.hpp), which writes it under a temporary name and renames it.
#include "kef/aggregated_test_figure.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <system_error>

#include "kef/error.hpp"
#include "kef/line_plot.hpp"
#include "kef/number_text.hpp"
#include "kef/png_montage.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

using FigJson = nlohmann::json;

// The size of each panel's plotting area, in pixels.
constexpr int kFigPanelWidth = 340, kFigPanelHeight = 220;

struct FigureTest {
  std::string kernel;
  double bandwidth = 0, bandwidth_y = 0, statistic = 0, quantile = 0;
  bool reject = false;
};

struct FigureReport {
  std::string test, statistic, approximation;
  double alpha = 0, level_correction = 0;
  long long bootstrap_draws = 0;
  bool reject = false, two_bandwidths = false;
  std::vector<FigureTest> tests;
};

[[noreturn]] void fig_report_error(const std::string& where, const std::string& what) {
  throw DataError("aggregated test figure: the report's " + where + " " + what);
}

const FigJson& fig_field(const FigJson& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fig_report_error(where, "has no field '" + key + "'");
  return j[key];
}

double fig_number(const FigJson& j, const std::string& key, const std::string& where) {
  const FigJson& v = fig_field(j, key, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fig_report_error(where, "field '" + key + "' is not a finite number (got " + v.dump() + ")");
  return v.get<double>();
}

std::string fig_string(const FigJson& j, const std::string& key, const std::string& where) {
  const FigJson& v = fig_field(j, key, where);
  if (!v.is_string()) fig_report_error(where, "field '" + key + "' is not a string (got " + v.dump() + ")");
  return v.get<std::string>();
}

bool fig_bool(const FigJson& j, const std::string& key, const std::string& where) {
  const FigJson& v = fig_field(j, key, where);
  if (!v.is_boolean())
    fig_report_error(where, "field '" + key + "' is not true or false (got " + v.dump() + ")");
  return v.get<bool>();
}

FigureReport fig_parse_report(const std::string& text) {
  FigJson whole;
  try {
    whole = FigJson::parse(text);
  } catch (const FigJson::exception& e) {
    throw DataError(std::string("aggregated test figure: the report is not JSON (") + e.what() + ")");
  }
  const FigJson& j = whole.is_object() && whole.contains("aggregate") ? whole["aggregate"] : whole;
  const std::string where = "object";
  FigureReport r;
  r.test = fig_string(j, "test", where);
  r.statistic = fig_string(j, "statistic", where);
  r.approximation = fig_string(j, "approximation", where);
  r.alpha = fig_number(j, "alpha", where);
  r.level_correction = fig_number(j, "level_correction", where);
  r.bootstrap_draws = static_cast<long long>(fig_number(j, "bootstrap_draws", where));
  r.reject = fig_bool(j, "reject", where);
  const FigJson& tests = fig_field(j, "single_tests", where);
  if (!tests.is_array() || tests.empty()) fig_report_error(where, "has no single tests to draw");
  for (std::size_t i = 0; i < tests.size(); ++i) {
    const std::string at = "single_tests[" + std::to_string(i) + "]";
    FigureTest t;
    t.kernel = fig_string(tests[i], "kernel", at);
    t.bandwidth = fig_number(tests[i], "bandwidth", at);
    if (!(t.bandwidth > 0))
      fig_report_error(at, "bandwidth is not positive (got " + number_text(t.bandwidth) + ")");
    if (tests[i].contains("bandwidth_y")) {
      t.bandwidth_y = fig_number(tests[i], "bandwidth_y", at);
      r.two_bandwidths = true;
    }
    t.statistic = fig_number(tests[i], "statistic", at);
    t.quantile = fig_number(tests[i], "quantile", at);
    t.reject = fig_bool(tests[i], "reject", at);
    r.tests.push_back(std::move(t));
  }
  return r;
}

std::string fig_test_name(const std::string& test) {
  if (test == "mmdagg") return "MMDAgg";
  if (test == "hsicagg") return "HSICAgg";
  if (test == "ksdagg") return "KSDAgg";
  return test;
}

// The panels: one per kernel family (HSICAgg: per bandwidth of Y) in the order of first appearance,
// each with its tests by increasing bandwidth.
std::vector<AggregatedTestPanel> fig_group_panels(const FigureReport& r) {
  std::vector<AggregatedTestPanel> panels;
  for (std::size_t i = 0; i < r.tests.size(); ++i) {
    const FigureTest& t = r.tests[i];
    auto it = std::find_if(panels.begin(), panels.end(), [&](const AggregatedTestPanel& p) {
      return p.kernel == t.kernel && p.bandwidth_y == t.bandwidth_y;
    });
    if (it == panels.end()) {
      panels.push_back({});
      it = panels.end() - 1;
      it->kernel = t.kernel;
      it->bandwidth_y = t.bandwidth_y;
    }
    it->tests.push_back(i);
  }
  for (AggregatedTestPanel& p : panels)
    std::stable_sort(p.tests.begin(), p.tests.end(), [&](std::size_t a, std::size_t b) {
      return r.tests[a].bandwidth < r.tests[b].bandwidth;
    });
  return panels;
}

// One panel as a line plot: the statistic and the threshold by increasing bandwidth, the rejecting
// tests' statistics as markers; the decision in the title, u and the rejection counts below.
LinePlotResult fig_draw_panel(const fs::path& png, const FigureReport& r, const AggregatedTestPanel& p) {
  const Index n = static_cast<Index>(p.tests.size());
  LineSeries statistic{"statistic", Vector(n), Vector(n), {}, {}};
  LineSeries threshold{"threshold", Vector(n), Vector(n), {}, {}};
  std::vector<double> rx, ry;
  for (Index i = 0; i < n; ++i) {
    const FigureTest& t = r.tests[p.tests[static_cast<std::size_t>(i)]];
    statistic.x[i] = threshold.x[i] = t.bandwidth;
    statistic.y[i] = t.statistic;
    threshold.y[i] = t.quantile;
    if (t.reject) {
      rx.push_back(t.bandwidth);
      ry.push_back(t.statistic);
    }
  }
  std::vector<LineSeries> series = {statistic, threshold};
  if (!rx.empty()) {
    LineSeries rejects{"rejects",
                       Eigen::Map<const Vector>(rx.data(), static_cast<Index>(rx.size())),
                       Eigen::Map<const Vector>(ry.data(), static_cast<Index>(ry.size())),
                       {},
                       {}};
    rejects.markers_only = true;
    series.push_back(std::move(rejects));
  }
  std::size_t rejecting = 0;
  for (const FigureTest& t : r.tests) rejecting += t.reject;
  LinePlotOptions o;
  o.title = p.kernel + (r.two_bandwidths ? ", Y bandwidth " + number_text(p.bandwidth_y, 4) : "") + " · " +
            fig_test_name(r.test) + (r.reject ? " rejects" : " does not reject") +
            " at α = " + number_text(r.alpha, 4);
  o.x_label = r.two_bandwidths ? "bandwidth of X (log scale)" : "bandwidth (log scale)";
  o.y_label = r.statistic + " statistic";
  o.log_x = true;
  o.width = kFigPanelWidth;
  o.height = kFigPanelHeight;
  o.footnote = "threshold: the (1 − u·w)-quantile of the " + r.approximation +
               " statistics (B1 = " + std::to_string(r.bootstrap_draws) +
               ") · u = " + number_text(r.level_correction, 4) + " · " + std::to_string(rx.size()) + " of " +
               std::to_string(n) + " here and " + std::to_string(rejecting) + " of " +
               std::to_string(r.tests.size()) + " in all reject";
  return write_line_plot(png, series, o);
}

// A directory of its own beside the output for the panels' PNGs, removed with everything in it.
class FigPanelDir {
 public:
  FigPanelDir(const fs::path& output, const std::string& option) {
    std::string pattern = output.string() + ".kef-panels-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw ConfigError(option + " " + output.string() + ": cannot create a working directory beside it (" +
                        std::strerror(errno) + ")");
    dir_ = pattern;
  }
  ~FigPanelDir() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  FigPanelDir(const FigPanelDir&) = delete;
  FigPanelDir& operator=(const FigPanelDir&) = delete;
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

}  // namespace

void check_aggregated_test_figure_file(const fs::path& file, const std::string& option) {
  const std::string what = option + " " + file.string();
  if (file.empty()) throw ConfigError(option + ": empty path");
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw ConfigError(what + ": is a directory (expected a PNG file to write)");
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw ConfigError(what + ": directory " + parent.string() + " does not exist");
}

AggregatedTestFigure write_aggregated_test_figure(const fs::path& file, const std::string& report_json,
                                                  const std::string& option) {
  const FigureReport r = fig_parse_report(report_json);
  check_aggregated_test_figure_file(file, option);

  AggregatedTestFigure figure;
  figure.panels = fig_group_panels(r);
  const FigPanelDir dir(file, option);
  std::vector<fs::path> pngs;
  std::vector<LinePlotResult> drawn;
  for (std::size_t k = 0; k < figure.panels.size(); ++k) {
    pngs.push_back(dir.path() / ("panel-" + std::to_string(k) + ".png"));
    drawn.push_back(fig_draw_panel(pngs.back(), r, figure.panels[k]));
    for (const std::string& note : drawn.back().notes)
      if (std::find(figure.notes.begin(), figure.notes.end(), note) == figure.notes.end())
        figure.notes.push_back(note);
  }

  // The montage's placement: rows of `columns` panels, left-aligned, each row as tall as its tallest.
  const std::size_t count = figure.panels.size();
  const std::size_t columns = count <= 2 ? count : count <= 4 ? 2 : 3;
  int y = 0;
  for (std::size_t row = 0; row * columns < count; ++row) {
    int x = 0, tallest = 0;
    for (std::size_t k = row * columns; k < std::min(count, (row + 1) * columns); ++k) {
      AggregatedTestPanel& p = figure.panels[k];
      const LinePlotResult& d = drawn[k];
      p.plot_left = x + d.plot_left;
      p.plot_top = y + d.plot_top;
      p.plot_width = kFigPanelWidth;
      p.plot_height = kFigPanelHeight;
      p.x_min = d.x_min;
      p.x_max = d.x_max;
      p.y_min = d.y_min;
      p.y_max = d.y_max;
      x += d.width;
      tallest = std::max(tallest, d.height);
    }
    y += tallest;
  }
  const MontageResult m = write_png_montage(pngs, static_cast<int>(columns), file);
  figure.width = m.width;
  figure.height = m.height;
  return figure;
}

}  // namespace kef
