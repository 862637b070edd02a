#pragma once
// The drawing toolkit of kef's figures (internal to libkef): colours, axis ticks, cairo ownership,
// text through cairo's toy API, and a checked white canvas that writes itself as a PNG. The density
// figures (density_plot.cpp), the line plots (line_plot.cpp) and `kef montage` (png_montage.cpp) draw
// with it.
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kef/error.hpp"
#include "png_file.hpp"

namespace kef::detail {

struct Rgb {
  double r, g, b;
};

inline Rgb rgb_hex(unsigned hex) {
  return {((hex >> 16) & 0xff) / 255.0, ((hex >> 8) & 0xff) / 255.0, (hex & 0xff) / 255.0};
}

// Okabe–Ito colours (distinguishable with colour-vision deficiencies) for curves and series.
constexpr unsigned kCurveColours[] = {0x0072b2, 0xd55e00, 0x009e73, 0xcc79a7, 0xe69f00, 0x56b4e9, 0xf0e442};
// Text sizes (points) and the two text colours every figure uses.
constexpr double kTitleSize = 14, kCaptionSize = 12, kTickSize = 11, kFootSize = 11;
inline constexpr Rgb kInk = {0.13, 0.13, 0.13};
inline constexpr Rgb kGrey = {0.35, 0.35, 0.35};

inline std::string replace_minus(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '-')
      out += "\xe2\x88\x92";  // U+2212 MINUS SIGN
    else
      out += ch;
  }
  return out;
}

// Tick label with just enough decimals for the step.
inline std::string tick_label(double v, double step) {
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (std::strtod(buf, nullptr) == 0.0) s = decimals ? "0." + std::string(decimals, '0') : "0";
  return replace_minus(s);
}

// Ticks at 1, 2 or 5 times a power of ten, about `target` of them inside [lo, hi].
inline std::vector<double> nice_ticks(double lo, double hi, int target, double* step_out) {
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k += 1.0)
    ticks.push_back(k * step);
  *step_out = step;
  return ticks;
}

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;

enum class Align { Left, Centre, Right };

// The characters the figures use beyond ASCII, and their ASCII stand-ins for cairo's built-in font.
inline std::string to_ascii(std::string s) {
  static const std::pair<std::string_view, std::string_view> kMap[] = {{"\xe2\x88\x92", "-"},
                                                                       {"\xc2\xb7", "|"},
                                                                       {"\xc2\xb2", "^2"},
                                                                       {"\xcc\x83", "~"},
                                                                       {"\xe2\x80\xa6", "..."}};
  for (const auto& [from, to] : kMap)
    for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
      s.replace(pos, from.size(), to);
  return s;
}

// Text through cairo's toy API. Each string is drawn with its own cairo context, so a font failure
// puts only that context in an error state and never the figure's; once a failure is seen, text is
// skipped and layout uses estimated widths. When fontconfig finds no font at all, cairo falls back to
// its built-in stroke font, which has only ASCII glyphs: text is then transliterated.
class Text {
 public:
  explicit Text(cairo_surface_t* surface) : surface_(surface) {
    ContextPtr cr(cairo_create(surface_));
    select(cr.get(), 12, false);
    cairo_text_extents_t ext;
    cairo_text_extents(cr.get(), "Hg", &ext);
    ok_ = cairo_status(cr.get()) == CAIRO_STATUS_SUCCESS && ext.x_advance > 0;
    builtin_ = ok_ && cairo_scaled_font_get_type(cairo_get_scaled_font(cr.get())) == CAIRO_FONT_TYPE_USER;
  }
  bool ok() const { return ok_; }
  bool builtin_font() const { return builtin_; }

  double width(const std::string& text, double size, bool bold) const {
    const std::string s = builtin_ ? to_ascii(text) : text;
    if (!ok_) return 0.6 * size * static_cast<double>(s.size());
    ContextPtr cr(cairo_create(surface_));
    select(cr.get(), size, bold);
    cairo_text_extents_t ext;
    cairo_text_extents(cr.get(), s.c_str(), &ext);
    if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) {
      ok_ = false;
      return 0.6 * size * static_cast<double>(s.size());
    }
    return ext.x_advance;
  }

  // (x, y): the anchor on the baseline, or the vertical centre when centre_v; angle in radians.
  void draw(const std::string& text, double x, double y, double size, bool bold, Align align, Rgb colour,
            bool centre_v = false, double angle = 0) const {
    const std::string s = builtin_ ? to_ascii(text) : text;
    if (!ok_ || s.empty()) return;
    ContextPtr cr(cairo_create(surface_));
    select(cr.get(), size, bold);
    cairo_text_extents_t ext;
    cairo_text_extents(cr.get(), s.c_str(), &ext);
    cairo_font_extents_t fext;
    cairo_font_extents(cr.get(), &fext);
    double dx = align == Align::Left ? 0 : align == Align::Centre ? -ext.x_advance / 2 : -ext.x_advance;
    double dy = centre_v ? (fext.ascent - fext.descent) / 2 : 0;
    cairo_translate(cr.get(), x, y);
    cairo_rotate(cr.get(), angle);
    cairo_move_to(cr.get(), dx, dy);
    cairo_set_source_rgb(cr.get(), colour.r, colour.g, colour.b);
    cairo_show_text(cr.get(), s.c_str());
    if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) ok_ = false;
  }

  // Greedy wrap of items (joined by `sep`) into lines at most max_width wide; at most max_lines lines,
  // the last ending in "…" when items were left out.
  std::vector<std::string> wrap(const std::vector<std::string>& items, const std::string& sep, double size,
                                double max_width, std::size_t max_lines) const {
    std::vector<std::string> lines;
    std::string line;
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::string candidate = line.empty() ? items[i] : line + sep + items[i];
      if (line.empty() || width(candidate, size, false) <= max_width) {
        line = candidate;
        continue;
      }
      lines.push_back(line);
      line = items[i];
      if (lines.size() == max_lines) {
        lines.back() += " \xe2\x80\xa6";  // …
        return lines;
      }
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
  }

 private:
  static void select(cairo_t* cr, double size, bool bold) {
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    // Unhinted outlines and metrics: text looks the same at every position and on every machine
    // with the same font.
    cairo_font_options_t* fo = cairo_font_options_create();
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
  }

  cairo_surface_t* surface_;
  mutable bool ok_ = false;
  bool builtin_ = false;
};

