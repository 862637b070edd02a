// Density figures (DKEF Figs. 1 and 2) drawn with cairo.
#include "kef/density_plot.hpp"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string_view>

#include "kef/error.hpp"
#include "kef/parallel.hpp"
#include "plot_canvas.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

using namespace detail;  // the drawing toolkit of plot_canvas.hpp

// ---------------------------------------------------------------------------------------------
// Numbers and labels

// matplotlib's viridis (CC0) sampled at t = 0, 0.1, ..., 1. Linear interpolation between these
// stays within a few 8-bit steps of the full 256-entry table, because viridis is smooth in sRGB.
constexpr unsigned kViridis[11] = {0x440154, 0x482475, 0x414487, 0x355f8d, 0x2a788e, 0x21918c,
                                   0x22a884, 0x44bf70, 0x7ad151, 0xbddf26, 0xfde725};

struct MetricLabel {
  std::string_view metric, label, meaning;
  bool truth;
};

constexpr MetricLabel kMetricLabels[] = {
    {"score_matching_loss", "SM", "held-out score matching loss (lower is better)", false},
    {"score_matching_loss_truth", "SM", "held-out score matching loss (lower is better)", true},
    {"fisher_divergence", "FD", "Fisher divergence from the truth (lower is better)", false},
    {"log_likelihood", "LL", "held-out log-likelihood (higher is better)", false},
    {"true_log_likelihood", "LL", "held-out log-likelihood (higher is better)", true},
    {"mmd2_unbiased", "MMD\xc2\xb2", "squared MMD to the test set", false},
    {"mmd_pvalue_permutation", "MMD p", "p-value of the MMD test", false},
    {"mmd2", "MMD\xc2\xb2", "squared MMD to the test set", false},  // the deprecated evaluator type `mmd`
    {"mmd_pvalue", "MMD p", "p-value of the MMD test", false},
    {"fssd2", "FSSD\xc2\xb2", "squared FSSD", false},
    {"fssd_pvalue", "FSSD p", "p-value of the FSSD test", false},
    {"ksd2", "KSD\xc2\xb2", "squared KSD", false},
    {"ksd_pvalue", "KSD p", "p-value of the KSD test", false},
    {"relative_fssd_statistic", "rel. FSSD", "relative FSSD statistic", false},
    {"relative_fssd_pvalue", "rel. FSSD p", "p-value of the relative FSSD test", false},
};

std::pair<std::string, std::string> split_prefix(const std::string& metric) {
  auto dot = metric.rfind('.');
  if (dot == std::string::npos) return {"", metric};
  return {metric.substr(0, dot + 1), metric.substr(dot + 1)};
}

const MetricLabel* find_label(std::string_view base) {
  for (const auto& l : kMetricLabels)
    if (l.metric == base) return &l;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Evaluating models on grids

void check_extent_1d(double lo, double hi, const char* axis) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi))
    throw ConfigError(std::string("plot extent: ") + axis + " range [" + format_short(lo) + ", " +
                      format_short(hi) + "] must be finite with min < max");
}

// log p~ at n points, in fixed batches (never dependent on the thread count); row i of the batch
// matrix is filled by point(i, row).
template <class PointFn>
Vector evaluate_in_batches(const Model& model, const std::string& name, Index n, Index dim, int threads,
                           PointFn point) {
  constexpr Index kBatch = 2048;
  const Index batches = (n + kBatch - 1) / kBatch;
  Vector values(n);
  parallel_for(batches, threads, [&](Index b) {
    const Index begin = b * kBatch, count = std::min(kBatch, n - begin);
    Matrix X(count, dim);
    for (Index i = 0; i < count; ++i) point(begin + i, X.row(i));
    Vector v = model.log_unnormalized(X);
    if (v.size() != count)
      throw Error("model " + name + ": log_unnormalized returned " + std::to_string(v.size()) + " values for " +
                  std::to_string(count) + " points");
    values.segment(begin, count) = v;
  });
  return values;
}

std::string point_text(const Eigen::Ref<const Vector>& x) {
  std::string s = "(";
  for (Index d = 0; d < x.size(); ++d) s += (d ? ", " : "") + format_short(x[d]);
  return s + ")";
}

// The maximum of finite values; NaN, +inf or no finite value at all are errors naming the point.
template <class PointOf>
double checked_max(const Vector& values, const std::string& name, PointOf point_of) {
  double max = -std::numeric_limits<double>::infinity();
  for (Index i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isnan(v) || v == std::numeric_limits<double>::infinity())
      throw NumericalError("model " + name + ": log density is " + (std::isnan(v) ? "NaN" : "+inf") + " at " +
                           point_text(point_of(i)) + " on the plotting grid");
    max = std::max(max, v);
  }
  if (!std::isfinite(max))
    throw NumericalError("model " + name +
                         ": log density is -inf everywhere on the plotting grid (no support in the plotted region)");
  return max;
}



