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
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "input_file.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"

namespace kef {
namespace {

[[noreturn]] void table_fail(const std::filesystem::path& path, const std::string& what) {
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

// The file's bytes through a bounded buffer, so that reading a CSV file never holds its whole text.
class ByteSource {
 public:
  explicit ByteSource(const std::filesystem::path& path) : path_(path) {
    // A FIFO would block the open and a device such as /dev/zero never ends.
    if (const std::string problem = irregular_file_problem(path); problem == "no such file")
      table_fail(path, "file not found");
    else if (!problem.empty())
      table_fail(path, problem + "; expected a data file (a regular file)");
    in_.open(path, std::ios::binary);
    if (!in_) table_fail(path, std::string("cannot open file (") + std::strerror(errno) + ")");
    buffer_.resize(1 << 16);
    // A UTF-8 byte order mark, from spreadsheets, is not part of the first field.
    if (refill() && end_ >= 3 && std::memcmp(buffer_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
  }
  // The next byte without consuming it, or -1 at the end of the file.
  int peek() {
    if (pos_ == end_ && !refill()) return -1;
    return static_cast<unsigned char>(buffer_[pos_]);
  }
  char get() { return buffer_[pos_++]; }  // after a peek() that was not -1
  bool at_end() { return peek() < 0; }

 private:
  bool refill() {
    if (done_) return false;
    in_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    if (in_.bad()) table_fail(path_, "read error");
    end_ = static_cast<std::size_t>(in_.gcount());
    pos_ = 0;
    if (end_ < buffer_.size()) done_ = true;
    return end_ > 0;
  }

  const std::filesystem::path& path_;
  std::ifstream in_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, end_ = 0;
  bool done_ = false;
};

struct Field {
  std::string text;
  bool quoted = false;
};

// Splits the file into records; tracks line numbers so errors point at the line in an editor.
class CsvReader {
 public:
  explicit CsvReader(const std::filesystem::path& path) : in_(path), path_(path) {}

  // Reads the next record into `fields` (reusing their storage); `line` receives the line it starts on.
  bool next(std::vector<Field>& fields, std::size_t& line) {
    if (in_.at_end()) return false;
    line = line_;
    record_bytes_ = 0;
    std::size_t n = 0;
    while (true) {
      if (n == fields.size()) fields.emplace_back();
      read_field(fields[n++], line);
      const int c = in_.peek();
      if (c < 0) break;
      in_.get();
      if (c == ',') continue;
      // A line ends with \n, \r\n or a lone \r (classic Mac OS, some spreadsheet exports).
      if (c == '\r' && in_.peek() == '\n') in_.get();
      ++line_;
      break;
    }
    fields.resize(n);
    return true;
  }

 private:
  static bool is_field_end(int c) { return c < 0 || c == ',' || c == '\n' || c == '\r'; }
  // A record (a line, or lines joined by a quoted field) is bounded, so that a binary or runaway file
  // (a quote never closed, no line end) is an error rather than all the memory there is.
  static constexpr std::size_t kMaxRecordBytes = std::size_t{64} << 20;
  void count_byte(std::size_t record_line) {
    if (++record_bytes_ > kMaxRecordBytes)
      table_fail(path_, "line " + std::to_string(record_line) + ": a record longer than " +
                            std::to_string(kMaxRecordBytes >> 20) +
                            " MiB (expected CSV text: is this a binary file, or a quote never closed?)");
  }
  void skip_blanks() {
    while (in_.peek() == ' ' || in_.peek() == '\t') in_.get();
  }

  void read_field(Field& f, std::size_t record_line) {
    f.text.clear();
    f.quoted = false;
    skip_blanks();
    if (in_.peek() == '"') {
      f.quoted = true;
      in_.get();
      while (true) {
        if (in_.at_end()) {
          table_fail(path_,
                     "line " + std::to_string(record_line) +
                         ": unterminated quoted field (expected a closing '\"', got the end of the file)");
        }
        char c = in_.get();
        if (c == '"') {
          if (in_.peek() == '"') {
            f.text += '"';
            in_.get();
            continue;
          }
          break;
        }
        if (c == '\n' || (c == '\r' && in_.peek() != '\n')) ++line_;
        f.text += c;
        count_byte(record_line);
      }
      skip_blanks();
      if (!is_field_end(in_.peek())) {
        table_fail(path_, "line " + std::to_string(line_) +
                              ": unexpected text after a closing quote (expected ',' "
                              "or the end of the line, got '" +
                              std::string(1, static_cast<char>(in_.peek())) + "')");
      }
      return;
    }
    while (!is_field_end(in_.peek())) {
      f.text += in_.get();
      count_byte(record_line);
    }
    while (!f.text.empty() && (f.text.back() == ' ' || f.text.back() == '\t')) f.text.pop_back();
  }

  ByteSource in_;
  const std::filesystem::path& path_;
  std::size_t line_ = 1;
  std::size_t record_bytes_ = 0;
};

bool is_blank(const std::vector<Field>& fields) {
  return fields.size() == 1 && !fields[0].quoted && fields[0].text.empty();
}

bool is_missing(const Field& f) { return f.text.empty() || f.text == "NA"; }

// A field read as a number: strtod must consume the whole field ("1.5x" is text, not 1.5).
struct ParsedNumber {
  double value = 0;
  bool hexadecimal = false;  // strtod's 0x form, which a data file should not hold: refused
  bool underflow = false;    // a nonzero value too small for a double, read as 0
};

std::optional<ParsedNumber> parse_number(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  ParsedNumber out;
  out.value = std::strtod(begin, &end);
  if (end != begin + text.size()) return std::nullopt;
  const std::size_t digits = (text[0] == '+' || text[0] == '-') ? 1 : 0;
  out.hexadecimal = text.size() > digits + 1 && text[digits] == '0' && (text[digits + 1] | 0x20) == 'x';
  out.underflow = errno == ERANGE && out.value == 0;
  return out;
}

// One warning per file and process, however often (and in however many pieces) a file is read.
void warn_underflow_once(const std::filesystem::path& path, const std::string& where,
                         const std::string& text) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(std::filesystem::absolute(path).lexically_normal().string()).second) return;
  std::cerr << "[kef] warning: " << path.string() << ": " << where << ": '" << text
            << "' is too small for a double and was read as 0 (the first such value; others may follow)\n";
}

// The first offending field of a column the default selection found not to be numeric.
struct TextSample {
  std::size_t line = 0;
  Field field;
};

std::string show_field(const Field& f) {
  return f.quoted ? "\"" + f.text + "\" (a quoted string)" : "'" + f.text + "'";
}


// The header and the data rows [first, first + count) (count < 0: every row from `first`); with
// `keep_values` false only the records' structure is checked (counting rows). Rows before `first` are
// scanned for their structure (quotes, field counts, blank lines) and line numbers, never parsed; the
// scan stops at the range's end, so a range's errors are those of its rows and the rows before it.
struct CsvScan {
  TableData table;
  Index rows = 0;  // data rows read (every row of the file when the range runs to its end)
};

// Which data rows a read keeps: a range [first, first + count) (count < 0: to the end of the file), or
// a strictly increasing list. take() is called with the rows' indexes in increasing order.
class RowPick {
 public:
  RowPick(Index first, Index count) : first_(first), count_(count) {}
  explicit RowPick(const std::vector<Index>& list) : list_(&list) {
    for (std::size_t k = 0; k < list.size(); ++k)
      if (list[k] < 0 || (k > 0 && list[k] <= list[k - 1]))
        throw Error("read_table_rows: the rows must be increasing and non-negative (row " + std::to_string(list[k]) +
                    " at position " + std::to_string(k) + ")");
  }
  // The number of rows kept, or -1 when the range runs to the end of the file.
  Index wanted() const { return list_ ? static_cast<Index>(list_->size()) : count_; }
  bool take(Index index) {
    if (list_) {
      if (next_ < list_->size() && (*list_)[next_] == index) {
        ++next_;
        return true;
      }
      return false;
    }
    return index >= first_ && (count_ < 0 || index < first_ + count_);
  }
  // Every wanted row was taken after `taken` of them: the scan can stop.
  bool finished(Index taken) const { return wanted() >= 0 && taken == wanted(); }
  std::string describe() const {
    if (list_) return "row " + std::to_string((*list_)[next_]) + " (0-based)";
    return "rows [" + std::to_string(first_) + ", " + std::to_string(first_ + count_) + ")";
  }

 private:
  Index first_ = 0, count_ = -1;
  const std::vector<Index>* list_ = nullptr;
  std::size_t next_ = 0;
};

// The columns' names from the first record (moved out of `fields`), or x0, x1, ... without a header. A
// header of numbers only is the first data row of a file without one: taking it for names would lose
// that row without notice, so it is refused. Quoted fields are names, whatever their text.
std::vector<std::string> column_names(const std::filesystem::path& path, std::vector<Field>& fields,
                                      std::size_t line, bool header) {
  std::vector<std::string> names;
  if (!header) {
    for (std::size_t j = 0; j < fields.size(); ++j) names.push_back(positional_column_name(static_cast<Index>(j)));
    return names;
  }
  const bool all_numbers =
      std::all_of(fields.begin(), fields.end(), [](const Field& f) { return !f.quoted && parse_number(f.text); });
  if (all_numbers) {
    std::string shown;
    for (std::size_t j = 0; j < fields.size() && j < 4; ++j) shown += (j ? ", '" : "'") + fields[j].text + "'";
    if (fields.size() > 4) shown += ", ...";
    table_fail(path, "line " + std::to_string(line) +
                         ": the file seems to have no header row (expected column names, got numbers only: " +
                         shown +
                         "); add a first line naming the columns, or declare `header = false` in the pipeline's "
                         "[data] table (the columns are then named x0, x1, ...)");
  }
  for (auto& f : fields) names.push_back(std::move(f.text));
  return names;
}

// The column names from the file's first record: its fields when it is a header, x0, x1, ... when
// the file has none (the record is then data, left in `fields` for the caller). An empty file, a
// blank first line before content, or a header of numbers only is an error.
std::vector<std::string> csv_names(const std::filesystem::path& path, const ColumnSelection& selection,
                                   CsvReader& reader, std::vector<Field>& fields, std::size_t& line) {
  const std::string expected = selection.header ? "a header row and data rows" : "data rows";
  if (!reader.next(fields, line)) table_fail(path, "file is empty (expected " + expected + ")");
  if (is_blank(fields)) {
    std::size_t blank_line = line;
    while (reader.next(fields, line)) {
      if (!is_blank(fields))
        table_fail(path, "line " + std::to_string(blank_line) + " is empty (expected " +
                             std::string(selection.header ? "the header row" : "a data row") + ")");
    }
    table_fail(path, "file is empty (expected " + expected + ")");
  }
  std::vector<std::string> names = column_names(path, fields, line, selection.header);
  return names;
}

// The indices of the selected columns, in the selection's order (all, when it names none).
std::vector<std::size_t> selected_columns(const std::filesystem::path& path, const std::vector<std::string>& names,
                                          const std::vector<std::string>& columns) {
  const bool explicit_selection = !columns.empty();
  const std::size_t width = names.size();
  std::vector<std::size_t> selected;
  if (explicit_selection) {
    for (const auto& name : columns) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        table_fail(path, "no column named " + single_quoted(name) + " (expected one of " +
                             join_names(names, "'") + ")");
      }
      auto index = static_cast<std::size_t>(it - names.begin());
      if (std::find(it + 1, names.end(), name) != names.end())
        table_fail(path,
                   "column name " + single_quoted(name) + " appears more than once in the header (line 1)");
      if (std::find(selected.begin(), selected.end(), index) != selected.end())
        table_fail(path, "column " + single_quoted(name) +
                             " is selected twice (expected distinct names in columns)");
      selected.push_back(index);
    }
  } else {
    for (std::size_t j = 0; j < width; ++j) selected.push_back(j);
  }
  return selected;
}

// What scan_csv's values leave for after the scan: a sample of each column that holds text, the
// first value problem of the default selection, and where the first value too small for a double
// was read as 0.
struct ValueNotes {
  std::vector<std::optional<TextSample>> text_samples;
  std::optional<std::string> value_error;
  std::optional<std::string> underflow;
  std::string underflow_text;
};

// The value of field f (selected column s, file column `column` named `name`) on `line`; 0 when it
// is not a usable number, which is an error at once under an explicit selection and noted otherwise.
double field_value(const std::filesystem::path& path, const Field& f, std::size_t line, const std::string& name,
                   std::size_t column, std::size_t s, bool explicit_selection, ValueNotes& notes) {
  // Built only for a message: most fields have none.
  const auto where = [&] { return "line " + std::to_string(line) + ", " + column_label(name, column); };
  std::string problem;
  double v = 0;
  if (is_missing(f)) {
    problem = where() + ": missing value (expected a number, got " +
              (f.text.empty() ? "an empty field" : "NA") + ")";
  } else if (auto parsed = parse_number(f.text); !parsed || (f.quoted && !explicit_selection)) {
    // Without an explicit selection a quoted field marks a string column (R quotes strings and
    // factors only), even when its text looks like a number, e.g. row names "85".
    if (explicit_selection)
      table_fail(path, where() + ": not a number (expected a number, got " + show_field(f) + ")");
    if (!notes.text_samples[s]) notes.text_samples[s] = TextSample{line, f};
  } else if (parsed->hexadecimal) {
    problem = where() + ": hexadecimal value (expected a decimal number, got '" + f.text + "')";
  } else if (!std::isfinite(parsed->value)) {
    problem = where() + ": non-finite value (expected a finite number, got '" + f.text + "')";
  } else {
    v = parsed->value;
    if (parsed->underflow && !notes.underflow) {
      notes.underflow = where();
      notes.underflow_text = f.text;
    }
  }
  if (!problem.empty()) {
    if (explicit_selection) table_fail(path, problem);
    if (!notes.value_error) notes.value_error = problem;
  }
  return v;
}

// A text column explains every later failure, so it is reported before missing values.
void refuse_text_columns(const std::filesystem::path& path, const std::vector<std::string>& names,
                         const std::vector<std::size_t>& selected, const ValueNotes& notes) {
  std::vector<std::string> text_columns, numeric_columns;
  std::size_t first_text = selected.size();
  for (std::size_t s = 0; s < selected.size(); ++s) {
    if (notes.text_samples[s]) {
      text_columns.push_back(names[selected[s]]);
      if (first_text == selected.size()) first_text = s;
    } else {
      numeric_columns.push_back(names[selected[s]]);
    }
  }
  if (first_text < selected.size()) {
    const TextSample& sample = *notes.text_samples[first_text];
    std::string msg = column_label(names[selected[first_text]], selected[first_text]) +
                      " is not numeric (line " + std::to_string(sample.line) + ": expected a number, got " +
                      show_field(sample.field) + ")";
    if (text_columns.size() > 1) msg += "; other non-numeric columns: " + join_names(text_columns, "'");
    msg += "; select numeric columns explicitly, e.g. columns = [" + join_names(numeric_columns, "\"") + "]";
    table_fail(path, msg);
  }
}

// `visit`, when given, receives each kept row instead of the table (which is then left empty).
CsvScan scan_csv(const std::filesystem::path& path, const ColumnSelection& selection, RowPick pick,
                 bool keep_values, const RowVisitor* visit = nullptr) {
  const std::vector<std::string>& columns = selection.names;
  const Index count = visit ? -1 : pick.wanted();
  CsvReader reader(path);
  std::vector<Field> fields;
  std::size_t line = 0;

  const std::vector<std::string> names = csv_names(path, selection, reader, fields, line);
  // Without a header the first record is data, read by the loop below.
  bool first_is_data = !selection.header;
  const std::size_t width = names.size();

  const bool explicit_selection = !columns.empty();
  const std::vector<std::size_t> selected = selected_columns(path, names, columns);

  // A range of known length is parsed straight into its matrix; otherwise into a row-major buffer,
  // copied once at the end (the row count is known only then).
  std::vector<double> values;  // row-major, selected columns only
  std::vector<double> row_values(visit ? selected.size() : 0);
  Matrix direct;
  if (keep_values && count >= 0) direct.resize(count, static_cast<Index>(selected.size()));
  ValueNotes notes;  // the default selection's problems are reported after the scan
  notes.text_samples.resize(selected.size());
  std::size_t rows = 0;
  std::size_t blank_line = 0;
  Index seen = 0;  // data records so far
  while (!pick.finished(static_cast<Index>(rows)) &&
         (std::exchange(first_is_data, false) || reader.next(fields, line))) {
    if (is_blank(fields)) {
      if (!blank_line) blank_line = line;
      continue;
    }
    if (blank_line) {
      table_fail(path, "line " + std::to_string(blank_line) +
                           " is empty (expected a data row; blank lines are only allowed at the end)");
    }
    if (fields.size() != width) {
      table_fail(path, "line " + std::to_string(line) + ": wrong number of fields (expected " +
                           std::to_string(width) + " as in the header, got " + std::to_string(fields.size()) +
                           ")");
    }
    if (!pick.take(seen++)) continue;
    if (!keep_values) {
      ++rows;
      if (pick.finished(static_cast<Index>(rows))) break;
      continue;
    }
    for (std::size_t s = 0; s < selected.size(); ++s) {
      const Field& f = fields[selected[s]];
      const double v = field_value(path, f, line, names[selected[s]], selected[s], s,
                                   explicit_selection, notes);
      if (visit)
        row_values[s] = v;
      else if (count >= 0)
        direct(static_cast<Index>(rows), static_cast<Index>(s)) = v;
      else
        values.push_back(v);
    }
    if (visit) (*visit)(static_cast<Index>(rows), row_values.data());
    ++rows;
    if (pick.finished(static_cast<Index>(rows))) break;
  }
  if (seen == 0 && pick.wanted() != 0)
    table_fail(path, "no data rows (expected at least one row after the header on line 1)");
  if (pick.wanted() >= 0 && static_cast<Index>(rows) < pick.wanted())
    throw Error(path.string() + ": " + pick.describe() + " requested of a file of " + std::to_string(seen) +
                " data rows");

  refuse_text_columns(path, names, selected, notes);
  if (notes.value_error) table_fail(path, *notes.value_error);
  if (notes.underflow) warn_underflow_once(path, *notes.underflow, notes.underflow_text);

  CsvScan scan;
  scan.rows = static_cast<Index>(rows);
  for (std::size_t index : selected) scan.table.columns.push_back(names[index]);
  if (!keep_values || visit) return scan;
  if (count >= 0)
    scan.table.values = std::move(direct);
  else
    scan.table.values = Eigen::Map<const RowMatrix>(values.data(), static_cast<Index>(rows),
                                                  static_cast<Index>(selected.size()));
  return scan;
}

}  // namespace

