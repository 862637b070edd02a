#pragma once
// Reading sample matrices from CSV (header row, numeric columns) and NPY files.
#include <filesystem>
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

struct TableData {
  Matrix values;
  std::vector<std::string> columns;
};

// columns: names to select (empty = all). Errors are DataErrors naming file, row (1-based, header
// is row 1) and column.
TableData read_csv(const std::filesystem::path& path, const std::vector<std::string>& columns = {});
// By extension: .csv or .npy.
TableData read_table(const std::filesystem::path& path, const std::vector<std::string>& columns = {});

}  // namespace kef
