// Reading a file by row ranges (read_table with a RowRange, read_npy_rows, count_table_rows): every
// range is checked against the same rows of the whole read (the brute-force twin), for every NPY layout
// and for CSV files larger than the reader's buffer, with the errors a range can and cannot see.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

fs::path dir() {
  static const fs::path d = test::temp_dir("row_range");
  return d;
}

fs::path rows_file(const std::string& name, const std::string& bytes) {
  return test::write_file(dir(), name, bytes);
}

// A .npy file of `m` in the given dtype ('<f8' or '<f4') and order, written by hand (write_npy only
// writes C-order float64).
fs::path npy_file(const std::string& name, const Matrix& m, bool f4, bool fortran, bool one_d = false) {
  std::string shape = one_d ? "(" + std::to_string(m.rows()) + ",)"
                            : "(" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + ")";
  std::string header = std::string("{'descr': '") + (f4 ? "<f4" : "<f8") +
                       "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  auto put = [&](double v) {
    if (f4) {
      const auto f = static_cast<float>(v);
      bytes.append(reinterpret_cast<const char*>(&f), 4);
    } else {
      bytes.append(reinterpret_cast<const char*>(&v), 8);
    }
  };
  if (fortran || one_d) {
    for (Index j = 0; j < m.cols(); ++j)
      for (Index i = 0; i < m.rows(); ++i) put(m(i, j));
  } else {
    for (Index i = 0; i < m.rows(); ++i)
      for (Index j = 0; j < m.cols(); ++j) put(m(i, j));
  }
  return rows_file(name, bytes);
}

Matrix random_matrix(Index rows, Index cols, std::uint64_t seed) {
  RandomStream rng(seed, "row_range_test");
  Matrix m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = rng.normal() * 10.0;
  return m;
}

Matrix columns_of(const Matrix& m, const std::vector<Index>& cols) {
  Matrix out(m.rows(), static_cast<Index>(cols.size()));
  for (std::size_t s = 0; s < cols.size(); ++s) out.col(static_cast<Index>(s)) = m.col(cols[s]);
  return out;
}

void expect_bitwise(const Matrix& got, const Matrix& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  for (Index i = 0; i < got.rows(); ++i)
    for (Index j = 0; j < got.cols(); ++j)
      ASSERT_EQ(std::memcmp(&got(i, j), &want(i, j), sizeof(double)), 0)
          << what << ": (" << i << ", " << j << ") " << got(i, j) << " vs " << want(i, j);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.kind()) + ": " + e.what();
  }
  return "";
}

TEST(NpyRanges, EveryRangeOfEveryLayoutIsTheSameRowsOfTheWholeRead) {
  const Matrix m = random_matrix(7, 3, 1);
  struct Layout {
    const char* name;
    bool f4, fortran, one_d;
  };
  for (const Layout& l : {Layout{"c_f8.npy", false, false, false}, Layout{"fortran_f8.npy", false, true, false},
                          Layout{"c_f4.npy", true, false, false}, Layout{"fortran_f4.npy", true, true, false},
                          Layout{"one_d.npy", false, false, true}}) {
    const Matrix data = l.one_d ? Matrix(m.leftCols(1)) : m;
    const fs::path p = npy_file(l.name, data, l.f4, l.fortran, l.one_d);
    const Matrix whole = read_npy(p);
    ASSERT_EQ(whole.rows(), 7);
    ASSERT_EQ(whole.cols(), data.cols());
    if (!l.f4) expect_bitwise(whole, data, l.name);
    const NpyLayout layout = read_npy_layout(p);
    EXPECT_EQ(layout.rows, 7);
    EXPECT_EQ(layout.column_major, l.fortran || l.one_d);
    EXPECT_EQ(count_table_rows(p), 7);
    std::vector<std::vector<Index>> selections = {{}};
    if (!l.one_d) selections = {{}, {2, 0}, {1}};
    for (const auto& cols : selections)
      for (Index first = 0; first <= 7; ++first)
        for (Index count = 0; first + count <= 7; ++count) {
          const std::string what = std::string(l.name) + " rows [" + std::to_string(first) + ", " +
                                   std::to_string(first + count) + ") of " + std::to_string(cols.size()) +
                                   " columns";
          const Matrix want = cols.empty() ? whole : columns_of(whole, cols);
          expect_bitwise(read_npy_rows(p, layout, first, count, cols), want.middleRows(first, count), what);
          if (count == 0) continue;
          std::vector<std::string> names;
          for (Index j : cols) names.push_back("x" + std::to_string(j));
          const TableData t = read_table(p, names, RowRange{first, count});
          expect_bitwise(t.values, want.middleRows(first, count), what + " (read_table)");
        }
    // count < 0: every row from `first`.
    expect_bitwise(read_table(p, {}, RowRange{3, -1}).values, whole.bottomRows(4), l.name);
  }
}

