// Scatter plots (kef/scatter_plot.hpp), drawn with the toolkit of plot_canvas.hpp.
#include "kef/scatter_plot.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kef/error.hpp"
#include "plot_canvas.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

using namespace detail;

void check_points(const Matrix& points, const std::string& name) {
  if (points.cols() != 2)
    throw DataError("scatter plot: " + name + " has " + std::to_string(points.cols()) +
                    " columns (expected 2: x and y)");
  if (points.rows() == 0) throw DataError("scatter plot: " + name + " has no points");
  for (Index i = 0; i < points.rows(); ++i)
    for (Index d = 0; d < 2; ++d)
      if (!std::isfinite(points(i, d)))
        throw DataError("scatter plot: " + name + ", row " + std::to_string(i + 1) + ", column " +
                        std::to_string(d + 1) + " is not finite (got " + std::to_string(points(i, d)) + ")");
}

void check_input(const std::vector<ScatterPanel>& panels, const ScatterPlotOptions& o) {
  if (o.columns < 1 || o.columns > 100)
    throw ConfigError("scatter plot: columns must be 1 to 100 (got " + std::to_string(o.columns) + ")");
  if (o.panel_size < 60 || o.panel_size > 4000)
    throw ConfigError("scatter plot: the panel size must be 60 to 4000 pixels (got " +
                      std::to_string(o.panel_size) + ")");
  if (o.max_points < 1)
    throw ConfigError("scatter plot: max_points must be at least 1 (got " + std::to_string(o.max_points) + ")");
  if (panels.empty()) throw DataError("scatter plot: no panel to draw (expected at least one)");
  for (std::size_t p = 0; p < panels.size(); ++p)
    check_points(panels[p].points, "panel " + std::to_string(p + 1) + " ('" + panels[p].title + "')");
  if (o.reference.size() > 0 || o.reference.cols() > 0) check_points(o.reference, "the reference set");
}

}  // namespace

std::vector<Index> thinned_rows(Index n, Index max_points) {
  const Index step = std::max<Index>(1, (n + max_points - 1) / max_points);
  std::vector<Index> rows;
  for (Index i = 0; i < n; i += step) rows.push_back(i);
  return rows;
}

namespace {

// The extent every panel shares: the reference's, or without one all panels' points together.
PlotExtent scatter_extent(const std::vector<ScatterPanel>& panels, const ScatterPlotOptions& o) {
  if (o.reference.rows() > 0) return data_extent(o.reference);
  Index total = 0;
  for (const ScatterPanel& p : panels) total += p.points.rows();
  Matrix all(total, 2);
  Index at = 0;
  for (const ScatterPanel& p : panels) {
    all.middleRows(at, p.points.rows()) = p.points;
    at += p.points.rows();
  }
  return data_extent(all);
}

// Tick length in pixels; the reference is drawn in a light grey under every panel, each panel's
// points in the first curve colour.
constexpr int kScatterTick = 4;
constexpr Rgb kReferenceColour{0.62, 0.62, 0.62};

struct ScatterTicks {
  double xstep = 1, ystep = 1;
  std::vector<double> xt, yt;
};

// One panel whose square plotting area starts at (left, top): the reference and the panel's points
// (thinned), clipped to the area, then the frame, ticks and the title; returns what was drawn.
ScatterPanelGeometry draw_scatter_panel(cairo_t* cr, const Text& text, const ScatterPanel& panel,
                                        const ScatterPlotOptions& o, const PlotExtent& e, const ScatterTicks& t,
                                        int left, int top) {
  const int S = o.panel_size, tick = kScatterTick;
  const Rgb point_colour = rgb_hex(kCurveColours[0]);
  const double radius = std::clamp(S / 220.0, 0.9, 3.0);
  auto px = [&](double x) { return left + (x - e.xmin) / (e.xmax - e.xmin) * S; };
  auto py = [&](double y) { return top + S - (y - e.ymin) / (e.ymax - e.ymin) * S; };
  ScatterPanelGeometry geo;
  geo.plot_left = left;
  geo.plot_top = top;

  cairo_save(cr);
  cairo_rectangle(cr, left, top, S, S);
  cairo_clip(cr);
  auto dots = [&](const Matrix& P, Rgb c, double alpha, Index* drawn, Index* outside) {
    for (Index i : thinned_rows(P.rows(), o.max_points)) {
      const double x = P(i, 0), y = P(i, 1);
      if (drawn) ++*drawn;
      if (outside && (x < e.xmin || x > e.xmax || y < e.ymin || y > e.ymax)) ++*outside;
      cairo_new_sub_path(cr);
      cairo_arc(cr, px(x), py(y), radius, 0, 2 * M_PI);
    }
    set_colour(cr, c, alpha);
    cairo_fill(cr);
  };
  if (o.reference.rows() > 0) dots(o.reference, kReferenceColour, 0.6, nullptr, nullptr);
  dots(panel.points, point_colour, 0.55, &geo.drawn, &geo.outside);
  cairo_restore(cr);

  set_colour(cr, kInk);
  cairo_set_line_width(cr, 1.0);
  cairo_rectangle(cr, left - 0.5, top - 0.5, S + 1, S + 1);
  draw_x_ticks(cr, text, t.xt, t.xstep, px, top + S, tick);
  draw_y_ticks(cr, text, t.yt, t.ystep, py, left, tick);
  cairo_stroke(cr);
  text.draw(panel.title, left + S / 2.0, top - 8, kCaptionSize, true, Align::Centre, kInk);
  return geo;
}

}  // namespace

