#pragma once
// Figures of fitted densities, as in DKEF Figures 1 and 2. For 2-D data: one panel per model (the
// truth first, when known) showing log p~ on a grid with its maximum subtracted and clipped below at
// −9, training points optionally overlaid, each panel titled with its name and held-out metrics. For
// 1-D data: one panel with every density normalised numerically on the grid, over a histogram of the
// training data. Written as PNG (cairo).
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kef/context.hpp"
#include "kef/model.hpp"
#include "kef/types.hpp"

namespace kef {

// The plotted region. For 1-D data only [xmin, xmax] is used.
struct PlotExtent {
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
};

struct PlotModel {
  std::string name;                   // panel title
  const Model* model = nullptr;       // not owned; must outlive the call
  std::vector<std::string> caption;   // short items under the title, e.g. "SM −0.905"
};

struct DensityPlotOptions {
  Index grid = 200;                    // 2-D: cells per side; 1-D: points of the curves
  bool show_points = true;             // overlay (2-D) / histogram (1-D) of the training data
  Index max_points = 1000;             // overlay at most this many training points (evenly spaced rows)
  std::optional<PlotExtent> extent{};  // default: data_extent(train and test)
  double floor = -9.0;                 // clip of log p~ − max (DKEF Fig. 2)
  int min_panel_pixels = 300;          // 2-D panels are grid·k pixels wide, k = ceil(this / grid)
  std::string footnote{};              // one line under the figure (e.g. metrics_legend)
  // The axes' titles, x then y (2-D): the data's column names; absent ones are "x" and "y".
  std::vector<std::string> axis_labels{};
};

// Where things were drawn, so that callers (and tests) can find a cell's pixels.
struct DensityPlotResult {
  int width = 0, height = 0;           // PNG size in pixels
  int cell_pixels = 0;                 // 2-D: side of one grid cell in pixels
  // 2-D: the image area of each panel (truth first), top-left corner and side in pixels.
  struct Panel {
    int x = 0, y = 0, size = 0;
  };
  std::vector<Panel> panels;
  PlotExtent extent;
  std::vector<std::string> notes;      // e.g. text could not be rendered (no font)
};

// log p~ at the centres of a cells x cells grid over the extent, minus its maximum, clipped below at
// floor. values(r, c) is at (x[c], y[r]); r = 0 is the bottom row (ymin). Values of −∞ (outside a
// bounded support) become the floor; NaN or +∞ anywhere, or no finite value at all, is a
// NumericalError naming the model and the point. Evaluated in fixed batches, in parallel; the result
// does not depend on the thread count.
struct LogDensityGrid {
  Vector x, y;
  Matrix values;
  double max = 0;  // the subtracted maximum of log p~ over the grid
};
LogDensityGrid log_density_grid(const Model& model, const std::string& name, const PlotExtent& extent,
                                Index cells, double floor, const Context& context);

// A 1-D density normalised on [xmin, xmax] by the trapezoid rule, at `points` equally spaced points
// (the ends included). Same error rules as log_density_grid.
struct DensityCurve {
  Vector x, density;
};
DensityCurve normalized_density_curve(const Model& model, const std::string& name, double xmin, double xmax,
                                      Index points, const Context& context);

// The default plotted region: per coordinate the 0.1% to 99.9% quantiles of the points, padded by 15%
// of that span on each side; for 2-D data the shorter side is widened so both spans are equal (square
// panels keep shapes undistorted).
PlotExtent data_extent(const Matrix& points);

// Renders the figure and writes it as PNG (to a temporary name, renamed into place). Needs 1-D or 2-D
// data (train and test have the model dimension; test may be empty). Text is drawn with cairo's toy
// font API; when no font is available the figure is written without text and a note says so.
DensityPlotResult write_density_plot(const std::filesystem::path& file, const std::vector<PlotModel>& models,
                                     const std::optional<PlotModel>& truth, const Matrix& train,
                                     const Matrix& test, const Context& context,
                                     const DensityPlotOptions& options = {});

bool density_plot_supported(Index dim);  // 1-D or 2-D

// The perceptual colormap of the panels (viridis: 11 published samples, linear in between), t in [0, 1]
// (clamped), as 8-bit sRGB.
std::array<std::uint8_t, 3> viridis(double t);

// Short panel captions from an evaluator's metrics: headline metrics get short labels ("SM", "FD",
// "LL", "MMD²", ...), diagnostics (bandwidths, HMC statistics, proposal counts) are left out, unknown
// metrics appear under their own name; a `name.` prefix of [[evaluate]] is kept. With truth = true
// only the metrics that describe the true density (score_matching_loss_truth, true_log_likelihood)
// are kept, labelled as the model's would be; with truth = false those are left out.
std::vector<std::string> metrics_caption(const std::vector<std::pair<std::string, double>>& metrics, bool truth);
// One line explaining the labels that metrics_caption used for these metrics (empty if none).
std::string metrics_legend(const std::vector<std::pair<std::string, double>>& metrics);
// Three significant digits, a true minus sign, exponent form outside [1e−3, 1e4).
std::string format_short(double value);

}  // namespace kef
