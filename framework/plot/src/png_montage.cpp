// `kef montage`: PNG figures pasted into a grid with cairo.
#include "kef/png_montage.hpp"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "kef/error.hpp"
#include "plot_canvas.hpp"

namespace kef {

namespace fs = std::filesystem;

using detail::SurfacePtr;

MontageResult write_png_montage(const std::vector<fs::path>& inputs, int columns, const fs::path& output,
                                int out_width) {
  if (columns < 1) throw ConfigError("--columns " + std::to_string(columns) + ": expected a positive number");
  if (out_width < 0) throw ConfigError("--width " + std::to_string(out_width) + ": expected a positive number");
  if (inputs.empty()) throw ConfigError("montage: no input images");
  const fs::path parent = output.has_parent_path() ? output.parent_path() : fs::path(".");
  if (!fs::is_directory(parent))
    throw ConfigError("--out " + output.string() + ": directory " + parent.string() + " does not exist");

  std::vector<SurfacePtr> images;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (!fs::is_regular_file(in, ec)) throw DataError(in.string() + ": no such file");
    SurfacePtr s(cairo_image_surface_create_from_png(in.c_str()));
    const cairo_status_t st = cairo_surface_status(s.get());
    if (st != CAIRO_STATUS_SUCCESS)
      throw DataError(in.string() + ": cannot read it as a PNG image (" + cairo_status_to_string(st) + ")");
    images.push_back(std::move(s));
  }

  // Row r holds images [r·columns, (r+1)·columns); widths add up along a row, heights down the rows.
  const std::size_t n = images.size(), cols = static_cast<std::size_t>(columns);
  std::vector<long> row_height, row_width;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % cols == 0) {
      row_height.push_back(0);
      row_width.push_back(0);
    }
    row_width.back() += cairo_image_surface_get_width(images[i].get());
    row_height.back() = std::max<long>(row_height.back(), cairo_image_surface_get_height(images[i].get()));
  }
  long width = *std::max_element(row_width.begin(), row_width.end()), height = 0;
  for (long h : row_height) height += h;
  if (width > 32000 || height > 32000)
    throw ConfigError("montage: the result would be " + std::to_string(width) + " x " + std::to_string(height) +
                      " pixels (cairo's limit is 32767 per side); use fewer images per row or column");

  const double scale = out_width > 0 ? static_cast<double>(out_width) / static_cast<double>(width) : 1.0;
  if (out_width > 0) {
    height = std::max<long>(1, std::lround(static_cast<double>(height) * scale));
    width = out_width;
    if (width > 32000 || height > 32000)
      throw ConfigError("--width " + std::to_string(out_width) + ": the result would be " + std::to_string(width) +
                        " x " + std::to_string(height) + " pixels (cairo's limit is 32767 per side)");
  }
  SurfacePtr out(cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(width), static_cast<int>(height)));
  cairo_t* cr = cairo_create(out.get());
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_scale(cr, scale, scale);
  long y = 0;
  for (std::size_t r = 0; r < row_height.size(); ++r) {
    long x = 0;
    for (std::size_t i = r * cols; i < std::min(n, (r + 1) * cols); ++i) {
      cairo_set_source_surface(cr, images[i].get(), static_cast<double>(x), static_cast<double>(y));
      cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_GOOD);
      cairo_paint(cr);
      x += cairo_image_surface_get_width(images[i].get());
    }
    y += row_height[r];
  }
  const cairo_status_t st = cairo_status(cr);
  cairo_destroy(cr);
  if (st != CAIRO_STATUS_SUCCESS)
    throw Error(output.string() + ": cannot compose the montage: " + cairo_status_to_string(st));
  detail::write_png_file(out.get(), output);
  return {static_cast<int>(width), static_cast<int>(height)};
}

}  // namespace kef
