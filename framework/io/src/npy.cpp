// NumPy .npy reader and writer. The format is documented in numpy/lib/format.py: a magic string, a
// version, a little-endian header length, then a Python dict literal describing dtype, order and shape.
#include "kef/npy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "atomic_file.hpp"
#include "input_file.hpp"
#include "kef/error.hpp"

namespace kef {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader copies little-endian data directly; a big-endian host needs byte swaps");

constexpr std::string_view kMagic("\x93NUMPY", 6);

[[noreturn]] void npy_fail(const std::filesystem::path& path, const std::string& what) {
  throw DataError(path.string() + ": " + what);
}

// Makes arbitrary bytes printable in an error message.
std::string printable(std::string_view bytes, std::size_t limit = 80) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (bytes.size() > limit) out += "...";
  return out;
}

struct Value {
  enum Kind { kString, kBool, kTuple, kOther } kind = kOther;
  std::string text;  // the string, or the raw literal for kOther
  bool flag = false;
  std::vector<std::uint64_t> ints;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

// Parses the restricted Python literal NumPy writes; anything else is reported, never guessed at.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::filesystem::path& path) : text_(text), path_(path) {}

  Header parse() {
    std::map<std::string, Value> entries;
    skip_space();
    expect('{', "a '{' opening the header dict");
    while (true) {
      skip_space();
      if (consume('}')) break;
      if (peek() != '\'' && peek() != '"') malformed("a quoted key");
      std::string key = parse_string();
      skip_space();
      expect(':', "':' after key '" + key + "'");
      Value value = parse_value();
      if (!entries.emplace(key, std::move(value)).second) malformed_text("duplicate key '" + key + "'");
      skip_space();
      if (consume(',')) continue;
      expect('}', "',' or '}' after the value of '" + key + "'");
      break;
    }
    skip_space();
    if (pos_ != text_.size()) malformed("the end of the header after '}'");
    for (const auto& [key, value] : entries) {
      if (key != "descr" && key != "fortran_order" && key != "shape")
        malformed_text("unexpected key '" + key + "' (expected only 'descr', 'fortran_order' and 'shape')");
    }
    for (const char* key : {"descr", "fortran_order", "shape"}) {
      if (!entries.count(key)) malformed_text(std::string("missing key '") + key + "'");
    }
    Header h;
    const Value& descr = entries["descr"];
    if (descr.kind == Value::kString) {
      h.descr = descr.text;
    } else {
      npy_fail(path_, "unsupported dtype " + printable(descr.text) + " (expected '<f8' or '<f4')");
    }
    const Value& order = entries["fortran_order"];
    if (order.kind != Value::kBool) malformed_text("'fortran_order' must be True or False");
    h.fortran_order = order.flag;
    const Value& shape = entries["shape"];
    if (shape.kind != Value::kTuple) malformed_text("'shape' must be a tuple of integers");
    h.shape = shape.ints;
    return h;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char c, const std::string& what) {
    if (!consume(c)) malformed(what);
  }

  [[noreturn]] void malformed(const std::string& expected) {
    std::string got = pos_ < text_.size() ? "'" + printable(text_.substr(pos_), 20) + "'" : "the end";
    malformed_text("expected " + expected + ", got " + got + " at offset " + std::to_string(pos_));
  }
  [[noreturn]] void malformed_text(const std::string& what) {
    npy_fail(path_, "malformed .npy header: " + what + "; header is \"" + printable(text_, 200) + "\"");
  }

