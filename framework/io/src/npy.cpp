// NumPy .npy reader and writer. The format is documented in numpy/lib/format.py: a magic string, a
// version, a little-endian header length, then a Python dict literal describing dtype, order and shape.
#include "kef/npy.hpp"

#include <unistd.h>

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

#include "kef/error.hpp"

namespace kef {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader copies little-endian data directly; a big-endian host needs byte swaps");

constexpr std::string_view kMagic("\x93NUMPY", 6);

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
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
      fail(path_, "unsupported dtype " + printable(descr.text) + " (expected '<f8' or '<f4')");
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
    fail(path_, "malformed .npy header: " + what + "; header is \"" + printable(text_, 200) + "\"");
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

std::string read_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory (expected a .npy file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open file (") + std::strerror(errno) + ")");
  std::string bytes;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    bytes.append(buf.data(), static_cast<std::size_t>(in.gcount()));
  if (in.bad()) fail(path, "read error");
  return bytes;
}

template <class T>
Matrix convert(const char* data, Index rows, Index cols, bool column_major) {
  Matrix m(rows, cols);
  const auto stride = static_cast<Index>(sizeof(T));
  for (Index j = 0; j < cols; ++j) {
    for (Index i = 0; i < rows; ++i) {
      Index k = column_major ? j * rows + i : i * cols + j;
      T v;
      std::memcpy(&v, data + k * stride, sizeof(T));
      m(i, j) = static_cast<double>(v);
    }
  }
  return m;
}

// Writes `bytes` to a temporary file next to `path` and renames it, so readers never see half a file.
void write_atomically(const std::filesystem::path& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw Error(path.string() + ": cannot write file (" + std::strerror(errno) +
                  "); check that the directory exists and is writable");
    }
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw Error(path.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(path.string() + ": cannot rename temporary file into place (" + ec.message() + ")");
  }
}

void write_array(const std::filesystem::path& path, const std::string& shape, const double* row_major,
                 std::size_t count) {
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
  if (count > 0) bytes.append(reinterpret_cast<const char*>(row_major), count * sizeof(double));
  write_atomically(path, bytes);
}

}  // namespace

Matrix read_npy(const std::filesystem::path& path) {
  const std::string bytes = read_bytes(path);
  if (bytes.size() < kMagic.size() + 2 || std::string_view(bytes).substr(0, kMagic.size()) != kMagic) {
    fail(path, "not a .npy file (expected the magic string \\x93NUMPY, got \"" +
                   printable(std::string_view(bytes).substr(0, kMagic.size() + 2)) + "\")");
  }
  auto major = static_cast<unsigned char>(bytes[6]);
  auto minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (expected 1.0, 2.0 or 3.0)");
  }
  const std::size_t len_size = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagic.size() + 2 + len_size;
  if (bytes.size() < prefix) {
    fail(path, "truncated header (expected at least " + std::to_string(prefix) + " bytes, got " +
                   std::to_string(bytes.size()) + ")");
  }
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_size; ++i)
    header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (bytes.size() - prefix < header_len) {
    fail(path, "truncated header (expected " + std::to_string(header_len) + " header bytes, got " +
                   std::to_string(bytes.size() - prefix) + ")");
  }
  Header h = HeaderParser(std::string_view(bytes).substr(prefix, header_len), path).parse();

  std::size_t item = 0;
  if (h.descr == "<f8") {
    item = 8;
  } else if (h.descr == "<f4") {
    item = 4;
  } else if (h.descr.size() >= 2 && h.descr[0] == '>') {
    fail(path, "big-endian dtype '" + h.descr + "' is not supported (expected '<f8' or '<f4'); " +
                   "convert with numpy: a.astype('<f8')");
  } else {
    fail(path, "unsupported dtype '" + printable(h.descr) + "' (expected '<f8' or '<f4')");
  }
  if (h.shape.empty() || h.shape.size() > 2) {
    fail(path, "unsupported array shape " + shape_text(h.shape) + " (expected a 1-D or 2-D array, got " +
                   std::to_string(h.shape.size()) + "-D)");
  }
  const std::uint64_t rows = h.shape[0];
  const std::uint64_t cols = h.shape.size() == 2 ? h.shape[1] : 1;
  std::uint64_t count = 0, expected = 0;
  constexpr auto kMaxIndex = static_cast<std::uint64_t>(std::numeric_limits<Index>::max());
  if (rows > kMaxIndex || cols > kMaxIndex || __builtin_mul_overflow(rows, cols, &count) ||
      __builtin_mul_overflow(count, static_cast<std::uint64_t>(item), &expected)) {
    fail(path, "array shape " + shape_text(h.shape) + " is too large");
  }
  const std::size_t data_offset = prefix + header_len;
  const std::uint64_t available = bytes.size() - data_offset;
  if (available != expected) {
    fail(path, std::string(available < expected ? "truncated data" : "unexpected trailing data") +
                   " (expected " + std::to_string(expected) + " bytes for shape " + shape_text(h.shape) +
                   " of '" + h.descr + "', got " + std::to_string(available) + ")");
  }
  const char* data = bytes.data() + data_offset;
  const bool column_major = h.fortran_order || h.shape.size() == 1;
  const auto r = static_cast<Index>(rows), c = static_cast<Index>(cols);
  return item == 8 ? convert<double>(data, r, c, column_major) : convert<float>(data, r, c, column_major);
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

}  // namespace kef
