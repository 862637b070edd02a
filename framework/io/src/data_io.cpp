// CSV and NPY tables. CSV follows what R's write.csv and spreadsheets produce: a header row, fields
// optionally quoted with "..." ("" escapes a quote), quoted fields may contain commas and newlines.
#include "kef/data_io.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "kef/error.hpp"
#include "kef/npy.hpp"

namespace kef {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw DataError(path.string() + ": " + what);
}

std::string single_quoted(const std::string& s) { return "'" + s + "'"; }

std::string column_label(const std::string& name, std::size_t index) {
  return name.empty() ? "column " + std::to_string(index + 1) + " (unnamed)"
                      : "column " + single_quoted(name);
}

std::string join_names(const std::vector<std::string>& names, const char* quote) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += quote + names[i] + quote;
  }
  return out;
}

std::string read_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "file not found");
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory (expected a data file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open file (") + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, "read error");
  std::string text = std::move(ss).str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 byte order mark from spreadsheets
  return text;
}

struct Field {
  std::string text;
  bool quoted = false;
};

// Splits the text into records; tracks line numbers so errors point at the line in an editor.
class CsvReader {
 public:
  CsvReader(const std::string& text, const std::filesystem::path& path) : text_(text), path_(path) {}

  // Reads the next record into `fields`; `line` receives the line it starts on.
  bool next(std::vector<Field>& fields, std::size_t& line) {
    if (pos_ >= text_.size()) return false;
    line = line_;
    fields.clear();
    while (true) {
      read_field(fields.emplace_back(), line);
      if (pos_ >= text_.size()) return true;
      char c = text_[pos_++];
      if (c == ',') continue;
      // A line ends with \n, \r\n or a lone \r (classic Mac OS, some spreadsheet exports).
      if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
      ++line_;
      return true;
    }
  }

 private:
  bool at_field_end() const {
    char c = text_[pos_];
    return c == ',' || c == '\n' || c == '\r';
  }
  void skip_blanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  void read_field(Field& f, std::size_t record_line) {
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == '"') {
      f.quoted = true;
      ++pos_;
      while (true) {
        if (pos_ >= text_.size()) {
          fail(path_, "line " + std::to_string(record_line) +
                          ": unterminated quoted field (expected a closing '\"', got the end of the file)");
        }
        char c = text_[pos_++];
        if (c == '"') {
          if (pos_ < text_.size() && text_[pos_] == '"') {
            f.text += '"';
            ++pos_;
            continue;
          }
          break;
        }
        if (c == '\n' || (c == '\r' && (pos_ >= text_.size() || text_[pos_] != '\n'))) ++line_;
        f.text += c;
      }
      skip_blanks();
      if (pos_ < text_.size() && !at_field_end()) {
        fail(path_, "line " + std::to_string(line_) +
                        ": unexpected text after a closing quote (expected ',' "
                        "or the end of the line, got '" +
                        std::string(1, text_[pos_]) + "')");
      }
      return;
    }
    std::size_t start = pos_;
    while (pos_ < text_.size() && !at_field_end()) ++pos_;
    std::size_t end = pos_;
    while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\t')) --end;
    f.text.assign(text_, start, end - start);
  }

  const std::string& text_;
  const std::filesystem::path& path_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
};

bool is_blank(const std::vector<Field>& fields) {
  return fields.size() == 1 && !fields[0].quoted && fields[0].text.empty();
}

bool is_missing(const Field& f) { return f.text.empty() || f.text == "NA"; }

// strtod must consume the whole field: "1.5x" is text, not 1.5.
std::optional<double> parse_number(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(begin, &end);
  if (end != begin + text.size()) return std::nullopt;
  return v;
}

// The first offending field of a column the default selection found not to be numeric.
struct TextSample {
  std::size_t line = 0;
  Field field;
};

std::string show_field(const Field& f) {
  return f.quoted ? "\"" + f.text + "\" (a quoted string)" : "'" + f.text + "'";
}

}  // namespace