// The footnote is a list of items joined by " · ", wrapped between items.

constexpr double kCaptionLine = 16;

void check_options(const DensityPlotOptions& o) {
  if (o.grid < 2 || o.grid > 4000)
    throw ConfigError("plot grid: " + std::to_string(o.grid) + " cells per side (expected 2 to 4000)");
  if (o.max_points < 0) throw ConfigError("plot max points: must not be negative");
  if (!std::isfinite(o.floor) || o.floor >= 0)
    throw ConfigError("plot floor: " + format_short(o.floor) + " (expected a finite negative number)");
  if (o.min_panel_pixels < 16 || o.min_panel_pixels > 4000)
    throw ConfigError("plot panel size: " + std::to_string(o.min_panel_pixels) + " pixels (expected 16 to 4000)");
}

std::vector<Index> overlay_rows(Index n, Index max_points) {
  const Index k = std::min(n, max_points);
  std::vector<Index> rows(k);
  for (Index i = 0; i < k; ++i) rows[i] = static_cast<Index>((static_cast<long double>(i) * n) / k);
  return rows;
}

struct Panel2d {
  std::string title;
  std::vector<std::string> caption;
  LogDensityGrid grid;
};

// The title of axis `i` (0: x, 1: y): the caller's, else "x" or "y".
std::string axis_label(const DensityPlotOptions& o, std::size_t i) {
  if (i < o.axis_labels.size() && !o.axis_labels[i].empty()) return o.axis_labels[i];
  return i == 0 ? "x" : "y";
}

// Tick length, gap between panels, and the colour bar's distance from the last panel and width, in
// pixels.
constexpr int kTick2d = 4, kPanelGap = 22, kBarGap = 16, kBarWidth = 14;

// Where the 2-D figure's parts go: panels of S x S pixels (k pixels a cell) from (left, top), their
// wrapped captions, the ticks of both axes and of the colour bar, the footnote and the whole size.
struct Layout2d {
  int cells = 0, k = 0, S = 0;
  std::vector<std::vector<std::string>> captions;
  double xstep = 1, ystep = 1, cstep = 1;
  std::vector<double> xticks, yticks, cticks;
  double clabel_w = 0;
  int left = 0, title_h = 0, top = 0, P = 0, width = 0, ticks_h = 0, height = 0;
  std::vector<std::string> foot;
};

Layout2d layout_2d(const std::vector<Panel2d>& panels, const PlotExtent& e, const DensityPlotOptions& o,
                   const Text& measure) {
  Layout2d L;
  L.cells = static_cast<int>(o.grid);
  L.k = std::max(1, (o.min_panel_pixels + L.cells - 1) / L.cells);
  L.S = L.cells * L.k;
  std::size_t caption_lines = 0;
  for (const auto& p : panels) {
    L.captions.push_back(measure.wrap(p.caption, "   ", kCaptionSize, L.S, 4));
    caption_lines = std::max(caption_lines, L.captions.back().size());
  }
  L.xticks = nice_ticks(e.xmin, e.xmax, 5, &L.xstep);
  L.yticks = nice_ticks(e.ymin, e.ymax, 5, &L.ystep);
  // A floor that is a multiple of 3 gets the four ticks floor, 2/3 floor, floor/3, 0.
  if (o.floor == std::round(o.floor) && static_cast<long>(o.floor) % 3 == 0) {
    L.cstep = -o.floor / 3;
    for (int i = 0; i <= 3; ++i) L.cticks.push_back(o.floor + i * L.cstep);
  } else {
    L.cticks = nice_ticks(o.floor, 0, 4, &L.cstep);
  }
  double ylabel_w = 0;
  for (double t : L.yticks) ylabel_w = std::max(ylabel_w, measure.width(tick_label(t, L.ystep), kTickSize, false));
  for (double t : L.cticks)
    L.clabel_w = std::max(L.clabel_w, measure.width(tick_label(t, L.cstep), kTickSize, false));

  const int tick = kTick2d;
  // Room for the axis titles: the y title, turned, left of the tick labels; the x title under them.
  const int title_room = measure.ok() ? 18 : 0;
  L.left = 12 + title_room + static_cast<int>(std::ceil(ylabel_w)) + tick + 4;
  L.title_h = measure.ok() ? 22 : 6;
  L.top = 10 + L.title_h + static_cast<int>(caption_lines * (measure.ok() ? kCaptionLine : 0)) + 6;
  const int right = kBarGap + kBarWidth + tick + 4 + static_cast<int>(std::ceil(L.clabel_w)) + 8 + 18 + 8;
  L.P = static_cast<int>(panels.size());
  L.width = L.left + L.P * L.S + (L.P - 1) * kPanelGap + right;
  L.foot = footnote_lines(measure, o.footnote, L.width - L.left - 12);
  L.ticks_h = measure.ok() ? tick + 4 + 12 + title_room : tick;
  L.height = L.top + L.S + L.ticks_h + 10 + static_cast<int>(L.foot.size()) * 15 + (L.foot.empty() ? 0 : 4);
  return L;
}