  std::string parse_string() {
    char quote = text_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) malformed("a closing " + std::string(1, quote));
      char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\\' && pos_ < text_.size()) c = text_[pos_++];
      out += c;
    }
  }

  std::uint64_t parse_int() {
    skip_space();
    if (!std::isdigit(static_cast<unsigned char>(peek()))) malformed("a non-negative integer in 'shape'");
    std::uint64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      auto digit = static_cast<std::uint64_t>(text_[pos_++] - '0');
      if (v > (UINT64_MAX - digit) / 10) malformed_text("a dimension in 'shape' is too large");
      v = v * 10 + digit;
    }
    consume('L');  // Python 2 long literals appear in files written by old NumPy versions
    return v;
  }

  Value parse_value() {
    skip_space();
    Value v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::kString;
      v.text = parse_string();
    } else if (c == '(') {
      ++pos_;
      v.kind = Value::kTuple;
      skip_space();
      while (!consume(')')) {
        v.ints.push_back(parse_int());
        skip_space();
        if (consume(',')) {
          skip_space();
          continue;
        }
        expect(')', "',' or ')' in 'shape'");
        break;
      }
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      std::size_t start = pos_;
      while (std::isalnum(static_cast<unsigned char>(peek()))) ++pos_;
      std::string_view word = text_.substr(start, pos_ - start);
      if (word != "True" && word != "False") {
        pos_ = start;
        malformed("True, False, a string or a tuple");
      }
      v.kind = Value::kBool;
      v.flag = word == "True";
    } else if (c == '[' || c == '{') {
      // Structured dtypes are lists of fields; keep the raw text so the error can show it.
      std::size_t start = pos_;
      int depth = 0;
      do {
        if (pos_ >= text_.size()) malformed("a closing bracket");
        char d = text_[pos_];
        if (d == '\'' || d == '"') {
          parse_string();
          continue;
        }
        if (d == '[' || d == '{' || d == '(') ++depth;
        if (d == ']' || d == '}' || d == ')') --depth;
        ++pos_;
      } while (depth > 0);
      v.text = std::string(text_.substr(start, pos_ - start));
    } else {
      malformed("a value");
    }
    return v;
  }

  std::string_view text_;
  const std::filesystem::path& path_;
  std::size_t pos_ = 0;
};

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// The .npy prefix of a float64 C-order array of this shape.
std::string npy_prefix(const std::string& shape) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }";
  // NumPy aligns the data to 64 bytes: magic (6) + version (2) + length (2) + header + '\n'.
  std::size_t total = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic);
  bytes += '\x01';
  bytes += '\x00';
  auto len = static_cast<std::uint16_t>(header.size());
  bytes += static_cast<char>(len & 0xff);
  bytes += static_cast<char>(len >> 8);
  bytes += header;
  return bytes;
}

void write_array(const std::filesystem::path& path, const std::string& shape, const double* row_major,
                 std::size_t count) {
  const std::string prefix = npy_prefix(shape);
  write_atomically(path, [&](std::ofstream& out) {
    out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    if (count > 0) out.write(reinterpret_cast<const char*>(row_major), static_cast<std::streamsize>(count * sizeof(double)));
  });
}

}  // namespace

NpyLayout read_npy_layout(const std::filesystem::path& path) {
  std::error_code ec;
  // A FIFO would block the open, and a device has no size to check the shape against.
  if (const std::string problem = irregular_file_problem(path); problem == "no such file")
    npy_fail(path, "cannot open file (no such file)");
  else if (!problem.empty())
    npy_fail(path, problem + "; expected a .npy file (a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) npy_fail(path, std::string("cannot open file (") + std::strerror(errno) + ")");
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) npy_fail(path, "cannot read the file size (" + ec.message() + ")");
  // Only the prefix is read here: the data are read by read_npy_rows, by rows.
  auto read_at_most = [&](std::size_t n) {
    std::string bytes(n, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    if (in.bad()) npy_fail(path, "read error");
    bytes.resize(static_cast<std::size_t>(in.gcount()));
    in.clear();
    return bytes;
  };
  std::string bytes = read_at_most(kMagic.size() + 2);
  if (bytes.size() < kMagic.size() + 2 || std::string_view(bytes).substr(0, kMagic.size()) != kMagic) {
    npy_fail(path, "not a .npy file (expected the magic string \\x93NUMPY, got \"" +
                   printable(std::string_view(bytes).substr(0, kMagic.size() + 2)) + "\")");
  }
  auto major = static_cast<unsigned char>(bytes[6]);
  auto minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    npy_fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (expected 1.0, 2.0 or 3.0)");
  }
  const std::size_t len_size = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagic.size() + 2 + len_size;
  bytes += read_at_most(len_size);
  if (bytes.size() < prefix) {
    npy_fail(path, "truncated header (expected at least " + std::to_string(prefix) + " bytes, got " +
                   std::to_string(bytes.size()) + ")");
  }
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_size; ++i)
    header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (file_size - prefix < header_len) {
    npy_fail(path, "truncated header (expected " + std::to_string(header_len) + " header bytes, got " +
                   std::to_string(file_size - prefix) + ")");
  }
  const std::string header_text = read_at_most(header_len);
  if (header_text.size() != header_len) npy_fail(path, "read error in the header");
  Header h = HeaderParser(header_text, path).parse();

  NpyLayout layout;
  if (h.descr == "<f8") {
    layout.item = 8;
  } else if (h.descr == "<f4") {
    layout.item = 4;
  } else if (h.descr.size() >= 2 && h.descr[0] == '>') {
    npy_fail(path, "big-endian dtype '" + h.descr + "' is not supported (expected '<f8' or '<f4'); " +
                   "convert with numpy: a.astype('<f8')");
  } else {
    npy_fail(path, "unsupported dtype '" + printable(h.descr) + "' (expected '<f8' or '<f4')");
  }
  if (h.shape.empty() || h.shape.size() > 2) {
    npy_fail(path, "unsupported array shape " + shape_text(h.shape) + " (expected a 1-D or 2-D array, got " +
                   std::to_string(h.shape.size()) + "-D)");
  }
  const std::uint64_t rows = h.shape[0];
  const std::uint64_t cols = h.shape.size() == 2 ? h.shape[1] : 1;
  std::uint64_t count = 0, expected = 0;
  constexpr auto kMaxIndex = static_cast<std::uint64_t>(std::numeric_limits<Index>::max());
  if (rows > kMaxIndex || cols > kMaxIndex || __builtin_mul_overflow(rows, cols, &count) ||
      __builtin_mul_overflow(count, static_cast<std::uint64_t>(layout.item), &expected)) {
    npy_fail(path, "array shape " + shape_text(h.shape) + " is too large");
  }
  layout.data_offset = prefix + header_len;
  const std::uint64_t available = file_size - layout.data_offset;
  if (available != expected) {
    npy_fail(path, std::string(available < expected ? "truncated data" : "unexpected trailing data") +
                   " (expected " + std::to_string(expected) + " bytes for shape " + shape_text(h.shape) +
                   " of '" + h.descr + "', got " + std::to_string(available) + ")");
  }
  layout.rows = static_cast<Index>(rows);
  layout.cols = static_cast<Index>(cols);
  layout.column_major = h.fortran_order || h.shape.size() == 1;
  return layout;
}