std::string positional_column_name(Index j) {
  // append, not "x" + std::string&&: GCC 12 reports a false -Wrestrict inside libstdc++ for that.
  return std::string("x").append(std::to_string(j));
}

TableData read_csv(const std::filesystem::path& path, const ColumnSelection& columns) {
  return scan_csv(path, columns, RowPick(0, -1), true).table;
}

namespace {

bool is_csv(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".csv") return true;
  if (ext != ".npy") {
    table_fail(path,
               "unsupported file type '" + path.extension().string() + "' (expected a .csv or .npy file)");
  }
  return false;
}

}  // namespace

namespace {

// An NPY file's layout and the columns selected by name (x0, x1, ...: by index).
struct NpySelection {
  NpyLayout layout;
  std::vector<Index> selected;
  std::vector<std::string> names;  // of every column
};

NpySelection npy_selection(const std::filesystem::path& path, const std::vector<std::string>& columns) {
  NpySelection out;
  out.layout = read_npy_layout(path);
  if (out.layout.rows == 0) {
    table_fail(path, "no data rows (expected at least one sample, got shape (0, " +
                         std::to_string(out.layout.cols) + "))");
  }
  for (Index j = 0; j < out.layout.cols; ++j) out.names.push_back(std::string("x").append(std::to_string(j)));
  if (columns.empty()) {
    for (Index j = 0; j < out.layout.cols; ++j) out.selected.push_back(j);
    return out;
  }
  for (const auto& name : columns) {
    auto it = std::find(out.names.begin(), out.names.end(), name);
    if (it == out.names.end()) {
      table_fail(path, "no column named " + single_quoted(name) + " (expected one of x0 .. x" +
                           std::to_string(out.layout.cols - 1) +
                           "; columns of a .npy file are named by index)");
    }
    auto index = static_cast<Index>(it - out.names.begin());
    if (std::find(out.selected.begin(), out.selected.end(), index) != out.selected.end())
      table_fail(path,
                 "column " + single_quoted(name) + " is selected twice (expected distinct names in columns)");
    out.selected.push_back(index);
  }
  return out;
}

std::vector<std::string> selected_names(const NpySelection& sel) {
  std::vector<std::string> out;
  for (Index j : sel.selected) out.push_back(sel.names[static_cast<std::size_t>(j)]);
  return out;
}

// The first non-finite value in file order (rows, then columns), naming its file row.
template <class FileRow>
void check_finite_rows(const std::filesystem::path& path, const Matrix& values, const NpySelection& sel,
                       FileRow&& file_row) {
  for (Index i = 0; i < values.rows(); ++i)
    for (std::size_t s = 0; s < sel.selected.size(); ++s) {
      const double v = values(i, static_cast<Index>(s));
      if (std::isfinite(v)) continue;
      std::ostringstream got;
      got << v;
      table_fail(path, "row " + std::to_string(file_row(i)) + " (0-based), column " +
                           single_quoted(sel.names[static_cast<std::size_t>(sel.selected[s])]) +
                           ": non-finite value (expected a finite number, got " + got.str() + ")");
    }
}

void check_listed_rows(const std::filesystem::path& path, const std::vector<Index>& rows, Index file_rows) {
  const RowPick order_check(rows);  // throws unless the rows increase
  (void)order_check;
  if (!rows.empty() && rows.back() >= file_rows)
    throw Error(path.string() + ": row " + std::to_string(rows.back()) + " (0-based) requested of a file of " +
                std::to_string(file_rows) + " data rows");
}

}  // namespace

