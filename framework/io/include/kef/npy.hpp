#pragma once
// NumPy .npy files (format 1.0-3.0): float64 and float32, C or Fortran order, 1-D or 2-D. A file can be
// read whole or by rows: read_npy_layout reads only the header (and checks the file's size against it),
// read_npy_rows then reads the bytes of the rows asked for, so reading a row range costs that range.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "kef/types.hpp"

namespace kef {

// Where the values of a .npy file are: `rows` x `cols` values of `item` bytes (8: '<f8', 4: '<f4')
// from byte `data_offset`, column after column when `column_major` (Fortran order, and 1-D arrays as
// one column), else row after row.
struct NpyLayout {
  Index rows = 0, cols = 0;
  std::size_t item = 8;
  std::uint64_t data_offset = 0;
  bool column_major = false;
};

NpyLayout read_npy_layout(const std::filesystem::path& path);  // DataError naming the file
// Rows [first, first + count) of the file, the given columns in the given order (empty: all), as
// doubles. Reads only those rows' bytes, through a bounded buffer.
Matrix read_npy_rows(const std::filesystem::path& path, const NpyLayout& layout, Index first, Index count,
                     const std::vector<Index>& columns = {});
// The file rows `rows` (increasing) in that order: rows close together are read as one range, so
// reading many rows costs about their bytes, a few scattered ones a read each.
Matrix read_npy_rows(const std::filesystem::path& path, const NpyLayout& layout, const std::vector<Index>& rows,
                     const std::vector<Index>& columns = {});
Matrix read_npy(const std::filesystem::path& path);  // DataError naming the file on any problem
void write_npy(const std::filesystem::path& path, const Matrix& m);  // float64, C order, 2-D
void write_npy(const std::filesystem::path& path, const Vector& v);  // float64, 1-D
// A rows x cols float64 C-order file written a block of rows at a time (rows [b, e) from `block`, in
// order, at most block_rows each), so a split that is not held can be saved; written under a
// temporary name and renamed into place, as write_npy.
void write_npy_blocks(const std::filesystem::path& path, Index rows, Index cols, Index block_rows,
                      const std::function<Matrix(Index, Index)>& block);

}  // namespace kef
