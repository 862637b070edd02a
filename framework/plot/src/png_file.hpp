#pragma once
// Writing a cairo surface as a PNG file without leaving a partial file behind (internal to libkef).
#include <cairo.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "kef/error.hpp"

namespace kef::detail {

inline void write_png_file(cairo_surface_t* surface, const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent))
    throw ConfigError(file.string() + ": directory " + parent.string() + " does not exist");
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS)
    throw Error(file.string() + ": cannot render the figure: " +
                cairo_status_to_string(cairo_surface_status(surface)));
  cairo_surface_flush(surface);
  fs::path tmp = file;
  tmp += ".kef-tmp";
  const cairo_status_t status = cairo_surface_write_to_png(surface, tmp.c_str());
  if (status != CAIRO_STATUS_SUCCESS) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error(file.string() + ": cannot write the PNG file: " + cairo_status_to_string(status));
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(file.string() + ": cannot write the PNG file: " + ec.message());
  }
}

}  // namespace kef::detail
