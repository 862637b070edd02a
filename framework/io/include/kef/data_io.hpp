#pragma once
// Reading sample matrices from CSV (header row, numeric columns) and NPY files, whole or by rows.
// Neither holds more than the rows asked for and a bounded buffer: a CSV file is parsed as it is read
// (never held as text), an NPY file read at the rows' offsets.
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kef/types.hpp"

namespace kef {

struct TableData {
  Matrix values;
  std::vector<std::string> columns;
};

// The name of column j (0-based) of data that names no columns (an NPY file, a CSV file without a
// header, samples drawn by a plugin): x0, x1, ...
std::string positional_column_name(Index j);

// The columns a read selects, and how a CSV file names them. With a header (the default) its first line
// names the columns, and a first line of numbers only is refused (a file without a header would
// otherwise lose its first row to the names); without one every line is data and the columns are named
// by index as an NPY file's are: x0, x1, ... Implicit from a list of names, the common case.
struct ColumnSelection {
  std::vector<std::string> names;  // to select (empty: all)
  bool header = true;
  ColumnSelection() = default;
  ColumnSelection(std::vector<std::string> selected,
                  bool has_header = true)  // NOLINT(google-explicit-constructor)
      : names(std::move(selected)), header(has_header) {}
  ColumnSelection(std::initializer_list<std::string> selected)
      : names(selected) {}  // NOLINT(google-explicit-constructor)
};

// Errors are DataErrors naming file, row (1-based, header is row 1) and column. Values must be finite
// decimal numbers (hexadecimal ones are refused); a value that underflows to zero is read as 0 with one
// warning on stderr per file and process, naming its line and column.
TableData read_csv(const std::filesystem::path& path, const ColumnSelection& columns = {});
// Data rows [first, first + count) of a file; count < 0: every row from `first`.
struct RowRange {
  Index first = 0;
  Index count = -1;
};

// By extension: .csv or .npy. The rows of `range` only, checked as the whole file's would be (a CSV
// file's structure is also checked on the lines before the range, which are scanned for it; values are
// parsed and checked only in the range). Errors name the file's own line (CSV) or 0-based row (NPY).
TableData read_table(const std::filesystem::path& path, const ColumnSelection& columns = {},
                     RowRange range = {});
// The data rows `rows` (0-based, increasing) in that order, in one pass over the file: what the rows
// of a distributed run's process, or a split of a shuffled file, need without reading every row. A CSV
// file is scanned up to the last row asked for; values are parsed and checked only in the rows read.
TableData read_table_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                          const std::vector<Index>& rows);
// visit(k, row) for the k-th row read (row: the selected columns' values, valid during the call), in file
// order: all rows, or the increasing data rows `rows`. Holds a bounded piece of the file, never the
// rows themselves, so a caller can put each row where it belongs (a split of a shuffled file) with no
// second copy. Returns the selected columns' names. Errors as read_table's, and an error found after
// some rows were visited (a CSV text column is reported once the file is read) still throws.
using RowVisitor = std::function<void(Index k, const double* row)>;
std::vector<std::string> visit_table_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                                          const std::vector<Index>* rows, const RowVisitor& visit);
// The same for the rows of a range (k counts from the range's first row).
std::vector<std::string> visit_table_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                                          RowRange range, const RowVisitor& visit);
// The number of data rows, without keeping any: an NPY file's header, or a scan of a CSV file's records
// (their structure checked, values not parsed).
// `header`: whether a CSV file's first line names its columns (ColumnSelection::header).
Index count_table_rows(const std::filesystem::path& path, bool header = true);

}  // namespace kef
