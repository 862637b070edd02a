#pragma once
// The figure of an aggregated test's single tests (MMDAgg, HSICAgg, KSDAgg): one panel per kernel
// family (HSICAgg: per bandwidth of Y), the bandwidth on a logarithmic x axis, each single test's
// statistic and its level-corrected threshold (the (1 − u·w)-quantile of its simulated statistics, the
// value the statistic must exceed) as two lines, the single tests that reject marked, and the
// aggregated decision and α in every panel's title. `kef test two-sample|independence --aggregate
// --plot` and the Python functions' `plot=` draw it from the report they print or return.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace kef {

// Where one panel's plotting area lies in the figure and the data range it spans, so that a value can
// be mapped to its pixel: x = plot_left + (log10 b − log10 x_min) / (log10 x_max − log10 x_min) ·
// plot_width, y = plot_top + plot_height − (v − y_min) / (y_max − y_min) · plot_height.
struct AggregatedTestPanel {
  std::string kernel;              // the family; HSICAgg: "gaussian"
  double bandwidth_y = 0;          // HSICAgg: the panel's bandwidth of Y; 0 otherwise
  std::vector<std::size_t> tests;  // indices into the report's single_tests, by increasing bandwidth
  int plot_left = 0, plot_top = 0, plot_width = 0, plot_height = 0;
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
};

struct AggregatedTestFigure {
  int width = 0, height = 0;  // the whole PNG
  std::vector<AggregatedTestPanel> panels;
  std::vector<std::string> notes;  // e.g. that no font was found
};

// The checks of the output made before anything is drawn: a ConfigError naming `option` and the file
// when its directory does not exist or it is a directory. Callers that compute the report first (the
// Python functions) make them before the computation.
void check_aggregated_test_figure_file(const std::filesystem::path& file, const std::string& option = "plot");

// Draws the figure of `report_json`, the JSON text of an aggregated test's report (the whole report of
// kef/aggregated_test_report.hpp, or its "aggregate" object), into the PNG `file`: written to a
// temporary name and renamed into place, so a failure leaves nothing. A report without single tests,
// or with a missing or non-numeric field, is a DataError naming the field; a bad output
// (check_aggregated_test_figure_file) a ConfigError naming `option` and the file.
AggregatedTestFigure write_aggregated_test_figure(const std::filesystem::path& file,
                                                  const std::string& report_json,
                                                  const std::string& option = "plot");

}  // namespace kef
