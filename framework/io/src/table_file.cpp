// A matrix written as a CSV or NPY file (table_file.hpp).
#include "table_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "atomic_file.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"

namespace kef {

namespace {

// A CSV field: quoted (with doubled quotes) when it holds a separator, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

bool csv_file_name(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".csv";
}

void write_table(const std::filesystem::path& path, const Matrix& values, const std::vector<std::string>& columns) {
  if (!csv_file_name(path)) {
    write_npy(path, values);
    return;
  }
  if (static_cast<Index>(columns.size()) != values.cols())
    throw Error(path.string() + ": " + std::to_string(columns.size()) + " column names for " +
                std::to_string(values.cols()) + " columns");
  write_atomically(path, [&](std::ofstream& out) {
    for (std::size_t j = 0; j < columns.size(); ++j) out << (j ? "," : "") << csv_field(columns[j]);
    out << "\n";
    char number[32];
    std::string line;
    for (Index i = 0; i < values.rows(); ++i) {
      line.clear();
      for (Index j = 0; j < values.cols(); ++j) {
        std::snprintf(number, sizeof number, "%.17g", values(i, j));
        if (j) line += ',';
        line += number;
      }
      line += '\n';
      out << line;
      if (!out) throw Error(path.string() + ": write failed (disk full?)");
    }
  });
}

}  // namespace kef
