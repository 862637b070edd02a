// read_npy / write_npy: round trips, files written by NumPy itself, and every rejected input.
#include "kef/npy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "kef/error.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

const char* const kPython = "/usr/bin/python3";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_npy_bytes(const fs::path& p, const std::string& bytes) {
  test::write_file(p.parent_path(), p.filename().string(), bytes);
}

// A hand-made .npy file: magic, version, header length (2 or 4 bytes), header, data.
std::string make_npy(const std::string& header, const std::string& data, int major = 1, int minor = 0) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string doubles(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    double v = i + 0.5;
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return s;
}

// Expects a DataError whose message starts with the file path and contains every fragment.
void expect_data_error(const fs::path& p, std::initializer_list<std::string> fragments) {
  try {
    read_npy(p);
    FAIL() << "no error reading " << p;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(p.string() + ": ", 0), 0u) << msg;
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
    EXPECT_EQ(e.exit_status(), 2);
  }
}

bool same_bits(const Matrix& a, const Matrix& b) {
  // memcmp on the null data() of an empty matrix would be undefined behaviour.
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 ||
          std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0);
}

Matrix known_matrix() {  // the same values the Python fixtures use: a[i, j] = 10 i + j + 0.25
  Matrix a(3, 4);
  for (Index i = 0; i < 3; ++i)
    for (Index j = 0; j < 4; ++j) a(i, j) = 10.0 * static_cast<double>(i) + static_cast<double>(j) + 0.25;
  return a;
}

TEST(Npy, RoundTripIsBitwise) {
  const fs::path dir = test::temp_dir("npy-roundtrip");
  RandomStream rng(7, "npy");
  const std::pair<Index, Index> shapes[] = {{5, 7}, {1, 1}, {0, 3}, {3, 0}, {257, 2}};
  for (auto [r, c] : shapes) {
    Matrix m = rng.normal_matrix(r, c);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] *= std::pow(10.0, static_cast<double>(i % 40) - 20);
    const fs::path p = dir / ("m" + std::to_string(r) + "x" + std::to_string(c) + ".npy");
    write_npy(p, m);
    EXPECT_TRUE(same_bits(read_npy(p), m)) << r << "x" << c;
  }
  Matrix special(2, 3);
  special << -0.0, std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
      std::numeric_limits<double>::lowest(), std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN();
  write_npy(dir / "special.npy", special);
  EXPECT_TRUE(same_bits(read_npy(dir / "special.npy"), special));
}

TEST(Npy, VectorBecomesColumn) {
  const fs::path p = test::temp_dir("npy-vector") / "v.npy";
  Vector v(4);
  v << 1.5, -2.0, 0.0, 1e300;
  write_npy(p, v);
  Matrix m = read_npy(p);
  ASSERT_EQ(m.rows(), 4);
  ASSERT_EQ(m.cols(), 1);
  EXPECT_TRUE(same_bits(m, Matrix(v)));
  EXPECT_NE(read_file(p).find("'shape': (4,)"), std::string::npos);
}