TEST(NpyRanges, RangesLargerThanTheBufferInBothOrders) {
  // 200 000 x 3 doubles are 4.8 MB, several of the reader's 1 MiB chunks.
  const Matrix m = random_matrix(200000, 3, 2);
  for (bool fortran : {false, true}) {
    const fs::path p = npy_file(fortran ? "big_fortran.npy" : "big_c.npy", m, false, fortran);
    const NpyLayout layout = read_npy_layout(p);
    for (auto [first, count] : {std::pair<Index, Index>{0, 200000}, {12345, 150000}, {131071, 3}, {199999, 1}}) {
      expect_bitwise(read_npy_rows(p, layout, first, count), m.middleRows(first, count),
                     std::string(fortran ? "fortran" : "C") + " rows from " + std::to_string(first));
      expect_bitwise(read_npy_rows(p, layout, first, count, {2}), m.col(2).segment(first, count),
                     "column x2 from " + std::to_string(first));
    }
  }
}

TEST(NpyRanges, ARangeSeesOnlyItsOwnValuesAndNamesTheFileRow) {
  Matrix m = random_matrix(9, 2, 3);
  m(5, 1) = std::numeric_limits<double>::quiet_NaN();
  const fs::path p = npy_file("nan_row5.npy", m, false, false);
  EXPECT_NO_THROW(read_table(p, {}, RowRange{0, 5}));
  EXPECT_NO_THROW(read_table(p, {}, RowRange{6, 3}));
  EXPECT_NO_THROW(read_table(p, {"x0"}, RowRange{0, 9}));  // the NaN is in x1
  const std::string e = error_of([&] { read_table(p, {}, RowRange{4, 3}); });
  EXPECT_EQ(e.rfind("data error: ", 0), 0u) << e;
  EXPECT_NE(e.find("row 5 (0-based), column 'x1': non-finite value"), std::string::npos) << e;
  EXPECT_EQ(e, error_of([&] { read_table(p); }));  // the whole read names the same row
  const std::string beyond = error_of([&] { read_table(p, {}, RowRange{8, 2}); });
  EXPECT_NE(beyond.find("rows [8, 10) requested of a file of 9 data rows"), std::string::npos) << beyond;
}

// A CSV file whose label column is quoted and holds commas, quotes and line breaks, with mixed line
// endings and trailing blank lines: the numeric columns selected by name.
std::string awkward_csv(const Matrix& m) {
  std::string text = "\xEF\xBB\xBF" "a,label,b\r\n";
  char buf[64];
  for (Index i = 0; i < m.rows(); ++i) {
    std::snprintf(buf, sizeof buf, "%.17g", m(i, 0));
    text += buf;
    text += i % 3 == 0 ? ",\"multi\r\nline, \"\"quoted\"\"\nlabel\"," : ", plain ,";
    std::snprintf(buf, sizeof buf, "%.17g", m(i, 1));
    text += buf;
    text += i % 2 == 0 ? "\n" : "\r\n";
  }
  return text + "\n\r\n";
}

