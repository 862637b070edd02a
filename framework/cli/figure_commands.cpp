#include "figure_commands.hpp"

#include <filesystem>
#include <iostream>

#include "cli_support.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/png_montage.hpp"

namespace kef_cli {

namespace fs = std::filesystem;

namespace {

// LABEL=FILE, split at the last '=': labels may contain one ("θ = 1/2"), file names rarely do.
std::pair<std::string, std::string> labelled_file(const std::string& spec, const std::string& command,
                                                  const std::string& what, const std::string& expected) {
  const auto eq = spec.rfind('=');
  if (eq == std::string::npos || eq + 1 == spec.size())
    throw kef::ConfigError(command + ": " + what + " `" + spec + "`: expected " + expected);
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

int report(const std::vector<std::string>& notes, int width, int height, const std::string& out) {
  for (const auto& n : notes) std::cerr << "[kef] note: " << n << "\n";
  std::cerr << "[kef] wrote " << width << " x " << height << " pixels to " << out << "\n";
  return 0;
}

// The points of a scatter set: a .npy or .csv file of exactly two columns (x, y).
kef::Matrix read_points(const std::string& file, const std::string& option) {
  const kef::TableData t = kef::read_table(file, {});
  if (t.values.cols() != 2)
    throw kef::DataError(file + " (" + option + "): has " + std::to_string(t.values.cols()) +
                         " columns; a scatter plot takes 2 (x, y)");
  return t.values;
}

}  // namespace

FigureCommands add_figure_commands(CLI::App& app, FigureFlags& f) {
  FigureCommands c;
  c.montage = app.add_subcommand("montage",
                                 "Paste PNG figures into one, row by row (e.g. density.png of several runs)");
  c.montage->add_option("inputs", f.montage_inputs, "input PNG files, in reading order")->required();
  c.montage->add_option("--out", f.montage_out, "output PNG")->required();
  c.montage
      ->add_option("--width", f.montage_width, "scale the result to this many pixels across (default: no scaling)")
      ->check(integer_in(0, 100000));
  c.montage->add_option("--columns", f.montage_columns, "images per row (default 1: stacked vertically)")
      ->check(integer_in(1, 10000));

  c.lineplot = app.add_subcommand(
      "lineplot", "Draw series from CSV files (columns x, y, optional lower and upper) as a line plot");
  c.lineplot
      ->add_option("series", f.lineplot_series,
                   "LABEL=FILE.csv, one per series, drawn in this order (a band where lower/upper exist)")
      ->required();
  c.lineplot->add_option("--out", f.lineplot_out, "output PNG")->required();
  c.lineplot->add_flag("--log-x", f.lineplot.log_x, "logarithmic x axis (every x must be > 0)");
  c.lineplot->add_flag("--log-y", f.lineplot.log_y, "logarithmic y axis (every y, lower, upper > 0)");
  c.lineplot->add_option("--title", f.lineplot.title, "title above the plot");
  c.lineplot->add_option("--x-label", f.lineplot.x_label, "x axis label (default: x)");
  c.lineplot->add_option("--y-label", f.lineplot.y_label, "y axis label (default: y)");
  c.lineplot->add_option("--footnote", f.lineplot.footnote, "text below the figure");
  c.lineplot->add_option("--width", f.lineplot.width, "plotting area width in pixels (default 560)")
      ->check(integer_in(100, 4000));
  c.lineplot->add_option("--height", f.lineplot.height, "plotting area height in pixels (default 360)")
      ->check(integer_in(100, 4000));

  c.barplot = app.add_subcommand(
      "barplot",
      "Draw a grid of bar charts, a bar per group at its mean and a dot per value, from a CSV "
      "with columns panel, bar, value");
  c.barplot->add_option("csv", f.barplot_csv, "FILE.csv: one row per value (columns panel, bar, value)")
      ->required();
  c.barplot->add_option("--out", f.barplot_out, "output PNG")->required();
  c.barplot->add_option("--title", f.barplot.title, "title above the panels");
  c.barplot->add_option("--footnote", f.barplot.footnote, "text below the figure");
  c.barplot->add_option("--columns", f.barplot.columns, "panels per row (default 3)")->check(integer_in(1, 100));
  c.barplot->add_option("--width", f.barplot.panel_width, "each panel's plotting width in pixels (default 300)")
      ->check(integer_in(60, 4000));
  c.barplot->add_option("--height", f.barplot.panel_height, "each panel's plotting height in pixels (default 200)")
      ->check(integer_in(60, 4000));

  c.scatterplot = app.add_subcommand(
      "scatterplot",
      "Draw 2-D point sets (.npy or .csv of two columns), one panel each, over a reference set "
      "(e.g. model samples over the test data) on one shared square region");
  c.scatterplot
      ->add_option("sets", f.scatter_sets, "LABEL=FILE, one panel per set (the panel's title is LABEL)")
      ->required();
  c.scatterplot->add_option("--out", f.scatter_out, "output PNG")->required();
  c.scatterplot->add_option("--reference", f.scatter_reference,
                            "points drawn in grey under every panel; they set the plotted region (the "
                            "0.1–99.9% quantiles, padded by 15%)");
  c.scatterplot->add_option("--reference-label", f.scatter.reference_label,
                            "the reference's name in the legend (default: data)");
  c.scatterplot->add_option("--points-label", f.scatter.points_label,
                            "the panels' points' name in the legend (default: samples)");
  c.scatterplot->add_option("--title", f.scatter.title, "title above the panels");
  c.scatterplot->add_option("--footnote", f.scatter.footnote, "text below the figure");
  c.scatterplot->add_option("--columns", f.scatter.columns, "panels per row (default 3)")
      ->check(integer_in(1, 100));
  c.scatterplot->add_option("--size", f.scatter.panel_size, "each panel's side in pixels (default 280)")
      ->check(integer_in(60, 4000));
  c.scatterplot
      ->add_option("--max-points", f.scatter.max_points,
                   "draw at most this many points of each set, evenly spaced rows (default 3000)")
      ->check(integer_in(1, kMaxSamples));
  return c;
}

void check_figure_output(const FigureCommands& c, const FigureFlags& f) {
  if (c.montage->parsed()) check_output_file("--out", f.montage_out);
  if (c.lineplot->parsed()) check_output_file("--out", f.lineplot_out);
  if (c.barplot->parsed()) check_output_file("--out", f.barplot_out);
  if (c.scatterplot->parsed()) check_output_file("--out", f.scatter_out);
}

int run_figure_command(const FigureCommands& c, const FigureFlags& f) {
  if (c.montage->parsed()) {
    const std::vector<fs::path> inputs(f.montage_inputs.begin(), f.montage_inputs.end());
    const kef::MontageResult m = kef::write_png_montage(inputs, f.montage_columns, f.montage_out, f.montage_width);
    return report({}, m.width, m.height, f.montage_out);
  }
  if (c.lineplot->parsed()) {
    std::vector<kef::LineSeries> series;
    for (const auto& spec : f.lineplot_series) {
      const auto [label, file] = labelled_file(spec, "lineplot", "series", "LABEL=FILE.csv");
      series.push_back(kef::read_line_series(file, label));
    }
    const kef::LinePlotResult r = kef::write_line_plot(f.lineplot_out, series, f.lineplot);
    return report(r.notes, r.width, r.height, f.lineplot_out);
  }
  if (c.barplot->parsed()) {
    const kef::BarPlotResult r = kef::write_bar_plot(f.barplot_out, kef::read_bar_panels(f.barplot_csv), f.barplot);
    return report(r.notes, r.width, r.height, f.barplot_out);
  }
  if (c.scatterplot->parsed()) {
    std::vector<kef::ScatterPanel> panels;
    for (const auto& spec : f.scatter_sets) {
      const auto [label, file] = labelled_file(spec, "scatterplot", "set", "LABEL=FILE.npy (or .csv)");
      panels.push_back({label, read_points(file, label)});
    }
    kef::ScatterPlotOptions options = f.scatter;
    if (!f.scatter_reference.empty()) options.reference = read_points(f.scatter_reference, "--reference");
    const kef::ScatterPlotResult r = kef::write_scatter_plot(f.scatter_out, panels, options);
    return report(r.notes, r.width, r.height, f.scatter_out);
  }
  return -1;
}

}  // namespace kef_cli
