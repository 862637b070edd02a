// Line plots (kef/line_plot.hpp), drawn with the toolkit of plot_canvas.hpp.
#include "kef/line_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "plot_canvas.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

using namespace detail;

std::string series_name(const LineSeries& s, std::size_t index) {
  return s.label.empty() ? "series " + std::to_string(index + 1) : "series '" + s.label + "'";
}

void check_series(const std::vector<LineSeries>& series, const LinePlotOptions& o) {
  if (o.width < 100 || o.width > 4000 || o.height < 100 || o.height > 4000)
    throw ConfigError("line plot: the plotting area must be 100 to 4000 pixels each way (got " +
                      std::to_string(o.width) + " x " + std::to_string(o.height) + ")");
  if (series.empty()) throw DataError("line plot: no series to draw (expected at least one)");
  for (std::size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    const std::string name = series_name(s, k);
    const Index n = s.x.size();
    if (n == 0) throw DataError("line plot: " + name + " has no points");
    if (s.y.size() != n)
      throw DataError("line plot: " + name + " has " + std::to_string(n) + " x values but " +
                      std::to_string(s.y.size()) + " y values (expected one y per x)");
    const bool band = s.lower.size() > 0 || s.upper.size() > 0;
    if (band && s.markers_only)
      throw DataError("line plot: " + name + " is drawn as markers only and cannot have a band");
    if (band && (s.lower.size() != n || s.upper.size() != n))
      throw DataError("line plot: " + name + "'s band has " + std::to_string(s.lower.size()) + " lower and " +
                      std::to_string(s.upper.size()) + " upper values (expected " + std::to_string(n) +
                      " of each, or none)");
    for (Index i = 0; i < n; ++i) {
      const std::string where = "line plot: " + name + ", point " + std::to_string(i + 1) + ": ";
      auto check = [&](double v, const char* what, bool log_axis) {
        if (!std::isfinite(v))
          throw DataError(where + what + " is not finite (got " + std::to_string(v) + ")");
        if (log_axis && v <= 0)
          throw DataError(where + what + " is " + std::to_string(v) +
                          " on a logarithmic axis (expected a positive value)");
      };
      check(s.x[i], "x", o.log_x);
      check(s.y[i], "y", o.log_y);
      if (band) {
        check(s.lower[i], "the band's lower end", o.log_y);
        check(s.upper[i], "the band's upper end", o.log_y);
        if (s.lower[i] > s.upper[i])
          throw DataError(where + "the band's lower end " + std::to_string(s.lower[i]) +
                          " exceeds its upper end " + std::to_string(s.upper[i]));
      }
    }
  }
}

// An axis in drawing units: log10 of the value on a logarithmic axis, the value otherwise.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // drawing units, padded
  double to_units(double v) const { return log ? std::log10(v) : v; }
};

Axis make_axis(double lo, double hi, bool log) {
  Axis a;
  a.log = log;
  lo = a.to_units(lo);
  hi = a.to_units(hi);
  if (hi - lo <= 0) {
    // One value: a window around it (half a decade on a log axis).
    const double half = log ? 0.5 : (lo == 0 ? 1.0 : 0.1 * std::abs(lo));
    lo -= half;
    hi += half;
  }
  const double pad = 0.04 * (hi - lo);
  a.lo = lo - pad;
  a.hi = hi + pad;
  return a;
}

// A tick value as text: plain decimals between 10^-3 and 10^5, otherwise mantissa e exponent.
std::string log_tick_label(double v) {
  char buf[64];
  if (v >= 1e-3 && v < 1e5) {
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(v) + 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
  }
  const int e = static_cast<int>(std::floor(std::log10(v) + 1e-9));
  const double m = v / std::pow(10.0, e);
  std::snprintf(buf, sizeof buf, "%.0fe%d", m, e);
  return replace_minus(buf);
}

struct Ticks {
  std::vector<double> units;  // positions in drawing units
  std::vector<std::string> labels;
};