namespace {

// The columns asked for (all when empty), checked against the file's.
std::vector<Index> checked_columns(const std::filesystem::path& path, const NpyLayout& layout,
                                   const std::vector<Index>& columns) {
  std::vector<Index> selected = columns;
  if (selected.empty())
    for (Index j = 0; j < layout.cols; ++j) selected.push_back(j);
  for (Index j : selected)
    if (j < 0 || j >= layout.cols)
      throw Error(path.string() + ": column " + std::to_string(j) + " requested of a file of " +
                  std::to_string(layout.cols) + " columns");
  return selected;
}

// A file open for positioned reads (pread: one system call a span, no seek), closed when it goes.
class NpyFile {
 public:
  explicit NpyFile(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) npy_fail(path, std::string("cannot open file (") + std::strerror(errno) + ")");
  }
  NpyFile(const NpyFile&) = delete;
  NpyFile& operator=(const NpyFile&) = delete;
  ~NpyFile() { ::close(fd_); }
  // `bytes` bytes at `offset`; false when the file ends first or a read fails.
  bool read_at(char* into, std::uint64_t bytes, std::uint64_t offset) const {
    while (bytes > 0) {
      const ssize_t got = ::pread(fd_, into, static_cast<std::size_t>(bytes), static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      into += got;
      bytes -= static_cast<std::uint64_t>(got);
      offset += static_cast<std::uint64_t>(got);
    }
    return true;
  }

 private:
  int fd_;
};

void check_range(const std::filesystem::path& path, const NpyLayout& layout, Index first, Index count) {
  if (first < 0 || count < 0 || first > layout.rows || count > layout.rows - first)
    throw Error(path.string() + ": rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") requested of a file of " + std::to_string(layout.rows) + " rows");
}

// Rows [first, first + count) of the open file `in`, the `selected` columns (checked).
Matrix read_range(const NpyFile& in, const std::filesystem::path& path, const NpyLayout& layout, Index first,
                  Index count, const std::vector<Index>& selected) {
  Matrix m(count, static_cast<Index>(selected.size()));
  const auto item = static_cast<std::uint64_t>(layout.item);
  // A bounded buffer: reading a range costs the range (plus 1 MiB), never the file.
  std::vector<char> buffer;
  auto read_span = [&](std::uint64_t offset, std::uint64_t bytes) {
    buffer.resize(static_cast<std::size_t>(bytes));
    if (!in.read_at(buffer.data(), bytes, layout.data_offset + offset))
      npy_fail(path, "read error (the file changed or shrank while it was read)");
  };
  auto value = [&](std::size_t at) {
    if (layout.item == 8) {
      double v;
      std::memcpy(&v, buffer.data() + at * 8, 8);
      return v;
    }
    float v;
    std::memcpy(&v, buffer.data() + at * 4, 4);
    return static_cast<double>(v);
  };
  constexpr std::uint64_t kChunkBytes = 1u << 20;
  if (layout.column_major) {
    const Index rows_per_chunk = std::max<Index>(1, static_cast<Index>(kChunkBytes / item));
    for (std::size_t s = 0; s < selected.size(); ++s)
      for (Index i0 = 0; i0 < count; i0 += rows_per_chunk) {
        const Index n = std::min(rows_per_chunk, count - i0);
        read_span((static_cast<std::uint64_t>(selected[s]) * static_cast<std::uint64_t>(layout.rows) +
                   static_cast<std::uint64_t>(first + i0)) * item,
                  static_cast<std::uint64_t>(n) * item);
        for (Index i = 0; i < n; ++i) m(i0 + i, static_cast<Index>(s)) = value(static_cast<std::size_t>(i));
      }
  } else {
    const std::uint64_t row_bytes = static_cast<std::uint64_t>(layout.cols) * item;
    const Index rows_per_chunk = std::max<Index>(1, static_cast<Index>(kChunkBytes / std::max<std::uint64_t>(row_bytes, 1)));
    for (Index i0 = 0; i0 < count && row_bytes > 0; i0 += rows_per_chunk) {
      const Index n = std::min(rows_per_chunk, count - i0);
      read_span(static_cast<std::uint64_t>(first + i0) * row_bytes, static_cast<std::uint64_t>(n) * row_bytes);
      for (Index i = 0; i < n; ++i)
        for (std::size_t s = 0; s < selected.size(); ++s)
          m(i0 + i, static_cast<Index>(s)) =
              value(static_cast<std::size_t>(i * layout.cols + selected[s]));
    }
  }
  return m;
}

}  // namespace

