#pragma once
// The kef command's figure subcommands: `kef montage`, `kef lineplot`, `kef barplot` and
// `kef scatterplot`. Each reads and checks its inputs before drawing, and its PNG appears only when
// complete. Internal to the kef command.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kef/bar_plot.hpp"
#include "kef/line_plot.hpp"
#include "kef/scatter_plot.hpp"

namespace kef_cli {

struct FigureFlags {
  std::vector<std::string> montage_inputs;
  std::string montage_out;
  int montage_columns = 1, montage_width = 0;
  std::vector<std::string> lineplot_series;
  std::string lineplot_out;
  kef::LinePlotOptions lineplot;
  std::string barplot_csv, barplot_out;
  kef::BarPlotOptions barplot;
  std::vector<std::string> scatter_sets;
  std::string scatter_out, scatter_reference;
  kef::ScatterPlotOptions scatter;
};

struct FigureCommands {
  CLI::App* montage = nullptr;
  CLI::App* lineplot = nullptr;
  CLI::App* barplot = nullptr;
  CLI::App* scatterplot = nullptr;
};

FigureCommands add_figure_commands(CLI::App& app, FigureFlags& f);
// The parsed figure command's --out checked before any work; nothing when none was parsed.
void check_figure_output(const FigureCommands& c, const FigureFlags& f);
// Runs the parsed figure command and returns its exit status; -1 when none was parsed.
int run_figure_command(const FigureCommands& c, const FigureFlags& f);

}  // namespace kef_cli