Ticks make_ticks(const Axis& a, int target) {
  Ticks t;
  if (!a.log) {
    double step = 1;
    for (double v : nice_ticks(a.lo, a.hi, target, &step)) {
      t.units.push_back(v);
      t.labels.push_back(tick_label(v, step));
    }
    return t;
  }
  // Decades; with fewer than two inside the range, 1, 2 and 5 times each power of ten as well; with
  // fewer than two of those either, linear ticks over the (narrow) range.
  const double kMults[2][3] = {{1, 0, 0}, {1, 2, 5}};
  for (int pass = 0; pass < 2; ++pass) {
    t = {};
    for (double e = std::floor(a.lo); e <= std::ceil(a.hi); e += 1.0) {
      for (double m : kMults[pass]) {
        if (m == 0) continue;
        const double v = m * std::pow(10.0, e);
        const double u = std::log10(v);
        if (u < a.lo - 1e-12 || u > a.hi + 1e-12) continue;
        t.units.push_back(u);
        t.labels.push_back(log_tick_label(v));
      }
    }
    if (t.units.size() >= 2) return t;
  }
  t = {};
  double step = 1;
  for (double v : nice_ticks(std::pow(10.0, a.lo), std::pow(10.0, a.hi), target, &step)) {
    if (v <= 0) continue;
    t.units.push_back(std::log10(v));
    t.labels.push_back(tick_label(v, step));
  }
  return t;
}

// The data's range over every series, its band included.
struct LineRange {
  double xlo, xhi, ylo, yhi;
};

LineRange line_data_range(const std::vector<LineSeries>& series) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const LineSeries& s : series) {
    xlo = std::min(xlo, s.x.minCoeff());
    xhi = std::max(xhi, s.x.maxCoeff());
    ylo = std::min(ylo, s.y.minCoeff());
    yhi = std::max(yhi, s.y.maxCoeff());
    if (s.lower.size() > 0) {
      ylo = std::min(ylo, s.lower.minCoeff());
      yhi = std::max(yhi, s.upper.maxCoeff());
    }
  }
  return {xlo, xhi, ylo, yhi};
}

// Tick length and legend swatch width, in pixels; the radius of a markers-only series' markers.
constexpr int kLineTick = 4, kLineSwatch = 30;
constexpr double kLineMarker = 5.5;

// The figure's layout: the plotting area (left, top, PW x PH), the legend's column, the wrapped
// footnote and the whole size, sized so that the widest tick and legend labels fit.
struct LineLayout {
  int PW = 0, PH = 0, left = 0, top = 0, legend_x = 0, width = 0, height = 0;
  double title_x = 0;  // the title's centre: over the plotting area, or further right when it is wider
  std::vector<std::string> foot;
};

LineLayout line_layout(const std::vector<LineSeries>& series, const Ticks& yt, const LinePlotOptions& o,
                       const Text& measure) {
  double ylabel_w = 0;
  for (const auto& l : yt.labels) ylabel_w = std::max(ylabel_w, measure.width(l, kTickSize, false));
  double legend_w = 0;
  for (const LineSeries& s : series)
    legend_w = std::max(legend_w, measure.width(s.label, kCaptionSize, false));

  LineLayout L;
  L.PW = o.width;
  L.PH = o.height;
  const int tick = kLineTick, swatch = kLineSwatch;
  L.left = 10 + 16 + static_cast<int>(std::ceil(ylabel_w)) + tick + 6;
  L.top = o.title.empty() ? 14 : 14 + 24;
  L.legend_x = L.left + L.PW + 18;
  L.width = L.legend_x + swatch + static_cast<int>(std::ceil(legend_w)) + 16;
  // A title wider than the plotting area starts at the figure's left margin, and the figure is widened
  // to hold it, rather than losing its ends past the edges.
  const double title_w = o.title.empty() ? 0 : measure.width(o.title, kTitleSize, true);
  L.title_x = std::max(L.left + L.PW / 2.0, 10 + title_w / 2);
  L.width = std::max(L.width, static_cast<int>(std::ceil(L.title_x + title_w / 2)) + 10);
  L.foot = footnote_lines(measure, o.footnote, L.width - L.left - 12);
  const int axis_h = tick + 4 + 12 + 8 + 14;
  const int legend_h = 8 + 20 * static_cast<int>(series.size());
  L.height = std::max(L.top + L.PH, L.top + legend_h) + axis_h + 10 + static_cast<int>(L.foot.size()) * 15;
  return L;
}