TEST(Npy, HeaderIsPaddedTo64BytesAndWriteLeavesNoTemporaryFile) {
  const fs::path dir = test::temp_dir("npy-header");
  write_npy(dir / "a.npy", known_matrix());
  write_npy(dir / "a.npy", known_matrix());  // overwriting works too
  const std::string bytes = read_file(dir / "a.npy");
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9])
                                                                            << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_EQ(bytes.size(), 10 + header_len + 12 * sizeof(double));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(Npy, WriteIntoMissingDirectoryNamesThePath) {
  const fs::path p = test::temp_dir("npy-missing") / "no" / "such" / "dir.npy";
  try {
    write_npy(p, known_matrix());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}

TEST(Npy, HandMadeVersionsAndOrders) {
  const fs::path dir = test::temp_dir("npy-hand");
  const std::string c_header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n";
  write_npy_bytes(dir / "v1.npy", make_npy(c_header, doubles(6)));
  write_npy_bytes(dir / "v2.npy", make_npy(c_header, doubles(6), 2));
  write_npy_bytes(dir / "v3.npy", make_npy(c_header, doubles(6), 3));
  // Python 2 era headers: "L" suffixes, double quotes, no trailing comma, no padding.
  write_npy_bytes(dir / "old.npy",
             make_npy("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (2L, 3L)}", doubles(6)));
  Matrix expected(2, 3);
  expected << 0.5, 1.5, 2.5, 3.5, 4.5, 5.5;
  for (const char* name : {"v1.npy", "v2.npy", "v3.npy", "old.npy"})
    EXPECT_EQ(read_npy(dir / name), expected) << name;
  write_npy_bytes(dir / "f.npy",
             make_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", doubles(6)));
  Matrix fortran(2, 3);  // the same bytes, read column by column
  fortran << 0.5, 2.5, 4.5, 1.5, 3.5, 5.5;
  EXPECT_EQ(read_npy(dir / "f.npy"), fortran);
}

TEST(Npy, RejectsMalformedFiles) {
  const fs::path dir = test::temp_dir("npy-bad");
  auto write_and_check = [&](const std::string& name, const std::string& bytes,
                             std::initializer_list<std::string> f) {
    write_npy_bytes(dir / name, bytes);
    expect_data_error(dir / name, f);
  };
  const std::string good = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  write_and_check("magic.npy", "PK\x03\x04 this is a zip file", {"not a .npy file", "expected the magic"});
  write_and_check("empty.npy", "", {"not a .npy file"});
  write_and_check("version.npy", make_npy(good, doubles(6), 4), {"version 4.0", "expected 1.0, 2.0 or 3.0"});
  write_and_check("short_header.npy", make_npy(good, "").substr(0, 30), {"truncated header"});
  write_and_check("missing_key.npy", make_npy("{'descr': '<f8', 'shape': (2, 3), }", doubles(6)),
                  {"malformed .npy header", "missing key 'fortran_order'"});
  write_and_check("extra_key.npy",
                  make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", doubles(6)),
                  {"malformed .npy header"});
  write_and_check("garbage.npy", make_npy("descr = f8", doubles(6)),
                  {"malformed .npy header", "expected a '{'"});
  write_and_check("bad_bool.npy",
                  make_npy("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2, 3)}", doubles(6)),
                  {"malformed .npy header", "True, False"});
  write_and_check("bad_shape.npy",
                  make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3)}", doubles(6)),
                  {"malformed .npy header", "non-negative integer"});
  write_and_check("three_d.npy",
                  make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3)}", doubles(6)),
                  {"(1, 2, 3)", "expected a 1-D or 2-D array, got 3-D"});
  write_and_check("scalar.npy", make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': ()}", doubles(1)),
                  {"got 0-D"});
  write_and_check("truncated.npy", make_npy(good, doubles(5)),
                  {"truncated data", "expected 48 bytes", "got 40"});
  write_and_check("trailing.npy", make_npy(good, doubles(7)),
                  {"trailing data", "expected 48 bytes", "got 56"});
  write_and_check("f2.npy", make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3)}", doubles(2)),
                  {"unsupported dtype '<f2'", "expected '<f8' or '<f4'"});
  expect_data_error(dir / "does_not_exist.npy", {"cannot open"});
}

// Fixtures written by NumPy itself; skipped when the system Python has no NumPy.
class NumpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::run_command(std::string(kPython) + " -c 'import numpy'", nullptr) != 0)
      GTEST_SKIP() << kPython << " cannot import numpy (install python3-numpy)";
    dir_ = test::temp_dir("npy-numpy");
  }

  void python(const std::string& script) {
    const fs::path file = dir_ / "script.py";
    write_npy_bytes(file, script);
    std::string output;
    const int status =
        test::run_command(std::string(kPython) + " " + file.string() + " " + dir_.string(), &output);
    ASSERT_EQ(status, 0) << output;
    output_ = output;
  }

  fs::path dir_;
  std::string output_;
};

