#pragma once
// NumPy .npy files (format 1.0-3.0): float64 and float32, C or Fortran order, 1-D or 2-D.
#include <filesystem>

#include "kef/types.hpp"

namespace kef {

Matrix read_npy(const std::filesystem::path& path);  // DataError naming the file on any problem
void write_npy(const std::filesystem::path& path, const Matrix& m);  // float64, C order, 2-D
void write_npy(const std::filesystem::path& path, const Vector& v);  // float64, 1-D

}  // namespace kef