// Data (px, py) and drawing units (upx, upy) to pixels of the plotting area.
struct LineFrame {
  const Axis& ax;
  const Axis& ay;
  int left, top, PW, PH;
  double px(double v) const { return left + (ax.to_units(v) - ax.lo) / (ax.hi - ax.lo) * PW; }
  double py(double v) const { return top + PH - (ay.to_units(v) - ay.lo) / (ay.hi - ay.lo) * PH; }
  double upx(double u) const { return left + (u - ax.lo) / (ax.hi - ax.lo) * PW; }
  double upy(double u) const { return top + PH - (u - ay.lo) / (ay.hi - ay.lo) * PH; }
};

// Light grid at the ticks: reading values off log-log axes needs it.
void draw_line_grid(cairo_t* cr, const LineFrame& f, const Ticks& xt, const Ticks& yt) {
  set_colour(cr, Rgb{0.90, 0.90, 0.90});
  cairo_set_line_width(cr, 1.0);
  for (double u : xt.units) {
    const double p = std::round(f.upx(u)) + 0.5;
    cairo_move_to(cr, p, f.top);
    cairo_line_to(cr, p, f.top + f.PH);
  }
  for (double u : yt.units) {
    const double p = std::round(f.upy(u)) + 0.5;
    cairo_move_to(cr, f.left, p);
    cairo_line_to(cr, f.left + f.PW, p);
  }
  cairo_stroke(cr);
}

// Every band, drawn before any line so that every line stays visible on top of every band.
void draw_line_bands(cairo_t* cr, const LineFrame& f, const std::vector<LineSeries>& series,
                     const std::vector<Rgb>& colours) {
  for (std::size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    if (s.lower.size() == 0) continue;
    const Index n = s.x.size();
    if (n == 1) {
      cairo_move_to(cr, f.px(s.x[0]), f.py(s.lower[0]));
      cairo_line_to(cr, f.px(s.x[0]), f.py(s.upper[0]));
      set_colour(cr, colours[k], 0.35);
      cairo_set_line_width(cr, 6.0);
      cairo_stroke(cr);
      continue;
    }
    for (Index i = 0; i < n; ++i) {
      if (i == 0)
        cairo_move_to(cr, f.px(s.x[i]), f.py(s.upper[i]));
      else
        cairo_line_to(cr, f.px(s.x[i]), f.py(s.upper[i]));
    }
    for (Index i = n - 1; i >= 0; --i) cairo_line_to(cr, f.px(s.x[i]), f.py(s.lower[i]));
    cairo_close_path(cr);
    set_colour(cr, colours[k], 0.2);
    cairo_fill(cr);
  }
}

void draw_line_curves(cairo_t* cr, const LineFrame& f, const std::vector<LineSeries>& series,
                      const std::vector<Rgb>& colours) {
  for (std::size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    const Index n = s.x.size();
    set_colour(cr, colours[k]);
    if (s.markers_only) {
      for (Index i = 0; i < n; ++i) {
        cairo_new_sub_path(cr);
        cairo_arc(cr, f.px(s.x[i]), f.py(s.y[i]), kLineMarker, 0, 2 * M_PI);
      }
      cairo_fill(cr);
      continue;
    }
    for (Index i = 0; i < n; ++i) {
      if (i == 0)
        cairo_move_to(cr, f.px(s.x[i]), f.py(s.y[i]));
      else
        cairo_line_to(cr, f.px(s.x[i]), f.py(s.y[i]));
    }
    cairo_set_line_width(cr, 2.0);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_stroke(cr);
    // Markers show where the measurements are when there are few of them.
    if (n <= 60) {
      for (Index i = 0; i < n; ++i) {
        cairo_new_sub_path(cr);
        cairo_arc(cr, f.px(s.x[i]), f.py(s.y[i]), 3.0, 0, 2 * M_PI);
      }
      cairo_fill(cr);
    }
  }
}