TEST_F(NumpyFiles, ReadsWhatNumpyWrites) {
  python(R"(import sys, numpy as np
d = sys.argv[1]
a = np.fromfunction(lambda i, j: i * 10 + j + 0.25, (3, 4))
np.save(d + '/f8.npy', a)
np.save(d + '/f4.npy', a.astype(np.float32))
np.save(d + '/fortran.npy', np.asfortranarray(a))
np.save(d + '/fortran_f4.npy', np.asfortranarray(a.astype('<f4')))
np.save(d + '/one_d.npy', np.arange(5) * 0.5)
np.save(d + '/empty.npy', np.zeros((0, 3)))
for v in [(2, 0), (3, 0)]:
    with open(d + '/v%d.npy' % v[0], 'wb') as f:
        np.lib.format.write_array(f, a, version=v)
)");
  const Matrix a = known_matrix();
  for (const char* name : {"f8.npy", "f4.npy", "fortran.npy", "fortran_f4.npy", "v2.npy", "v3.npy"})
    EXPECT_TRUE(same_bits(read_npy(dir_ / name), a)) << name;
  Matrix one_d = read_npy(dir_ / "one_d.npy");
  ASSERT_EQ(one_d.rows(), 5);
  ASSERT_EQ(one_d.cols(), 1);
  for (Index i = 0; i < 5; ++i) EXPECT_EQ(one_d(i, 0), 0.5 * static_cast<double>(i));
  Matrix empty = read_npy(dir_ / "empty.npy");
  EXPECT_EQ(empty.rows(), 0);
  EXPECT_EQ(empty.cols(), 3);
}

TEST_F(NumpyFiles, RejectsWhatKefCannotUse) {
  python(R"(import sys, numpy as np
d = sys.argv[1]
a = np.fromfunction(lambda i, j: i * 10 + j + 0.25, (3, 4))
np.save(d + '/big.npy', a.astype('>f8'))
np.save(d + '/int64.npy', np.arange(12, dtype=np.int64).reshape(3, 4))
np.save(d + '/three_d.npy', np.zeros((2, 3, 4)))
np.save(d + '/structured.npy', np.zeros(3, dtype=[('x', '<f8'), ('y', '<f8')]))
np.save(d + '/f8.npy', a)
b = open(d + '/f8.npy', 'rb').read()
open(d + '/truncated.npy', 'wb').write(b[:-5])
)");
  expect_data_error(dir_ / "big.npy", {"big-endian dtype '>f8'", "expected '<f8' or '<f4'"});
  expect_data_error(dir_ / "int64.npy", {"unsupported dtype '<i8'", "expected '<f8' or '<f4'"});
  expect_data_error(dir_ / "three_d.npy", {"(2, 3, 4)", "got 3-D"});
  expect_data_error(dir_ / "structured.npy", {"unsupported dtype [('x', '<f8')"});
  expect_data_error(dir_ / "truncated.npy", {"truncated data", "expected 96 bytes", "got 91"});
}

TEST_F(NumpyFiles, NumpyReadsWhatKefWrites) {
  write_npy(dir_ / "m.npy", known_matrix());
  Vector v(5);
  v << 0.0, 0.5, 1.0, 1.5, 2.0;
  write_npy(dir_ / "v.npy", v);
  write_npy(dir_ / "e.npy", Matrix(0, 3));
  RandomStream rng(3, "npy/numpy");
  const Matrix r = rng.normal_matrix(17, 5);
  write_npy(dir_ / "r.npy", r);
  python(R"(import sys, numpy as np
d = sys.argv[1]
m, v, e = np.load(d + '/m.npy'), np.load(d + '/v.npy'), np.load(d + '/e.npy')
exp = np.fromfunction(lambda i, j: i * 10 + j + 0.25, (3, 4))
assert m.dtype == np.float64 and m.shape == (3, 4) and (m == exp).all(), m
assert v.dtype == np.float64 and v.shape == (5,) and (v == np.arange(5) * 0.5).all(), v
assert e.shape == (0, 3), e.shape
r = np.load(d + '/r.npy')
np.save(d + '/r_fortran.npy', np.asfortranarray(r))
np.save(d + '/r_copy.npy', r.copy())
print('numpy-ok')
)");
  EXPECT_NE(output_.find("numpy-ok"), std::string::npos) << output_;
  EXPECT_TRUE(same_bits(read_npy(dir_ / "r_fortran.npy"), r));
  EXPECT_TRUE(same_bits(read_npy(dir_ / "r_copy.npy"), r));
}

}  // namespace
}  // namespace kef