Matrix read_npy_rows(const std::filesystem::path& path, const NpyLayout& layout, Index first, Index count,
                     const std::vector<Index>& columns) {
  check_range(path, layout, first, count);
  const std::vector<Index> selected = checked_columns(path, layout, columns);
  const NpyFile in(path);
  return read_range(in, path, layout, first, count, selected);
}

Matrix read_npy_rows(const std::filesystem::path& path, const NpyLayout& layout, const std::vector<Index>& rows,
                     const std::vector<Index>& columns) {
  const std::vector<Index> selected = checked_columns(path, layout, columns);
  Matrix m(static_cast<Index>(rows.size()), static_cast<Index>(selected.size()));
  // Runs of rows close enough to read through (less than 64 KiB of other rows between them) are read
  // as one range, by the range reader; scattered rows are read each alone, through one open file (a
  // distributed DKEF fit reads a few scattered rows many thousand times).
  if (rows.empty()) return m;
  const NpyFile in(path);
  const std::uint64_t row_bytes =
      (layout.column_major ? 1 : static_cast<std::uint64_t>(layout.cols)) * static_cast<std::uint64_t>(layout.item);
  const auto gap = static_cast<Index>(std::max<std::uint64_t>(1, (64u << 10) / std::max<std::uint64_t>(row_bytes, 1)));
  std::size_t k = 0;
  while (k < rows.size()) {
    std::size_t e = k + 1;
    while (e < rows.size() && rows[e] - rows[e - 1] <= gap && rows[e] - rows[k] < (Index{1} << 16)) ++e;
    const Index first = rows[k], last = rows[e - 1];
    check_range(path, layout, first, last - first + 1);
    const Matrix span = read_range(in, path, layout, first, last - first + 1, selected);
    for (std::size_t i = k; i < e; ++i) m.row(static_cast<Index>(i)) = span.row(rows[i] - first);
    k = e;
  }
  return m;
}

Matrix read_npy(const std::filesystem::path& path) {
  const NpyLayout layout = read_npy_layout(path);
  return read_npy_rows(path, layout, 0, layout.rows);
}

void write_npy(const std::filesystem::path& path, const Matrix& m) {
  RowMatrix row_major = m;
  const std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(m.rows()),
                                         static_cast<std::uint64_t>(m.cols())};
  write_array(path, shape_text(shape), row_major.data(), static_cast<std::size_t>(m.size()));
}

void write_npy(const std::filesystem::path& path, const Vector& v) {
  const std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(v.size())};
  write_array(path, shape_text(shape), v.data(), static_cast<std::size_t>(v.size()));
}

void write_npy_blocks(const std::filesystem::path& path, Index rows, Index cols, Index block_rows,
                      const std::function<Matrix(Index, Index)>& block) {
  if (rows < 0 || cols < 0 || block_rows < 1)
    throw Error(path.string() + ": write_npy_blocks: bad shape or block size");
  const std::string prefix =
      npy_prefix(shape_text({static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols)}));
  write_atomically(path, [&](std::ofstream& out) {
    out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    for (Index b = 0; b < rows; b += block_rows) {
      const Index e = std::min(rows, b + block_rows);
      const RowMatrix m = block(b, e);
      if (m.rows() != e - b || m.cols() != cols)
        throw Error(path.string() + ": write_npy_blocks: block [" + std::to_string(b) + ", " + std::to_string(e) +
                    ") has " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + " values");
      out.write(reinterpret_cast<const char*>(m.data()), static_cast<std::streamsize>(m.size() * sizeof(double)));
      if (!out) throw Error(path.string() + ": write failed (disk full?)");
    }
  });
}

}  // namespace kef