// Axes: left and bottom spines with ticks and labels, the axis labels and the title.
void draw_line_axes(cairo_t* cr, Text& text, const LineFrame& f, const Ticks& xt, const Ticks& yt,
                    const LinePlotOptions& o, double title_x) {
  const int left = f.left, top = f.top, PW = f.PW, PH = f.PH, tick = kLineTick;
  set_colour(cr, kInk);
  cairo_set_line_width(cr, 1.0);
  cairo_move_to(cr, left - 0.5, top);
  cairo_line_to(cr, left - 0.5, top + PH + 0.5);
  cairo_line_to(cr, left + PW, top + PH + 0.5);
  for (std::size_t i = 0; i < xt.units.size(); ++i) {
    const double p = std::round(f.upx(xt.units[i])) + 0.5;
    cairo_move_to(cr, p, top + PH + 0.5);
    cairo_line_to(cr, p, top + PH + 0.5 + tick);
    text.draw(xt.labels[i], p, top + PH + tick + 4 + 9, kTickSize, false, Align::Centre, kInk);
  }
  for (std::size_t i = 0; i < yt.units.size(); ++i) {
    const double p = std::round(f.upy(yt.units[i])) + 0.5;
    cairo_move_to(cr, left - 0.5, p);
    cairo_line_to(cr, left - 0.5 - tick, p);
    text.draw(yt.labels[i], left - tick - 4, p, kTickSize, false, Align::Right, kInk, true);
  }
  cairo_stroke(cr);
  text.draw(o.x_label, left + PW / 2.0, top + PH + tick + 4 + 12 + 16, kTickSize, false, Align::Centre, kInk);
  text.draw(o.y_label, 10 + 7, top + PH / 2.0, kTickSize, false, Align::Centre, kInk, true, -M_PI / 2);
  if (!o.title.empty()) text.draw(o.title, title_x, 14 + 12, kTitleSize, true, Align::Centre, kInk);
}

// Legend, beside the plot: a line (over a band swatch when the series has a band) and the label.
void draw_line_legend(cairo_t* cr, Text& text, const std::vector<LineSeries>& series,
                      const std::vector<Rgb>& colours, int legend_x, int top) {
  const int swatch = kLineSwatch;
  double ly = top + 4;
  for (std::size_t k = 0; k < series.size(); ++k) {
    if (series[k].markers_only) {
      cairo_arc(cr, legend_x + (swatch - 8) / 2.0, ly + 8, kLineMarker, 0, 2 * M_PI);
      set_colour(cr, colours[k]);
      cairo_fill(cr);
      text.draw(series[k].label, legend_x + swatch, ly + 8, kCaptionSize, false, Align::Left, kInk, true);
      ly += 20;
      continue;
    }
    if (series[k].lower.size() > 0) {
      cairo_rectangle(cr, legend_x, ly + 2, swatch - 8, 12);
      set_colour(cr, colours[k], 0.2);
      cairo_fill(cr);
    }
    cairo_move_to(cr, legend_x, ly + 8);
    cairo_line_to(cr, legend_x + swatch - 8, ly + 8);
    set_colour(cr, colours[k]);
    cairo_set_line_width(cr, 2.0);
    cairo_stroke(cr);
    text.draw(series[k].label, legend_x + swatch, ly + 8, kCaptionSize, false, Align::Left, kInk, true);
    ly += 20;
  }
}

}  // namespace