TEST(CsvRanges, EveryRangeIsTheSameRowsOfTheWholeRead) {
  const Matrix m = random_matrix(8, 2, 4);
  const fs::path p = rows_file("awkward.csv", awkward_csv(m));
  const TableData whole = read_table(p, {"a", "b"});
  expect_bitwise(whole.values, m, "whole read");
  EXPECT_EQ(count_table_rows(p), 8);
  for (Index first = 0; first < 8; ++first)
    for (Index count = 1; first + count <= 8; ++count) {
      const TableData t = read_table(p, {"b", "a"}, RowRange{first, count});
      expect_bitwise(t.values, columns_of(whole.values, {1, 0}).middleRows(first, count),
                     "rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ")");
      EXPECT_EQ(t.columns, (std::vector<std::string>{"b", "a"}));
    }
}

TEST(CsvRanges, FilesLargerThanTheReadBufferAreReadAsWrittenInAnyRange) {
  // About 1.3 MB: twenty of the reader's 64 KiB buffers, so records and quoted fields straddle them.
  const Matrix m = random_matrix(25000, 2, 5);
  const fs::path p = rows_file("large.csv", awkward_csv(m));
  expect_bitwise(read_table(p, {"a", "b"}).values, m, "whole read");
  EXPECT_EQ(count_table_rows(p), 25000);
  for (auto [first, count] : {std::pair<Index, Index>{0, 1}, {777, 13001}, {24999, 1}, {16384, 5}})
    expect_bitwise(read_table(p, {"a", "b"}, RowRange{first, count}).values, m.middleRows(first, count),
                   "rows from " + std::to_string(first));
}

TEST(CsvRanges, ValuesAreCheckedInTheRangeAndStructureUpToItsEnd) {
  // Data row 4 (line 7: the header is line 1) has a missing value; data row 2 (line 4) a quoted label
  // spanning two lines.
  const std::string text = "x,label,y\n1,a,2\n3,b,4\n5,\"c\nd\",6\n7,e,8\n9,f,NA\n11,g,12\n";
  const fs::path p = rows_file("ranges_errors.csv", text);
  EXPECT_EQ(count_table_rows(p), 6);  // values are not parsed to count rows
  EXPECT_NO_THROW(read_table(p, {"y"}, RowRange{0, 4}));
  EXPECT_NO_THROW(read_table(p, {"x", "y"}, RowRange{5, 1}));
  const std::string e = error_of([&] { read_table(p, {"x", "y"}, RowRange{3, 2}); });
  EXPECT_NE(e.find("line 7, column 'y': missing value"), std::string::npos) << e;
  EXPECT_EQ(e, error_of([&] { read_table(p, {"x", "y"}); }));
  // A record with the wrong number of fields before the range is seen by the scan that finds it.
  const fs::path q = rows_file("ranges_structure.csv", "x,y\n1,2\n3\n5,6\n7,8\n");
  const std::string s = error_of([&] { read_table(q, {}, RowRange{2, 1}); });
  EXPECT_NE(s.find("line 3: wrong number of fields"), std::string::npos) << s;
  const std::string c = error_of([&] { count_table_rows(q); });
  EXPECT_EQ(c, s);
  // ... but not after it: the scan stops at the range's end.
  EXPECT_NO_THROW(read_table(rows_file("late_structure.csv", "x,y\n1,2\n3,4\n5\n"), {}, RowRange{0, 2}));
  const std::string beyond = error_of([&] { read_table(p, {}, RowRange{4, 5}); });
  EXPECT_NE(beyond.find("rows [4, 9) requested of a file of 6 data rows"), std::string::npos) << beyond;
}

