// Bar charts with a dot per value (kef/bar_plot.hpp), drawn with the toolkit of plot_canvas.hpp.
#include "kef/bar_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "kef/error.hpp"
#include "plot_canvas.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

using namespace detail;

void check_panels(const std::vector<BarPanel>& panels, const BarPlotOptions& o) {
  if (o.columns < 1 || o.columns > 100)
    throw ConfigError("bar plot: columns must be 1 to 100 (got " + std::to_string(o.columns) + ")");
  if (o.panel_width < 60 || o.panel_width > 4000 || o.panel_height < 60 || o.panel_height > 4000)
    throw ConfigError("bar plot: each panel's plotting area must be 60 to 4000 pixels each way (got " +
                      std::to_string(o.panel_width) + " x " + std::to_string(o.panel_height) + ")");
  if (panels.empty()) throw DataError("bar plot: no panel to draw (expected at least one)");
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const std::string pname = "bar plot: panel " + std::to_string(p + 1) + " ('" + panels[p].title + "')";
    if (panels[p].groups.empty()) throw DataError(pname + " has no bars");
    for (const BarGroup& g : panels[p].groups) {
      if (g.values.empty()) throw DataError(pname + ", bar '" + g.label + "' has no values");
      for (std::size_t i = 0; i < g.values.size(); ++i)
        if (!std::isfinite(g.values[i]))
          throw DataError(pname + ", bar '" + g.label + "', value " + std::to_string(i + 1) +
                          " is not finite (got " + std::to_string(g.values[i]) + ")");
    }
  }
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Ticks and their labels; the range always includes 0 (the bars start there) and is padded by 5%.
struct YAxis {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> ticks;
};