// A footnote (items separated by " · ") wrapped to max_width, at most six lines; none without a font.
inline std::vector<std::string> footnote_lines(const Text& measure, const std::string& footnote,
                                               double max_width) {
  if (footnote.empty() || !measure.ok()) return {};
  const std::string sep = " \xc2\xb7 ";
  std::vector<std::string> items;
  for (std::size_t pos = 0;;) {
    const auto next = footnote.find(sep, pos);
    items.push_back(footnote.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  return measure.wrap(items, sep, kFootSize, max_width, 6);
}

// The note a figure carries when its text could not be drawn as intended.
inline void font_notes(const Text& text, const Text& measure, std::vector<std::string>& notes,
                       const std::string& figure = "density plot") {
  if (!text.ok() || !measure.ok())
    notes.push_back(figure + ": no usable font (install fonts-dejavu-core); the figure has no text");
  else if (text.builtin_font())
    notes.push_back(figure +
                    ": no system font found; text drawn in cairo's built-in font, ASCII only "
                    "(install fonts-dejavu-core)");
}

inline void set_colour(cairo_t* cr, Rgb c, double alpha = 1.0) {
  cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

// Tick marks of a linear axis below a plotting area's bottom edge (pixel row `bottom`), at the pixel
// columns px(t), each labelled under its mark. The caller strokes the path.
template <class ToPixel>
void draw_x_ticks(cairo_t* cr, const Text& text, const std::vector<double>& ticks, double step, ToPixel px,
                  double bottom, int tick) {
  for (double t : ticks) {
    const double p = std::round(px(t)) + 0.5;
    cairo_move_to(cr, p, bottom + 0.5);
    cairo_line_to(cr, p, bottom + 0.5 + tick);
    text.draw(tick_label(t, step), p, bottom + tick + 4 + 9, kTickSize, false, Align::Centre, kInk);
  }
}

// Tick marks of a linear axis left of a plotting area's left edge (pixel column `left`), at the pixel
// rows py(t), each labelled to its left. The caller strokes the path.
template <class ToPixel>
void draw_y_ticks(cairo_t* cr, const Text& text, const std::vector<double>& ticks, double step, ToPixel py,
                  double left, int tick) {
  for (double t : ticks) {
    const double p = std::round(py(t)) + 0.5;
    cairo_move_to(cr, left - 0.5, p);
    cairo_line_to(cr, left - 0.5 - tick, p);
    text.draw(tick_label(t, step), left - tick - 4, p, kTickSize, false, Align::Right, kInk, true);
  }
}

// Figures must stay below cairo's 32767-pixel limit; more would be a runaway grid or panel count.
inline void check_canvas(int width, int height) {
  if (width > 32000 || height > 32000)
    throw ConfigError("plot: the figure would be " + std::to_string(width) + " x " + std::to_string(height) +
                      " pixels; reduce plot_grid or the number of models");
}

// A white figure of a checked size and its drawing context.
class Canvas {
 public:
  Canvas(int width, int height) {
    check_canvas(width, height);
    surface_.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
    cr_.reset(cairo_create(surface_.get()));
    cairo_set_source_rgb(cr_.get(), 1, 1, 1);
    cairo_paint(cr_.get());
  }
  cairo_surface_t* surface() const { return surface_.get(); }
  cairo_t* cr() const { return cr_.get(); }
  // Ends drawing (the context is released, which flushes it) and writes the PNG.
  void write(const std::filesystem::path& file) {
    if (cairo_status(cr_.get()) != CAIRO_STATUS_SUCCESS)
      throw Error(file.string() +
                  ": cannot render the figure: " + cairo_status_to_string(cairo_status(cr_.get())));
    cr_.reset();
    detail::write_png_file(surface_.get(), file);
  }

 private:
  SurfacePtr surface_;
  ContextPtr cr_;
};

}  // namespace kef::detail