// A point of the extent as pixels of the S x S panel whose top-left corner is (x0, y0).
std::pair<double, double> panel_px(const PlotExtent& e, int S, double x, double y, int x0, int y0) {
  return std::pair<double, double>{x0 + (x - e.xmin) / (e.xmax - e.xmin) * S,
                                   y0 + (e.ymax - y) / (e.ymax - e.ymin) * S};
}

// The grid as an image, one pixel per cell (top row = ymax), scaled by k with nearest-neighbour
// sampling so that every cell is a k x k block of exactly its colour.
void draw_grid_image(cairo_t* cr, const fs::path& file, const Matrix& V, const Layout2d& L, int x0, int y0,
                     double floor) {
  const int cells = L.cells, k = L.k;
  SurfacePtr image(cairo_image_surface_create(CAIRO_FORMAT_RGB24, cells, cells));
  if (cairo_surface_status(image.get()) != CAIRO_STATUS_SUCCESS)
    throw Error(file.string() + ": cannot allocate the image: " + cairo_status_to_string(cairo_surface_status(image.get())));
  cairo_surface_flush(image.get());
  unsigned char* data = cairo_image_surface_get_data(image.get());
  const int stride = cairo_image_surface_get_stride(image.get());
  for (int r = 0; r < cells; ++r) {
    auto* row = reinterpret_cast<std::uint32_t*>(data + static_cast<std::ptrdiff_t>(cells - 1 - r) * stride);
    for (int c = 0; c < cells; ++c) {
      const auto rgb = viridis((V(r, c) - floor) / -floor);
      row[c] = (std::uint32_t{rgb[0]} << 16) | (std::uint32_t{rgb[1]} << 8) | std::uint32_t{rgb[2]};
    }
  }
  cairo_surface_mark_dirty(image.get());
  cairo_save(cr);
  cairo_translate(cr, x0, y0);
  cairo_scale(cr, k, k);
  cairo_set_source_surface(cr, image.get(), 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, cells, cells);
  cairo_fill(cr);
  cairo_restore(cr);
}

// The chosen training rows as small light dots, clipped to the panel.
void draw_overlay(cairo_t* cr, const Matrix& train, const std::vector<Index>& rows, const PlotExtent& e, int S,
                  int x0, int y0) {
  cairo_save(cr);
  cairo_rectangle(cr, x0, y0, S, S);
  cairo_clip(cr);
  const double radius = std::clamp(S / 260.0, 1.0, 2.5);
  for (Index i : rows) {
    auto [px, py] = panel_px(e, S, train(i, 0), train(i, 1), x0, y0);
    cairo_new_sub_path(cr);
    cairo_arc(cr, px, py, radius, 0, 2 * M_PI);
  }
  set_colour(cr, {1, 1, 1}, 0.55);
  cairo_fill_preserve(cr);
  set_colour(cr, {0, 0, 0}, 0.35);
  cairo_set_line_width(cr, 0.5);
  cairo_stroke(cr);
  cairo_restore(cr);
}

// Panel p: title and caption, the grid's image, the overlay, a frame, the x ticks (and the y ticks
// on the first panel only, which the panels share).
void draw_panel_2d(cairo_t* cr, Text& text, const fs::path& file, const Panel2d& panel, int p, const Layout2d& L,
                   const Matrix& train, const std::vector<Index>& rows, const PlotExtent& e,
                   const DensityPlotOptions& o) {
  const int S = L.S, tick = kTick2d;
  const int x0 = L.left + p * (S + kPanelGap), y0 = L.top;
  const double cx = x0 + S / 2.0;
  text.draw(panel.title, cx, 10 + 15, kTitleSize, true, Align::Centre, kInk);
  for (std::size_t l = 0; l < L.captions[p].size(); ++l)
    text.draw(L.captions[p][l], cx, 10 + L.title_h + kCaptionLine * l + 12, kCaptionSize, false, Align::Centre,
              kGrey);

  draw_grid_image(cr, file, panel.grid.values, L, x0, y0, o.floor);
  if (!rows.empty()) draw_overlay(cr, train, rows, e, S, x0, y0);

  cairo_set_line_width(cr, 1.0);
  set_colour(cr, kInk);
  cairo_rectangle(cr, x0 - 0.5, y0 - 0.5, S + 1, S + 1);
  cairo_stroke(cr);

  draw_x_ticks(cr, text, L.xticks, L.xstep, [&](double t) { return panel_px(e, S, t, 0, x0, y0).first; }, y0 + S,
               tick);
  if (p == 0)
    draw_y_ticks(cr, text, L.yticks, L.ystep, [&](double t) { return panel_px(e, S, 0, t, x0, y0).second; }, x0,
                 tick);
  cairo_stroke(cr);
}