TableData read_csv(const std::filesystem::path& path, const std::vector<std::string>& columns) {
  const std::string text = read_text(path);
  CsvReader reader(text, path);
  std::vector<Field> fields;
  std::size_t line = 0;

  if (!reader.next(fields, line)) fail(path, "file is empty (expected a header row and data rows)");
  if (is_blank(fields)) {
    std::size_t blank_line = line;
    while (reader.next(fields, line)) {
      if (!is_blank(fields))
        fail(path, "line " + std::to_string(blank_line) + " is empty (expected the header row)");
    }
    fail(path, "file is empty (expected a header row and data rows)");
  }
  std::vector<std::string> names;
  for (auto& f : fields) names.push_back(std::move(f.text));
  const std::size_t width = names.size();

  const bool explicit_selection = !columns.empty();
  std::vector<std::size_t> selected;
  if (explicit_selection) {
    for (const auto& name : columns) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        fail(path,
             "no column named " + single_quoted(name) + " (expected one of " + join_names(names, "'") + ")");
      }
      auto index = static_cast<std::size_t>(it - names.begin());
      if (std::find(it + 1, names.end(), name) != names.end())
        fail(path, "column name " + single_quoted(name) + " appears more than once in the header (line 1)");
      if (std::find(selected.begin(), selected.end(), index) != selected.end())
        fail(path,
             "column " + single_quoted(name) + " is selected twice (expected distinct names in columns)");
      selected.push_back(index);
    }
  } else {
    for (std::size_t j = 0; j < width; ++j) selected.push_back(j);
  }

  std::vector<double> values;  // row-major, selected columns only
  std::vector<std::optional<TextSample>> text_samples(selected.size());
  std::optional<std::string> value_error;  // deferred in the default selection, see below
  std::size_t rows = 0;
  std::size_t blank_line = 0;
  while (reader.next(fields, line)) {
    if (is_blank(fields)) {
      if (!blank_line) blank_line = line;
      continue;
    }
    if (blank_line) {
      fail(path, "line " + std::to_string(blank_line) +
                     " is empty (expected a data row; blank lines are only allowed at the end)");
    }
    if (fields.size() != width) {
      fail(path, "line " + std::to_string(line) + ": wrong number of fields (expected " +
                     std::to_string(width) + " as in the header, got " + std::to_string(fields.size()) + ")");
    }
    for (std::size_t s = 0; s < selected.size(); ++s) {
      const Field& f = fields[selected[s]];
      const std::string where =
          "line " + std::to_string(line) + ", " + column_label(names[selected[s]], selected[s]);
      std::string problem;
      double v = 0;
      if (is_missing(f)) {
        problem = where + ": missing value (expected a number, got " +
                  (f.text.empty() ? "an empty field" : "NA") + ")";
      } else if (auto parsed = parse_number(f.text); !parsed || (f.quoted && !explicit_selection)) {
        // Without an explicit selection a quoted field marks a string column (R quotes strings and
        // factors only), even when its text looks like a number, e.g. row names "85".
        if (explicit_selection)
          fail(path, where + ": not a number (expected a number, got " + show_field(f) + ")");
        if (!text_samples[s]) text_samples[s] = TextSample{line, f};
      } else if (!std::isfinite(*parsed)) {
        problem = where + ": non-finite value (expected a finite number, got '" + f.text + "')";
      } else {
        v = *parsed;
      }
      if (!problem.empty()) {
        if (explicit_selection) fail(path, problem);
        if (!value_error) value_error = problem;
      }
      values.push_back(v);
    }
    ++rows;
  }
  if (rows == 0) fail(path, "no data rows (expected at least one row after the header on line 1)");

  // A text column explains every later failure, so report it before missing values.
  std::vector<std::string> text_columns, numeric_columns;
  std::size_t first_text = selected.size();
  for (std::size_t s = 0; s < selected.size(); ++s) {
    if (text_samples[s]) {
      text_columns.push_back(names[selected[s]]);
      if (first_text == selected.size()) first_text = s;
    } else {
      numeric_columns.push_back(names[selected[s]]);
    }
  }
  if (first_text < selected.size()) {
    const TextSample& sample = *text_samples[first_text];
    std::string msg = column_label(names[selected[first_text]], selected[first_text]) +
                      " is not numeric (line " + std::to_string(sample.line) + ": expected a number, got " +
                      show_field(sample.field) + ")";
    if (text_columns.size() > 1) msg += "; other non-numeric columns: " + join_names(text_columns, "'");
    msg += "; select numeric columns explicitly, e.g. columns = [" + join_names(numeric_columns, "\"") + "]";
    fail(path, msg);
  }
  if (value_error) fail(path, *value_error);

  TableData table;
  table.values = Eigen::Map<const RowMatrix>(values.data(), static_cast<Index>(rows),
                                             static_cast<Index>(selected.size()));
  for (std::size_t index : selected) table.columns.push_back(names[index]);
  return table;
}

TableData read_table(const std::filesystem::path& path, const std::vector<std::string>& columns) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".csv") return read_csv(path, columns);
  if (ext != ".npy") {
    fail(path, "unsupported file type '" + path.extension().string() + "' (expected a .csv or .npy file)");
  }
  Matrix all = read_npy(path);
  if (all.rows() == 0) {
    fail(path,
         "no data rows (expected at least one sample, got shape (0, " + std::to_string(all.cols()) + "))");
  }
  std::vector<std::string> names;
  for (Index j = 0; j < all.cols(); ++j) names.push_back(std::string("x").append(std::to_string(j)));
  std::vector<Index> selected;
  if (columns.empty()) {
    for (Index j = 0; j < all.cols(); ++j) selected.push_back(j);
  } else {
    for (const auto& name : columns) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        fail(path, "no column named " + single_quoted(name) + " (expected one of x0 .. x" +
                       std::to_string(all.cols() - 1) + "; columns of a .npy file are named by index)");
      }
      auto index = static_cast<Index>(it - names.begin());
      if (std::find(selected.begin(), selected.end(), index) != selected.end())
        fail(path,
             "column " + single_quoted(name) + " is selected twice (expected distinct names in columns)");
      selected.push_back(index);
    }
  }
  TableData table;
  table.values.resize(all.rows(), static_cast<Index>(selected.size()));
  for (std::size_t s = 0; s < selected.size(); ++s) {
    const Index j = selected[s];
    for (Index i = 0; i < all.rows(); ++i) {
      const double v = all(i, j);
      if (!std::isfinite(v)) {
        std::ostringstream got;
        got << v;
        fail(path, "row " + std::to_string(i) + " (0-based), column " +
                       single_quoted(names[static_cast<std::size_t>(j)]) +
                       ": non-finite value (expected a finite number, got " + got.str() + ")");
      }
    }
    table.values.col(static_cast<Index>(s)) = all.col(j);
    table.columns.push_back(names[static_cast<std::size_t>(j)]);
  }
  return table;
}

}  // namespace kef