TableData read_table(const std::filesystem::path& path, const ColumnSelection& columns, RowRange range) {
  if (range.first < 0) throw Error(path.string() + ": negative first row " + std::to_string(range.first));
  if (is_csv(path)) return scan_csv(path, columns, RowPick(range.first, range.count), true).table;
  const NpySelection sel = npy_selection(path, columns.names);
  const Index count = range.count < 0 ? sel.layout.rows - std::min(range.first, sel.layout.rows) : range.count;
  if (range.first + count > sel.layout.rows)
    throw Error(path.string() + ": rows [" + std::to_string(range.first) + ", " +
                std::to_string(range.first + count) + ") requested of a file of " + std::to_string(sel.layout.rows) +
                " data rows");
  TableData table;
  table.values = read_npy_rows(path, sel.layout, range.first, count, sel.selected);
  check_finite_rows(path, table.values, sel, [&](Index i) { return range.first + i; });
  table.columns = selected_names(sel);
  return table;
}

TableData read_table_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                          const std::vector<Index>& rows) {
  if (is_csv(path)) return scan_csv(path, columns, RowPick(rows), true).table;
  const NpySelection sel = npy_selection(path, columns.names);
  check_listed_rows(path, rows, sel.layout.rows);
  TableData table;
  table.values = read_npy_rows(path, sel.layout, rows, sel.selected);
  check_finite_rows(path, table.values, sel, [&](Index i) { return rows[static_cast<std::size_t>(i)]; });
  table.columns = selected_names(sel);
  return table;
}

