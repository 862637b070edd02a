#pragma once
// Scatter plots of 2-D point sets over a reference set: model draws over the data they should match,
// one panel per model, on one shared square extent (DDE's Figures 2–3, samples over the truth).
// `kef scatterplot` draws them from .npy or .csv files.
#include <filesystem>
#include <string>
#include <vector>

#include "kef/density_plot.hpp"
#include "kef/types.hpp"

namespace kef {

struct ScatterPanel {
  std::string title;
  Matrix points;  // N x 2
};

struct ScatterPlotOptions {
  std::string title;                     // above the panels; empty: none
  Matrix reference;                      // N x 2 drawn under every panel (e.g. the test rows); may be empty
  std::string reference_label = "data";  // in the legend
  std::string points_label = "samples";  // the panels' points in the legend
  int columns = 3;                       // panels per row, 1 to 100
  int panel_size = 280;                  // each panel's square plotting area in pixels, 60 to 4000
  Index max_points = 3000;               // draw at most this many points per set (evenly spaced rows), >= 1
  std::string footnote;                  // below the figure, wrapped
};

struct ScatterPanelGeometry {
  int plot_left = 0, plot_top = 0;  // the panel's plotting area's top-left pixel (panel_size square)
  Index drawn = 0;                  // points drawn (after thinning)
  Index outside = 0;                // of those, outside the extent (not visible)
};

struct ScatterPlotResult {
  int width = 0, height = 0;
  PlotExtent extent;  // shared by every panel: data_extent of the reference (of all points without one)
  std::vector<ScatterPanelGeometry> panels;
  std::vector<std::string> notes;  // points outside the extent, no font
};

// Writes the PNG (to a temporary name, then renamed into place). Checked before anything is drawn:
// at least one panel; every set with 2 columns, at least one row and finite values (DataError naming
// the panel, the row and the column); options in range (ConfigError).
ScatterPlotResult write_scatter_plot(const std::filesystem::path& file, const std::vector<ScatterPanel>& panels,
                                     const ScatterPlotOptions& options = {});

// The rows drawn of a set of n points: every ⌈n / max⌉-th from the first (all when n <= max).
std::vector<Index> thinned_rows(Index n, Index max_points);

}  // namespace kef
