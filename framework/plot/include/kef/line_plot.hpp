#pragma once
// Line plots on linear or logarithmic axes, each series with an optional shaded band: the figures of
// kef's experiments (an error against n on log-log axes with its spread over seeds, a type II error
// curve with its Monte Carlo band, an objective's profile in a bandwidth). `kef lineplot` draws them
// from CSV files.
#include <filesystem>
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

struct LineSeries {
  std::string label;
  Vector x, y;          // drawn in the given order, joined by straight segments
  Vector lower, upper;  // both empty, or one value per point: a shaded band (mean ± sd, a credible band)
  // Only a larger marker at each point, no joining line and no band: points singled out among
  // another series' (e.g. the bandwidths at which a test rejects).
  bool markers_only = false;
};

struct LinePlotOptions {
  std::string title;  // above the plot; empty: none
  std::string x_label = "x", y_label = "y";
  bool log_x = false, log_y = false;  // base-10 axes; every value on such an axis must be > 0
  int width = 560, height = 360;      // the plotting area in pixels, each in [100, 4000]
  std::string footnote;               // below the figure, wrapped; items separated by " · "
};

struct LinePlotResult {
  int width = 0, height = 0;                          // the whole PNG
  int plot_left = 0, plot_top = 0;                    // the plotting area's top-left pixel
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;  // the data range it spans (padded)
  std::vector<std::string> notes;                     // e.g. that no font was found
};

// Writes the PNG (to a temporary name, then renamed into place). Checked before anything is drawn:
// at least one series, each with at least one point; x, y, lower and upper of equal length, finite,
// lower <= upper, and positive on a logarithmic axis (DataError naming the series and the point);
// options in range (ConfigError). A missing output directory is a ConfigError.
LinePlotResult write_line_plot(const std::filesystem::path& file, const std::vector<LineSeries>& series,
                               const LinePlotOptions& options = {});

// A series read from a CSV file with a header row: columns `x` and `y`, and optionally `lower` and
// `upper` (both or neither); other columns are ignored. Errors are DataErrors naming the file, the
// line and the column (kef/data_io.hpp).
LineSeries read_line_series(const std::filesystem::path& csv, const std::string& label);

}  // namespace kef