// Colour bar right of the panels: floor at the bottom, 0 at the top, with its ticks and label.
void draw_colour_bar(cairo_t* cr, Text& text, const Layout2d& L, double floor) {
  const int S = L.S, tick = kTick2d, bar_w = kBarWidth;
  const int bx = L.left + L.P * S + (L.P - 1) * kPanelGap + kBarGap, by = L.top;
  for (int i = 0; i < S; ++i) {
    const auto rgb = viridis(1.0 - (i + 0.5) / S);
    cairo_set_source_rgb(cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
    cairo_rectangle(cr, bx, by + i, bar_w, 1);
    cairo_fill(cr);
  }
  set_colour(cr, kInk);
  cairo_set_line_width(cr, 1.0);
  cairo_rectangle(cr, bx - 0.5, by - 0.5, bar_w + 1, S + 1);
  for (double t : L.cticks) {
    const double py = std::round(by + (0 - t) / (0 - floor) * S) + 0.5;
    cairo_move_to(cr, bx + bar_w + 0.5, py);
    cairo_line_to(cr, bx + bar_w + 0.5 + tick, py);
    text.draw(tick_label(t, L.cstep), bx + bar_w + tick + 4, py, kTickSize, false, Align::Left, kInk, true);
  }
  cairo_stroke(cr);
  const double lx = bx + bar_w + tick + 4 + std::ceil(L.clabel_w) + 8 + 9;
  text.draw("log p\xcc\x83(x) \xe2\x88\x92 max", lx, by + S / 2.0, kTickSize, false, Align::Centre, kInk, true,
            -M_PI / 2);
}

DensityPlotResult render_2d(const fs::path& file, const std::vector<Panel2d>& panels, const Matrix& train,
                            const PlotExtent& e, const DensityPlotOptions& o) {
  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  Text measure(scratch.get());
  const Layout2d L = layout_2d(panels, e, o, measure);

  DensityPlotResult result;
  result.extent = e;
  result.cell_pixels = L.k;
  result.width = L.width;
  result.height = L.height;
  Canvas canvas(L.width, L.height);
  cairo_t* cr = canvas.cr();
  Text text(canvas.surface());

  // Training points overlaid: evenly spaced rows, so the subsample needs no random stream.
  const std::vector<Index> rows = o.show_points ? overlay_rows(train.rows(), o.max_points) : std::vector<Index>{};
  for (int p = 0; p < L.P; ++p) {
    result.panels.push_back({L.left + p * (L.S + kPanelGap), L.top, L.S});
    draw_panel_2d(cr, text, file, panels[p], p, L, train, rows, e, o);
  }
  draw_colour_bar(cr, text, L, o.floor);
  // Axis titles: x under every panel, y once, left of the first.
  for (int p = 0; p < L.P; ++p)
    text.draw(axis_label(o, 0), L.left + p * (L.S + kPanelGap) + L.S / 2.0, L.top + L.S + kTick2d + 4 + 12 + 14,
              kTickSize, false, Align::Centre, kInk);
  text.draw(axis_label(o, 1), 10 + 7, L.top + L.S / 2.0, kTickSize, false, Align::Centre, kInk, true, -M_PI / 2);

  for (std::size_t l = 0; l < L.foot.size(); ++l)
    text.draw(L.foot[l], L.left, L.top + L.S + L.ticks_h + 10 + 11 + 15.0 * l, kFootSize, false, Align::Left,
              kGrey);

  font_notes(text, measure, result.notes);
  canvas.write(file);
  return result;
}

struct Curve {
  std::string name;
  std::vector<std::string> caption;
  DensityCurve curve;
  bool truth = false;
};

// Histogram of the training data: Rice's rule for the bin count, clamped to [10, 80]; bar heights
// are densities relative to all training rows (rows outside the extent count but are not drawn).
struct Histogram1d {
  int bins = 0;
  double bin_w = 0;
  std::vector<double> hist;
};

Histogram1d histogram_1d(const Matrix& train, const PlotExtent& e, bool show_points) {
  Histogram1d H;
  const Index n = train.rows();
  H.bins = std::clamp(static_cast<int>(std::ceil(2.0 * std::cbrt(static_cast<double>(n)))), 10, 80);
  H.bin_w = (e.xmax - e.xmin) / H.bins;
  H.hist.assign(H.bins, 0.0);
  if (show_points && n > 0) {
    for (Index i = 0; i < n; ++i) {
      const double x = train(i, 0);
      if (x < e.xmin || x > e.xmax) continue;
      const int b = std::min(H.bins - 1, static_cast<int>((x - e.xmin) / H.bin_w));
      H.hist[b] += 1.0;
    }
    for (double& h : H.hist) h /= static_cast<double>(n) * H.bin_w;
  }
  return H;
}

// Tick length and legend swatch width of the 1-D figure, in pixels.
constexpr int kTick1d = 4, kSwatch1d = 26;

// Where the 1-D figure's parts go: the plotting area (left, top, PW x PH), the ticks, the legend
// (per curve a name line and its wrapped caption lines) beside it, the footnote and the whole size.
struct Layout1d {
  double xstep = 1, ystep = 1;
  std::vector<double> xticks, yticks;
  int PW = 0, PH = 0, left = 0, top = 0, legend_x = 0, width = 0, height = 0;
  std::vector<std::vector<std::string>> captions;
  std::vector<std::string> foot;
};

Layout1d layout_1d(const std::vector<Curve>& curves, const PlotExtent& e, double ymax, const DensityPlotOptions& o,
                   const Text& measure) {
  Layout1d L;
  L.xticks = nice_ticks(e.xmin, e.xmax, 6, &L.xstep);
  L.yticks = nice_ticks(0, ymax, 5, &L.ystep);
  double ylabel_w = 0;
  for (double t : L.yticks) ylabel_w = std::max(ylabel_w, measure.width(tick_label(t, L.ystep), kTickSize, false));

  L.PW = std::max(480, static_cast<int>(1.6 * o.min_panel_pixels));
  L.PH = std::max(300, o.min_panel_pixels);
  const int tick = kTick1d;
  L.left = 10 + 16 + static_cast<int>(std::ceil(ylabel_w)) + tick + 6;
  L.top = 14;
  const double legend_max_w = 230;
  // The legend is as wide as its widest line.
  double legend_text_w = measure.width("training data", kCaptionSize, false);
  for (const auto& c : curves) {
    L.captions.push_back(measure.wrap(c.caption, "   ", kCaptionSize, legend_max_w, 4));
    legend_text_w = std::max(legend_text_w, measure.width(c.name, kCaptionSize + 1, true));
    for (const auto& line : L.captions.back())
      legend_text_w = std::max(legend_text_w, measure.width(line, kCaptionSize, false));
  }
  legend_text_w = std::ceil(legend_text_w);
  L.legend_x = L.left + L.PW + 20;
  L.width = L.legend_x + kSwatch1d + static_cast<int>(legend_text_w) + 24;
  double legend_h = 0;
  for (const auto& cap : L.captions) legend_h += 20 + kCaptionLine * cap.size() + 6;
  if (o.show_points) legend_h += 22;
  L.foot = footnote_lines(measure, o.footnote, L.width - L.left - 12);
  const int axis_h = tick + 4 + 12 + 8 + 14;
  L.height =
      std::max(L.top + L.PH, L.top + static_cast<int>(legend_h)) + axis_h + 10 + static_cast<int>(L.foot.size()) * 15;
  return L;
}

// Data to pixels of the 1-D plotting area.
struct Frame1d {
  const PlotExtent& e;
  int x0, y0, PW, PH;
  double ymax;
  double px(double x) const { return x0 + (x - e.xmin) / (e.xmax - e.xmin) * PW; }
  double py(double y) const { return y0 + PH - y / ymax * PH; }
};

const Rgb kHistColour = {0.80, 0.80, 0.80};

void draw_histogram_1d(cairo_t* cr, const Frame1d& f, const Histogram1d& H) {
  for (int b = 0; b < H.bins; ++b) {
    if (H.hist[b] <= 0) continue;
    const double a = f.px(f.e.xmin + b * H.bin_w), z = f.px(f.e.xmin + (b + 1) * H.bin_w);
    cairo_rectangle(cr, a, f.py(H.hist[b]), z - a, f.py(0) - f.py(H.hist[b]));
  }
  set_colour(cr, kHistColour);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_set_line_width(cr, 0.8);
  cairo_stroke(cr);
}

// The curves, the truth dashed in ink and the others in the curve colours; returns each one's colour.
std::vector<Rgb> draw_curves_1d(cairo_t* cr, const Frame1d& f, const std::vector<Curve>& curves) {
  std::size_t colour_index = 0;
  std::vector<Rgb> colours;
  for (const auto& c : curves) {
    const Rgb colour = c.truth ? kInk : rgb_hex(kCurveColours[colour_index++ % std::size(kCurveColours)]);
    colours.push_back(colour);
    const Vector& x = c.curve.x;
    const Vector& d = c.curve.density;
    for (Index i = 0; i < x.size(); ++i) {
      if (i == 0) cairo_move_to(cr, f.px(x[i]), f.py(d[i]));
      else cairo_line_to(cr, f.px(x[i]), f.py(d[i]));
    }
    set_colour(cr, colour);
    cairo_set_line_width(cr, c.truth ? 1.6 : 2.0);
    const double dash[] = {5.0, 3.0};
    if (c.truth) cairo_set_dash(cr, dash, 2, 0);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  return colours;
}

// Axes: left and bottom spines with ticks, and their labels.
void draw_axes_1d(cairo_t* cr, Text& text, const Frame1d& f, const Layout1d& L, const DensityPlotOptions& o) {
  const int x0 = f.x0, y0 = f.y0, PW = f.PW, PH = f.PH, tick = kTick1d;
  set_colour(cr, kInk);
  cairo_set_line_width(cr, 1.0);
  cairo_move_to(cr, x0 - 0.5, y0);
  cairo_line_to(cr, x0 - 0.5, y0 + PH + 0.5);
  cairo_line_to(cr, x0 + PW, y0 + PH + 0.5);
  draw_x_ticks(cr, text, L.xticks, L.xstep, [&](double x) { return f.px(x); }, y0 + PH, tick);
  draw_y_ticks(cr, text, L.yticks, L.ystep, [&](double y) { return f.py(y); }, x0, tick);
  cairo_stroke(cr);
  text.draw(axis_label(o, 0), x0 + PW / 2.0, y0 + PH + tick + 4 + 12 + 16, kTickSize, false, Align::Centre, kInk);
  text.draw("density", 10 + 7, y0 + PH / 2.0, kTickSize, false, Align::Centre, kInk, true, -M_PI / 2);
}

// Legend: per curve its line, name and caption lines; then the histogram's swatch.
void draw_legend_1d(cairo_t* cr, Text& text, const std::vector<Curve>& curves, const std::vector<Rgb>& colours,
                    const Layout1d& L, bool show_points) {
  const int legend_x = L.legend_x, swatch = kSwatch1d;
  double ly = L.top + 4;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    cairo_move_to(cr, legend_x, ly + 8);
    cairo_line_to(cr, legend_x + swatch - 6, ly + 8);
    set_colour(cr, colours[i]);
    cairo_set_line_width(cr, curves[i].truth ? 1.6 : 2.0);
    const double dash[] = {5.0, 3.0};
    if (curves[i].truth) cairo_set_dash(cr, dash, 2, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
    text.draw(curves[i].name, legend_x + swatch, ly + 8, kCaptionSize + 1, true, Align::Left, kInk, true);
    ly += 20;
    for (const auto& line : L.captions[i]) {
      text.draw(line, legend_x + swatch, ly + 8, kCaptionSize, false, Align::Left, kGrey, true);
      ly += kCaptionLine;
    }
    ly += 6;
  }
  if (show_points) {
    cairo_rectangle(cr, legend_x, ly + 2, swatch - 6, 12);
    set_colour(cr, kHistColour);
    cairo_fill(cr);
    text.draw("training data", legend_x + swatch, ly + 8, kCaptionSize, false, Align::Left, kInk, true);
  }
}

DensityPlotResult render_1d(const fs::path& file, const std::vector<Curve>& curves, const Matrix& train,
                            const PlotExtent& e, const DensityPlotOptions& o) {
  DensityPlotResult result;
  result.extent = e;

  const Histogram1d H = histogram_1d(train, e, o.show_points);
  double ymax = 0;
  for (double h : H.hist) ymax = std::max(ymax, h);
  for (const auto& c : curves) ymax = std::max(ymax, c.curve.density.maxCoeff());
  ymax *= 1.08;

  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  Text measure(scratch.get());
  const Layout1d L = layout_1d(curves, e, ymax, o, measure);
  result.width = L.width;
  result.height = L.height;
  Canvas canvas(L.width, L.height);
  cairo_t* cr = canvas.cr();
  Text text(canvas.surface());
  const Frame1d f{e, L.left, L.top, L.PW, L.PH, ymax};

  cairo_save(cr);
  cairo_rectangle(cr, f.x0, f.y0, f.PW, f.PH);
  cairo_clip(cr);
  draw_histogram_1d(cr, f, H);
  const std::vector<Rgb> colours = draw_curves_1d(cr, f, curves);
  cairo_restore(cr);

  draw_axes_1d(cr, text, f, L, o);
  draw_legend_1d(cr, text, curves, colours, L, o.show_points);
  for (std::size_t l = 0; l < L.foot.size(); ++l)
    text.draw(L.foot[l], L.left, L.height - 10 - 15.0 * (L.foot.size() - 1 - l) - 4, kFootSize, false, Align::Left,
              kGrey);

  font_notes(text, measure, result.notes);
  canvas.write(file);
  return result;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::array<std::uint8_t, 3> viridis(double t) {
  if (!(t > 0)) t = 0;  // also NaN: callers clip first, this only guards the table index
  if (t > 1) t = 1;
  const double s = t * 10.0;
  const int i = std::min(9, static_cast<int>(s));
  const double w = s - i;
  std::array<std::uint8_t, 3> out{};
  for (int ch = 0; ch < 3; ++ch) {
    const int shift = 16 - 8 * ch;
    const double a = (kViridis[i] >> shift) & 0xff, b = (kViridis[i + 1] >> shift) & 0xff;
    out[ch] = static_cast<std::uint8_t>(std::lround(a + w * (b - a)));
  }
  return out;
}

std::string format_short(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "\xe2\x88\x92inf";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  char buf[64];
  if (a >= 1e-3 && a < 1e3) {
    std::snprintf(buf, sizeof buf, "%#.3g", v);
    std::string s = buf;
    if (!s.empty() && s.back() == '.') s.pop_back();
    return replace_minus(s);
  }
  if (a >= 1e3 && a < 1e4) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return replace_minus(buf);
  }
  std::snprintf(buf, sizeof buf, "%.2e", v);  // d.dde±XX
  std::string s = buf;
  const auto epos = s.find('e');
  std::string mantissa = s.substr(0, epos);
  int exponent = std::atoi(s.c_str() + epos + 1);
  return replace_minus(mantissa + "e" + std::to_string(exponent));
}

std::vector<std::string> metrics_caption(const std::vector<std::pair<std::string, double>>& metrics, bool truth) {
  std::vector<std::string> items;
  for (const auto& [metric, value] : metrics) {
    const auto [prefix, base] = split_prefix(metric);
    // Only the headline measures of fit: an evaluator's diagnostics (standard errors, bandwidths,
    // sample counts, quadrature errors, ...) and unknown metrics stay in results.json, out of the title.
    const MetricLabel* l = find_label(base);
    if (!l || truth != l->truth) continue;
    items.push_back(prefix + std::string(l->label) + " " + format_short(value));
  }
  return items;
}

std::string metrics_legend(const std::vector<std::pair<std::string, double>>& metrics) {
  std::vector<std::string_view> seen;
  std::string out;
  for (const auto& [metric, value] : metrics) {
    (void)value;
    const std::string base = split_prefix(metric).second;
    const MetricLabel* l = find_label(base);
    if (!l || std::find(seen.begin(), seen.end(), l->label) != seen.end()) continue;
    seen.push_back(l->label);
    if (!out.empty()) out += " \xc2\xb7 ";
    out += std::string(l->label) + ": " + std::string(l->meaning);
  }
  return out;
}

bool density_plot_supported(Index dim) { return dim == 1 || dim == 2; }

PlotExtent data_extent(const Matrix& points) {
  if (points.rows() == 0 || !density_plot_supported(points.cols()))
    throw DataError("plot extent: need at least one 1-D or 2-D point");
  PlotExtent e;
  double lo[2] = {0, 0}, hi[2] = {1, 1};
  for (Index d = 0; d < points.cols(); ++d) {
    std::vector<double> v;
    v.reserve(points.rows());
    for (Index i = 0; i < points.rows(); ++i)
      if (std::isfinite(points(i, d))) v.push_back(points(i, d));
    if (v.empty()) throw DataError("plot extent: no finite value in column " + std::to_string(d));
    std::sort(v.begin(), v.end());
    const double n1 = static_cast<double>(v.size() - 1);
    const double a = v[static_cast<std::size_t>(std::floor(0.001 * n1))];
    const double b = v[static_cast<std::size_t>(std::ceil(0.999 * n1))];
    double span = b - a;
    if (!(span > 0)) span = std::max(1.0, 0.1 * std::fabs(a));  // constant data: a unit-ish window
    const double pad = b > a ? 0.15 * span : 0.5 * span;
    lo[d] = a - pad;
    hi[d] = b + pad;
  }
  if (points.cols() == 2) {
    const double w = std::max(hi[0] - lo[0], hi[1] - lo[1]);
    for (int d = 0; d < 2; ++d) {
      const double c = 0.5 * (lo[d] + hi[d]);
      lo[d] = c - 0.5 * w;
      hi[d] = c + 0.5 * w;
    }
    e = {lo[0], hi[0], lo[1], hi[1]};
  } else {
    e = {lo[0], hi[0], 0, 1};
  }
  return e;
}

LogDensityGrid log_density_grid(const Model& model, const std::string& name, const PlotExtent& extent,
                                Index cells, double floor, const Context& context) {
  if (model.dim() != 2)
    throw Error("model " + name + ": a log-density grid needs a 2-D model (dimension " +
                std::to_string(model.dim()) + ")");
  if (cells < 2) throw ConfigError("plot grid: need at least 2 cells per side");
  check_extent_1d(extent.xmin, extent.xmax, "x");
  check_extent_1d(extent.ymin, extent.ymax, "y");
  LogDensityGrid g;
  const double dx = (extent.xmax - extent.xmin) / cells, dy = (extent.ymax - extent.ymin) / cells;
  g.x.resize(cells);
  g.y.resize(cells);
  for (Index i = 0; i < cells; ++i) {
    g.x[i] = extent.xmin + (i + 0.5) * dx;
    g.y[i] = extent.ymin + (i + 0.5) * dy;
  }
  auto point_of = [&](Index idx) {
    Vector p(2);
    p << g.x[idx % cells], g.y[idx / cells];
    return p;
  };
  const Vector raw =
      evaluate_in_batches(model, name, cells * cells, 2, context.threads(), [&](Index idx, auto row) {
        row(0) = g.x[idx % cells];
        row(1) = g.y[idx / cells];
      });
  g.max = checked_max(raw, name, point_of);
  g.values.resize(cells, cells);
  for (Index r = 0; r < cells; ++r)
    for (Index c = 0; c < cells; ++c) g.values(r, c) = std::max(raw[r * cells + c] - g.max, floor);
  return g;
}

DensityCurve normalized_density_curve(const Model& model, const std::string& name, double xmin, double xmax,
                                      Index points, const Context& context) {
  if (model.dim() != 1)
    throw Error("model " + name + ": a density curve needs a 1-D model (dimension " + std::to_string(model.dim()) +
                ")");
  if (points < 2) throw ConfigError("plot grid: need at least 2 points");
  check_extent_1d(xmin, xmax, "x");
  DensityCurve c;
  const double h = (xmax - xmin) / static_cast<double>(points - 1);
  c.x.resize(points);
  for (Index i = 0; i < points; ++i) c.x[i] = i + 1 == points ? xmax : xmin + i * h;
  const Vector raw = evaluate_in_batches(model, name, points, 1, context.threads(),
                                         [&](Index i, auto row) { row(0) = c.x[i]; });
  const double max = checked_max(raw, name, [&](Index i) { return Vector::Constant(1, c.x[i]); });
  // std::exp, not Eigen's vectorised exp, which clamps its argument and returns ~1e-308 for −inf:
  // outside a bounded support the density must be exactly 0.
  c.density.resize(points);
  for (Index i = 0; i < points; ++i) c.density[i] = std::exp(raw[i] - max);
  double z = 0;
  for (Index i = 0; i + 1 < points; ++i) z += 0.5 * (c.density[i] + c.density[i + 1]) * (c.x[i + 1] - c.x[i]);
  c.density /= z;  // z ≥ h/2 > 0: the maximum point contributes exp(0) = 1 to at least one interval
  return c;
}

DensityPlotResult write_density_plot(const fs::path& file, const std::vector<PlotModel>& models,
                                     const std::optional<PlotModel>& truth, const Matrix& train,
                                     const Matrix& test, const Context& context,
                                     const DensityPlotOptions& options) {
  check_options(options);
  const Index D = train.cols();
  if (!density_plot_supported(D))
    throw DataError("density plot: the data has dimension " + std::to_string(D) + "; plots are drawn for 1-D and 2-D data");
  if (test.rows() > 0 && test.cols() != D)
    throw DataError("density plot: test data has dimension " + std::to_string(test.cols()) + ", train " +
                    std::to_string(D));
  if (models.empty() && !truth) throw Error("density plot: nothing to plot (no model and no truth)");
  std::vector<PlotModel> all;
  if (truth) all.push_back(*truth);
  all.insert(all.end(), models.begin(), models.end());
  for (const auto& m : all) {
    if (!m.model) throw Error("density plot: panel " + m.name + " has no model");
    if (m.model->dim() != D)
      throw DataError("density plot: model " + m.name + " has dimension " + std::to_string(m.model->dim()) +
                      ", the data " + std::to_string(D));
  }
  PlotExtent e;
  if (options.extent) {
    e = *options.extent;
    check_extent_1d(e.xmin, e.xmax, "x");
    if (D == 2) check_extent_1d(e.ymin, e.ymax, "y");
  } else {
    Matrix both(train.rows() + test.rows(), D);
    both << train, test;
    e = data_extent(both);
  }
  if (D == 2) {
    std::vector<Panel2d> panels;
    for (const auto& m : all)
      panels.push_back(
          {m.name, m.caption, log_density_grid(*m.model, m.name, e, options.grid, options.floor, context)});
    return render_2d(file, panels, train, e, options);
  }
  std::vector<Curve> curves;
  for (std::size_t i = 0; i < all.size(); ++i)
    curves.push_back(
        {all[i].name, all[i].caption,
         normalized_density_curve(*all[i].model, all[i].name, e.xmin, e.xmax, options.grid, context),
         truth && i == 0});
  return render_1d(file, curves, train, e, options);
}

}  // namespace kef
