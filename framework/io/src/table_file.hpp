#pragma once
// Private to the io layer and the kef command: a matrix written as the data file its name asks for.
#include <filesystem>
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

// Whether `path` names a CSV file (its extension, in any case).
bool csv_file_name(const std::filesystem::path& path);

// `values` written to `path` atomically (atomic_file.hpp): a CSV file when csv_file_name(path), with a
// header line of `columns` (one name per column) and one line per row, every value with 17 significant
// digits so that the file reads back bitwise; otherwise a float64 .npy file (`columns` unused).
void write_table(const std::filesystem::path& path, const Matrix& values, const std::vector<std::string>& columns);

}  // namespace kef
