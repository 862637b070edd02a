#pragma once
// Pasting PNG figures into one (`kef montage`): e.g. one density row per data set stacked into a
// paper figure.
#include <filesystem>
#include <vector>

namespace kef {

struct MontageResult {
  int width = 0, height = 0;
};

// Places the images row by row, `columns` per row, left-aligned, each row as tall as its tallest
// image, on a white background; the result is as wide as the widest row. Unreadable or non-PNG
// inputs are DataErrors naming the file; columns < 1 or an output directory that does not exist is a
// ConfigError. The output is written to a temporary name and renamed into place. With width > 0 the
// whole montage is scaled (cairo's GOOD filter, aspect kept) to that many pixels across: a figure for
// a README or a paper rather than every pixel of every panel.
MontageResult write_png_montage(const std::vector<std::filesystem::path>& inputs, int columns,
                                const std::filesystem::path& output, int width = 0);

}  // namespace kef