YAxis make_y_axis(const BarPanel& panel) {
  double lo = 0, hi = 0;
  for (const BarGroup& g : panel.groups)
    for (double v : g.values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (hi - lo <= 0) hi = lo + 1;  // every value 0
  const double pad = 0.05 * (hi - lo);
  YAxis a;
  a.lo = lo < 0 ? lo - pad : 0.0;
  a.hi = hi > 0 ? hi + pad : 0.0;
  a.ticks = nice_ticks(a.lo, a.hi, 4, &a.step);
  return a;
}

// A tick value as text: plain decimals for moderate steps, mantissa e exponent for tiny or huge ones.
std::string bar_tick_label(double v, double step) {
  if (step >= 1e-3 && step < 1e5) return tick_label(v, step);
  if (v == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return replace_minus(buf);
}

// The i-th of n dots across a bar of width w, centred on it: evenly spaced over the middle 70%, so
// that seeds with equal values stay visible side by side (deterministic, no random jitter).
double dot_offset(std::size_t i, std::size_t n, double w) {
  if (n == 1) return 0;
  return (static_cast<double>(i) / static_cast<double>(n - 1) - 0.5) * 0.7 * w;
}

// Tick length in pixels.
constexpr int kBarTick = 4;

// One panel whose plotting area (PW x PH) starts at (left, top): grid at the ticks, then the bars
// (light), the dots (full colour) and the mean's line, then the axes and the title; returns where
// things were drawn.
BarPanelGeometry draw_bar_panel(cairo_t* cr, const Text& text, const BarPanel& panel, const YAxis& ay,
                                const std::map<std::string, std::size_t>& colour_of, int left, int top, int PW,
                                int PH) {
  const int tick = kBarTick;
  auto py = [&](double v) { return top + PH - (v - ay.lo) / (ay.hi - ay.lo) * PH; };
  BarPanelGeometry geo;
  geo.plot_left = left;
  geo.plot_top = top;
  geo.y_min = ay.lo;
  geo.y_max = ay.hi;
  const double slot = static_cast<double>(PW) / static_cast<double>(panel.groups.size());
  geo.bar_width = 0.7 * slot;

  set_colour(cr, Rgb{0.90, 0.90, 0.90});
  cairo_set_line_width(cr, 1.0);
  for (double t : ay.ticks) {
    const double p = std::round(py(t)) + 0.5;
    cairo_move_to(cr, left, p);
    cairo_line_to(cr, left + PW, p);
  }
  cairo_stroke(cr);
  for (std::size_t g = 0; g < panel.groups.size(); ++g) {
    const BarGroup& grp = panel.groups[g];
    const Rgb c = rgb_hex(kCurveColours[colour_of.at(grp.label) % std::size(kCurveColours)]);
    const double centre = left + (static_cast<double>(g) + 0.5) * slot;
    geo.bar_centres.push_back(centre);
    const double m = mean_of(grp.values);
    const double y0 = py(0.0), y1 = py(m);
    cairo_rectangle(cr, centre - geo.bar_width / 2, std::min(y0, y1), geo.bar_width, std::abs(y1 - y0));
    set_colour(cr, c, 0.35);
    cairo_fill(cr);
    cairo_move_to(cr, centre - geo.bar_width / 2, y1);
    cairo_line_to(cr, centre + geo.bar_width / 2, y1);
    set_colour(cr, c);
    cairo_set_line_width(cr, 2.0);
    cairo_stroke(cr);
    for (std::size_t i = 0; i < grp.values.size(); ++i) {
      cairo_new_sub_path(cr);
      cairo_arc(cr, centre + dot_offset(i, grp.values.size(), geo.bar_width), py(grp.values[i]), 2.5, 0,
                2 * M_PI);
    }
    set_colour(cr, kInk);
    cairo_fill(cr);
    text.draw(grp.label, centre + 3, top + PH + tick + 6, kTickSize, false, Align::Right, kInk, false,
              -M_PI / 4);
  }
  // Axes: the zero line across, the left spine with ticks and labels, the panel's title above.
  set_colour(cr, kInk);
  cairo_set_line_width(cr, 1.0);
  cairo_move_to(cr, left - 0.5, top);
  cairo_line_to(cr, left - 0.5, top + PH + 0.5);
  cairo_move_to(cr, left, std::round(py(0.0)) + 0.5);
  cairo_line_to(cr, left + PW, std::round(py(0.0)) + 0.5);
  for (double t : ay.ticks) {
    const double p = std::round(py(t)) + 0.5;
    cairo_move_to(cr, left - 0.5, p);
    cairo_line_to(cr, left - 0.5 - tick, p);
    text.draw(bar_tick_label(t, ay.step), left - tick - 3, p, kTickSize, false, Align::Right, kInk, true);
  }
  cairo_stroke(cr);
  text.draw(panel.title, left + PW / 2.0, top - 8, kCaptionSize, true, Align::Centre, kInk);
  return geo;
}

}  // namespace

BarPlotResult write_bar_plot(const fs::path& file, const std::vector<BarPanel>& panels,
                             const BarPlotOptions& o) {
  check_panels(panels, o);

  // One colour per label, in the order labels first appear, so a model keeps its colour everywhere.
  std::map<std::string, std::size_t> colour_of;
  for (const BarPanel& p : panels)
    for (const BarGroup& g : p.groups) colour_of.emplace(g.label, colour_of.size());

  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  Text measure(scratch.get());
  std::vector<YAxis> axes;
  double ylabel_w = 0, xlabel_w = 0;
  for (const BarPanel& p : panels) {
    axes.push_back(make_y_axis(p));
    for (double t : axes.back().ticks)
      ylabel_w = std::max(ylabel_w, measure.width(bar_tick_label(t, axes.back().step), kTickSize, false));
    for (const BarGroup& g : p.groups)
      xlabel_w = std::max(xlabel_w, measure.width(g.label, kTickSize, false));
  }
  const int PW = o.panel_width, PH = o.panel_height, tick = kBarTick;
  const int cols = std::min<int>(o.columns, static_cast<int>(panels.size()));
  const int rows = (static_cast<int>(panels.size()) + cols - 1) / cols;
  const int inner_left = 8 + static_cast<int>(std::ceil(ylabel_w)) + tick + 4;
  const int panel_title_h = 22;
  // Bar labels are written at 45°: their height is their width / √2.
  const int labels_h = tick + 6 + static_cast<int>(std::ceil(xlabel_w / std::sqrt(2.0))) + 8;
  const int cell_w = inner_left + PW + 16, cell_h = panel_title_h + PH + labels_h;
  const int top0 = o.title.empty() ? 8 : 8 + 26;
  const int width = cols * cell_w + 8;
  const std::vector<std::string> foot = footnote_lines(measure, o.footnote, width - 20);
  const int height = top0 + rows * cell_h + 8 + static_cast<int>(foot.size()) * 15;

  BarPlotResult result;
  result.width = width;
  result.height = height;
  Canvas canvas(width, height);
  cairo_t* cr = canvas.cr();
  Text text(canvas.surface());
  if (!o.title.empty()) text.draw(o.title, width / 2.0, 8 + 16, kTitleSize, true, Align::Centre, kInk);

  for (std::size_t k = 0; k < panels.size(); ++k) {
    const int col = static_cast<int>(k) % cols, row = static_cast<int>(k) / cols;
    const int left = col * cell_w + 8 + inner_left, top = top0 + row * cell_h + panel_title_h;
    result.panels.push_back(draw_bar_panel(cr, text, panels[k], axes[k], colour_of, left, top, PW, PH));
  }
  for (std::size_t l = 0; l < foot.size(); ++l)
    text.draw(foot[l], 10, height - 10 - 15.0 * (foot.size() - 1 - l) - 4, kFootSize, false, Align::Left,
              kGrey);

  font_notes(text, measure, result.notes, "bar plot");
  canvas.write(file);
  return result;
}

namespace {

// One CSV line's fields; a field may be double-quoted (with "" for a quote and commas inside).
std::vector<std::string> csv_fields(const std::string& line, const std::string& where) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"' && field.find_first_not_of(' ') == std::string::npos && !was_quoted) {
      quoted = was_quoted = true;
      field.clear();
    } else if (ch == ',') {
      out.push_back(field);
      field.clear();
      was_quoted = false;
    } else if (ch != '\r') {
      field += ch;
    }
  }
  if (quoted) throw DataError(where + ": a quoted field is not closed");
  out.push_back(field);
  for (auto& f : out) {
    while (!f.empty() && f.back() == ' ') f.pop_back();
    while (!f.empty() && f.front() == ' ') f.erase(f.begin());
  }
  return out;
}

}  // namespace