ScatterPlotResult write_scatter_plot(const fs::path& file, const std::vector<ScatterPanel>& panels,
                                     const ScatterPlotOptions& o) {
  check_input(panels, o);
  const bool has_reference = o.reference.rows() > 0;
  ScatterPlotResult result;
  result.extent = scatter_extent(panels, o);
  const PlotExtent& e = result.extent;
  ScatterTicks t;
  t.xt = nice_ticks(e.xmin, e.xmax, 4, &t.xstep);
  t.yt = nice_ticks(e.ymin, e.ymax, 4, &t.ystep);

  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  Text measure(scratch.get());
  double ylabel_w = 0;
  for (double v : t.yt) ylabel_w = std::max(ylabel_w, measure.width(tick_label(v, t.ystep), kTickSize, false));
  const int S = o.panel_size, tick = kScatterTick;
  const int cols = std::min<int>(o.columns, static_cast<int>(panels.size()));
  const int rows = (static_cast<int>(panels.size()) + cols - 1) / cols;
  const int inner_left = 8 + static_cast<int>(std::ceil(ylabel_w)) + tick + 4;
  const int panel_title_h = 22, axis_h = tick + 4 + 12 + 8;
  const int cell_w = inner_left + S + 14, cell_h = panel_title_h + S + axis_h;
  const int top0 = o.title.empty() ? 8 : 8 + 26;
  const int legend_h = 22;
  const int width = cols * cell_w + 8;
  const std::vector<std::string> foot = footnote_lines(measure, o.footnote, width - 20);
  const int height = top0 + rows * cell_h + legend_h + 8 + static_cast<int>(foot.size()) * 15;
  result.width = width;
  result.height = height;

  Canvas canvas(width, height);
  cairo_t* cr = canvas.cr();
  Text text(canvas.surface());
  if (!o.title.empty()) text.draw(o.title, width / 2.0, 8 + 16, kTitleSize, true, Align::Centre, kInk);

  for (std::size_t k = 0; k < panels.size(); ++k) {
    const int col = static_cast<int>(k) % cols, row = static_cast<int>(k) / cols;
    const int left = col * cell_w + 8 + inner_left, top = top0 + row * cell_h + panel_title_h;
    const ScatterPanelGeometry geo = draw_scatter_panel(cr, text, panels[k], o, e, t, left, top);
    if (geo.outside > 0)
      result.notes.push_back("scatter plot: panel '" + panels[k].title + "': " + std::to_string(geo.outside) +
                             " of its " + std::to_string(geo.drawn) + " drawn points are outside the plotted region");
    result.panels.push_back(geo);
  }

  // Legend: the panels' points and the reference.
  const double ly = top0 + rows * cell_h + 10;
  double lx = 8 + inner_left;
  auto legend_item = [&](Rgb c, const std::string& label) {
    cairo_new_sub_path(cr);
    cairo_arc(cr, lx + 5, ly, 4.0, 0, 2 * M_PI);
    set_colour(cr, c);
    cairo_fill(cr);
    text.draw(label, lx + 14, ly, kCaptionSize, false, Align::Left, kInk, true);
    lx += 14 + measure.width(label, kCaptionSize, false) + 24;
  };
  legend_item(rgb_hex(kCurveColours[0]), o.points_label);
  if (has_reference) legend_item(kReferenceColour, o.reference_label);
  for (std::size_t l = 0; l < foot.size(); ++l)
    text.draw(foot[l], 10, height - 10 - 15.0 * (foot.size() - 1 - l) - 4, kFootSize, false, Align::Left,
              kGrey);

  font_notes(text, measure, result.notes, "scatter plot");
  canvas.write(file);
  return result;
}

}  // namespace kef