// Rows by list: every kept row equals the whole read's, from every layout, with runs and scattered rows.
TEST(RowLists, ListedRowsAreTheWholeReadsRowsInEveryFormat) {
  const Matrix m = random_matrix(30000, 3, 6);
  std::vector<Index> rows;
  RandomStream pick(7, "rows");
  for (Index i = 0; i < 30000; ++i)
    if (i < 40 || (i > 9000 && i < 9100) || pick.uniform() < 0.01 || i == 29999) rows.push_back(i);
  const fs::path csv = rows_file("list.csv", awkward_csv(m.leftCols(2)));
  for (const fs::path& p : {npy_file("list_c.npy", m, false, false), npy_file("list_f.npy", m, false, true),
                            npy_file("list_f4.npy", m, true, false), csv}) {
    const bool is_csv = p.extension() == ".csv";
    const std::vector<std::string> cols = is_csv ? std::vector<std::string>{"b", "a"}
                                                 : std::vector<std::string>{"x2", "x0"};
    const Matrix whole = read_table(p, cols).values;
    const TableData t = read_table_rows(p, cols, rows);
    ASSERT_EQ(t.values.rows(), static_cast<Index>(rows.size()));
    EXPECT_EQ(t.columns, cols);
    for (std::size_t k = 0; k < rows.size(); ++k)
      expect_bitwise(t.values.row(static_cast<Index>(k)), whole.row(rows[k]),
                     p.filename().string() + " row " + std::to_string(rows[k]));
    EXPECT_EQ(read_table_rows(p, cols, {}).values.rows(), 0);
    const std::string beyond = error_of([&] { read_table_rows(p, cols, {5, 30000}); });
    EXPECT_NE(beyond.find("row 30000 (0-based) requested of a file of 30000 data rows"), std::string::npos)
        << beyond;
    const std::string unordered = error_of([&] { read_table_rows(p, cols, {5, 5}); });
    EXPECT_NE(unordered.find("must be increasing"), std::string::npos) << unordered;
  }
}

// The visitor sees the same rows, in file order, as the reads that return them, in bounded pieces.
TEST(RowVisits, VisitedRowsAreTheReadRowsInFileOrder) {
  const Matrix m = random_matrix(70000, 3, 9);  // more than one of the NPY visitor's 1 MiB pieces
  std::vector<Index> rows;
  for (Index i = 5; i < 70000; i += 3) rows.push_back(i);
  for (const fs::path& p : {npy_file("visit_c.npy", m, false, false), npy_file("visit_f.npy", m, false, true),
                            rows_file("visit.csv", awkward_csv(m.leftCols(2)))}) {
    const bool is_csv = p.extension() == ".csv";
    const std::vector<std::string> cols = is_csv ? std::vector<std::string>{"b", "a"}
                                                 : std::vector<std::string>{"x2", "x0"};
    const std::vector<Index>* const lists[] = {nullptr, &rows};
    for (const std::vector<Index>* list : lists) {
      const Matrix want = list ? read_table_rows(p, cols, *list).values : read_table(p, cols).values;
      Matrix got(want.rows(), want.cols());
      Index next = 0;
      const auto names = visit_table_rows(p, cols, list, [&](Index k, const double* row) {
        ASSERT_EQ(k, next++);
        for (Index j = 0; j < got.cols(); ++j) got(k, j) = row[j];
      });
      EXPECT_EQ(names, cols);
      EXPECT_EQ(next, want.rows());
      expect_bitwise(got, want, p.filename().string() + (list ? " (list)" : " (all rows)"));
    }
  }
}

TEST(RowLists, OnlyTheListedRowsValuesAreChecked) {
  Matrix m = random_matrix(50, 2, 8);
  m(20, 0) = std::numeric_limits<double>::infinity();
  const fs::path p = npy_file("list_inf.npy", m, false, false);
  EXPECT_NO_THROW(read_table_rows(p, {}, {3, 19, 21, 49}));
  const std::string e = error_of([&] { read_table_rows(p, {}, {3, 20, 21}); });
  EXPECT_NE(e.find("row 20 (0-based), column 'x0': non-finite value"), std::string::npos) << e;
  const fs::path q = rows_file("list_na.csv", "x,y\n1,2\n3,NA\n5,6\n");
  EXPECT_NO_THROW(read_table_rows(q, {}, {0, 2}));
  const std::string c = error_of([&] { read_table_rows(q, {}, {1}); });
  EXPECT_NE(c.find("line 3, column 'y': missing value"), std::string::npos) << c;
}

}  // namespace
}  // namespace kef