LinePlotResult write_line_plot(const fs::path& file, const std::vector<LineSeries>& series,
                               const LinePlotOptions& o) {
  check_series(series, o);

  const LineRange r = line_data_range(series);
  const Axis ax = make_axis(r.xlo, r.xhi, o.log_x), ay = make_axis(r.ylo, r.yhi, o.log_y);
  const Ticks xt = make_ticks(ax, 6), yt = make_ticks(ay, 5);

  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  Text measure(scratch.get());
  const LineLayout L = line_layout(series, yt, o, measure);

  LinePlotResult result;
  result.width = L.width;
  result.height = L.height;
  result.plot_left = L.left;
  result.plot_top = L.top;
  auto from_units = [](const Axis& a, double u) { return a.log ? std::pow(10.0, u) : u; };
  result.x_min = from_units(ax, ax.lo);
  result.x_max = from_units(ax, ax.hi);
  result.y_min = from_units(ay, ay.lo);
  result.y_max = from_units(ay, ay.hi);

  Canvas canvas(L.width, L.height);
  cairo_t* cr = canvas.cr();
  Text text(canvas.surface());
  const LineFrame frame{ax, ay, L.left, L.top, L.PW, L.PH};
  draw_line_grid(cr, frame, xt, yt);

  std::vector<Rgb> colours;
  for (std::size_t k = 0; k < series.size(); ++k)
    colours.push_back(rgb_hex(kCurveColours[k % std::size(kCurveColours)]));

  cairo_save(cr);
  cairo_rectangle(cr, L.left, L.top, L.PW, L.PH);
  cairo_clip(cr);
  draw_line_bands(cr, frame, series, colours);
  draw_line_curves(cr, frame, series, colours);
  cairo_restore(cr);

  draw_line_axes(cr, text, frame, xt, yt, o, L.title_x);
  draw_line_legend(cr, text, series, colours, L.legend_x, L.top);
  for (std::size_t l = 0; l < L.foot.size(); ++l)
    text.draw(L.foot[l], L.left, L.height - 10 - 15.0 * (L.foot.size() - 1 - l) - 4, kFootSize, false,
              Align::Left, kGrey);

  font_notes(text, measure, result.notes, "line plot");
  canvas.write(file);
  return result;
}

LineSeries read_line_series(const fs::path& csv, const std::string& label) {
  // The header decides whether there is a band; read_csv then checks every selected cell.
  std::ifstream in(csv);
  std::string header;
  if (!in || !std::getline(in, header)) throw DataError(csv.string() + ": cannot read the header line");
  auto has_column = [&](const std::string& name) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t end = header.find(',', start);
      std::string field = header.substr(start, end == std::string::npos ? std::string::npos : end - start);
      while (!field.empty() && (field.back() == '\r' || field.back() == ' ')) field.pop_back();
      while (!field.empty() && field.front() == ' ') field.erase(field.begin());
      if (field.size() >= 2 && field.front() == '"' && field.back() == '"')
        field = field.substr(1, field.size() - 2);
      if (field == name) return true;
      if (end == std::string::npos) return false;
      start = end + 1;
    }
  };
  const bool lower = has_column("lower"), upper = has_column("upper");
  if (lower != upper)
    throw DataError(csv.string() + ": has a '" + std::string(lower ? "lower" : "upper") +
                    "' column but no '" + (lower ? "upper" : "lower") +
                    "' (expected both band columns or neither)");
  std::vector<std::string> columns = {"x", "y"};
  if (lower) columns.insert(columns.end(), {"lower", "upper"});
  const TableData t = read_csv(csv, columns);
  LineSeries s;
  s.label = label;
  s.x = t.values.col(0);
  s.y = t.values.col(1);
  if (lower) {
    s.lower = t.values.col(2);
    s.upper = t.values.col(3);
  }
  return s;
}

}  // namespace kef