namespace {

// visit_table_rows for a list (`rows`) or, when it is null, the range.
std::vector<std::string> visit_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                                    const std::vector<Index>* rows, RowRange range, const RowVisitor& visit) {
  if (range.first < 0) throw Error(path.string() + ": negative first row " + std::to_string(range.first));
  if (is_csv(path)) {
    const RowPick pick = rows ? RowPick(*rows) : RowPick(range.first, range.count);
    return scan_csv(path, columns, pick, true, &visit).table.columns;
  }
  const NpySelection sel = npy_selection(path, columns.names);
  if (rows) check_listed_rows(path, *rows, sel.layout.rows);
  const Index count = range.count < 0 ? sel.layout.rows - std::min(range.first, sel.layout.rows) : range.count;
  if (!rows && range.first + count > sel.layout.rows)
    throw Error(path.string() + ": rows [" + std::to_string(range.first) + ", " +
                std::to_string(range.first + count) + ") requested of a file of " + std::to_string(sel.layout.rows) +
                " data rows");
  const Index total = rows ? static_cast<Index>(rows->size()) : count;
  // A bounded piece at a time: about 1 MiB of values.
  const Index piece =
      std::max<Index>(1, static_cast<Index>((1 << 20) / (8 * std::max<std::size_t>(sel.selected.size(), 1))));
  std::vector<double> row(sel.selected.size());
  for (Index k0 = 0; k0 < total; k0 += piece) {
    const Index n = std::min(piece, total - k0);
    std::vector<Index> listed;
    Matrix values;
    if (rows) {
      listed.assign(rows->begin() + k0, rows->begin() + k0 + n);
      values = read_npy_rows(path, sel.layout, listed, sel.selected);
    } else {
      values = read_npy_rows(path, sel.layout, range.first + k0, n, sel.selected);
    }
    check_finite_rows(path, values, sel,
                      [&](Index i) { return rows ? listed[static_cast<std::size_t>(i)] : range.first + k0 + i; });
    for (Index i = 0; i < n; ++i) {
      for (std::size_t s = 0; s < row.size(); ++s) row[s] = values(i, static_cast<Index>(s));
      visit(k0 + i, row.data());
    }
  }
  return selected_names(sel);
}

}  // namespace

std::vector<std::string> visit_table_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                                          const std::vector<Index>* rows, const RowVisitor& visit) {
  return visit_rows(path, columns, rows, RowRange{}, visit);
}

std::vector<std::string> visit_table_rows(const std::filesystem::path& path, const ColumnSelection& columns,
                                          RowRange range, const RowVisitor& visit) {
  return visit_rows(path, columns, nullptr, range, visit);
}

Index count_table_rows(const std::filesystem::path& path, bool header) {
  if (is_csv(path)) return scan_csv(path, ColumnSelection({}, header), RowPick(0, -1), false).rows;
  return npy_selection(path, {}).layout.rows;
}

}  // namespace kef