std::vector<BarPanel> read_bar_panels(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  if (!in || !std::getline(in, line)) throw DataError(csv.string() + ": cannot read the header line");
  const std::vector<std::string> header = csv_fields(line, csv.string() + ":1");
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw DataError(csv.string() + ":1: no column '" + name +
                      "' in the header (expected the columns panel, bar and value)");
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t cp = column("panel"), cb = column("bar"), cv = column("value");
  std::vector<BarPanel> panels;
  std::size_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \r") == std::string::npos) continue;
    const std::string where = csv.string() + ":" + std::to_string(line_no);
    const std::vector<std::string> f = csv_fields(line, where);
    if (f.size() != header.size())
      throw DataError(where + ": " + std::to_string(f.size()) + " fields (expected " +
                      std::to_string(header.size()) + ", as the header)");
    if (f[cp].empty()) throw DataError(where + ", column panel: empty (expected the panel's title)");
    if (f[cb].empty()) throw DataError(where + ", column bar: empty (expected the bar's label)");
    char* end = nullptr;
    const double v = f[cv].empty() ? std::nan("") : std::strtod(f[cv].c_str(), &end);
    if (f[cv].empty() || end != f[cv].c_str() + f[cv].size() || !std::isfinite(v))
      throw DataError(where + ", column value: '" + f[cv] + "' is not a finite number");
    auto p = std::find_if(panels.begin(), panels.end(), [&](const BarPanel& x) { return x.title == f[cp]; });
    if (p == panels.end()) {
      panels.push_back({f[cp], {}});
      p = panels.end() - 1;
    }
    auto g =
        std::find_if(p->groups.begin(), p->groups.end(), [&](const BarGroup& x) { return x.label == f[cb]; });
    if (g == p->groups.end()) {
      p->groups.push_back({f[cb], {}});
      g = p->groups.end() - 1;
    }
    g->values.push_back(v);
  }
  if (panels.empty()) throw DataError(csv.string() + ": no data rows (expected one row per value)");
  return panels;
}

}  // namespace kef
