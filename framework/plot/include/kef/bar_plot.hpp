#pragma once
// Bar charts with every measurement shown: a grid of panels, each with a bar per group at the mean of
// its values and a dot per value (one per seed), in the style of DKEF's Figure 3 (a panel per data set
// and metric, a bar per model). `kef barplot` draws them from a long CSV (panel, bar, value).
#include <filesystem>
#include <string>
#include <vector>

namespace kef {

struct BarGroup {
  std::string label;           // under the bar; the same label has the same colour in every panel
  std::vector<double> values;  // at least one; the bar is drawn at their mean, a dot at each
};

struct BarPanel {
  std::string title;
  std::vector<BarGroup> groups;  // drawn left to right in this order
};

struct BarPlotOptions {
  std::string title;                          // above the grid; empty: none
  int columns = 3;                            // panels per row, in [1, 100]
  int panel_width = 300, panel_height = 200;  // each panel's plotting area, pixels, in [60, 4000]
  std::string footnote;                       // below the figure, wrapped; items separated by " · "
};

struct BarPanelGeometry {
  int plot_left = 0, plot_top = 0;  // the panel's plotting area's top-left pixel
  double y_min = 0, y_max = 0;      // the value range it spans (padded; always includes 0)
  std::vector<double> bar_centres;  // x pixel of each group's bar centre
  double bar_width = 0;             // pixels
};

struct BarPlotResult {
  int width = 0, height = 0;             // the whole PNG
  std::vector<BarPanelGeometry> panels;  // in the order given
  std::vector<std::string> notes;        // e.g. that no font was found
};

// Writes the PNG (to a temporary name, then renamed into place). Checked before anything is drawn: at
// least one panel, each with at least one group, each group with at least one value, every value
// finite (DataError naming the panel, the group and the value); options in range (ConfigError).
BarPlotResult write_bar_plot(const std::filesystem::path& file, const std::vector<BarPanel>& panels,
                             const BarPlotOptions& options = {});

// Panels read from a CSV file with a header row holding the columns `panel`, `bar` and `value` (others
// ignored; fields may be double-quoted): one row per measurement. Panels and bars keep the order of
// their first appearance. Errors are DataErrors naming the file, the line and the column.
std::vector<BarPanel> read_bar_panels(const std::filesystem::path& csv);

}  // namespace kef
