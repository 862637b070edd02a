// read_csv / read_table on the shipped data sets and on small files for every error path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// The benchmark data the repository ships (data/README.md): a missing file is a failure, not a skip.
fs::path data_dir() { return test::source_dir() / "data"; }

#define REQUIRE_DATA(name) \
  ASSERT_TRUE(fs::exists(data_dir() / (name))) << "missing " << (data_dir() / (name))

fs::path csv_file(const std::string& name, const std::string& text) {
  static const fs::path dir = test::temp_dir("csv");
  return test::write_file(dir, name, text);
}

// Splits one line of a plain (unquoted) CSV file, to check parsed values against the file text.
std::vector<double> numbers_of_line(const fs::path& p, int line_number) {
  std::ifstream in(p);
  std::string line;
  for (int i = 0; i < line_number; ++i) std::getline(in, line);
  std::vector<double> out;
  std::stringstream ss(line);
  std::string field;
  while (std::getline(ss, field, ',')) out.push_back(std::strtod(field.c_str(), nullptr));
  return out;
}

// Expects a DataError starting with the path and containing each fragment.
template <class F>
void expect_data_error(const fs::path& p, F&& read, std::initializer_list<std::string> fragments) {
  try {
    read();
    FAIL() << "no error reading " << p;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(p.string() + ": ", 0), 0u) << msg;
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

void expect_csv_error(const std::string& name, const std::string& text,
                      std::initializer_list<std::string> fragments,
                      const std::vector<std::string>& columns = {}) {
  const fs::path p = csv_file(name, text);
  expect_data_error(
      p, [&] { read_csv(p, columns); }, fragments);
}

TEST(CsvData, WineQualityRed) {
  REQUIRE_DATA("winequality_red.csv");
  const fs::path p = data_dir() / "winequality_red.csv";
  TableData t = read_csv(p);
  ASSERT_EQ(t.values.rows(), 1599);
  ASSERT_EQ(t.values.cols(), 12);
  EXPECT_EQ(t.columns.front(), "fixed acidity");
  EXPECT_EQ(t.columns.back(), "quality");
  for (auto [row, line] : {std::pair{0, 2}, std::pair{1598, 1600}}) {
    const std::vector<double> expected = numbers_of_line(p, line);
    ASSERT_EQ(expected.size(), 12u);
    for (Index j = 0; j < 12; ++j) EXPECT_EQ(t.values(row, j), expected[static_cast<std::size_t>(j)]) << line;
  }
  EXPECT_EQ(t.values(0, 0), 7.4);
  EXPECT_EQ(t.values(0, 11), 5.0);

  TableData sel = read_table(p, {"alcohol", "pH"});
  ASSERT_EQ(sel.columns, (std::vector<std::string>{"alcohol", "pH"}));
  EXPECT_EQ(sel.values.col(0), t.values.col(10));
  EXPECT_EQ(sel.values.col(1), t.values.col(8));
}

TEST(CsvData, ParkinsonsExponents) {
  REQUIRE_DATA("parkinsons_updrs.csv");
  TableData t = read_csv(data_dir() / "parkinsons_updrs.csv");
  EXPECT_EQ(t.values.rows(), 5875);
  ASSERT_EQ(t.values.cols(), 22);
  EXPECT_EQ(t.columns[7], "Jitter(Abs)");
  EXPECT_EQ(t.values(0, 7), 3.38e-5);
  EXPECT_EQ(t.values(1, 7), 1.68e-5);
}

TEST(CsvData, BirthwtNeedsColumns) {
  REQUIRE_DATA("birthwt.csv");
  const fs::path p = data_dir() / "birthwt.csv";
  expect_data_error(p, [&] { read_csv(p); },
                    {"column 'rowname' is not numeric", "line 2", "columns = [\"low\""});
  TableData t = read_csv(p, {"age", "lwt", "bwt"});
  ASSERT_EQ(t.values.rows(), 189);
  EXPECT_EQ(t.values.row(0), Eigen::RowVector3d(19, 182, 2523));
}

TEST(CsvData, UN3MissingValues) {
  REQUIRE_DATA("UN3.csv");
  const fs::path p = data_dir() / "UN3.csv";
  expect_data_error(p,
                    [&] {
                      read_csv(p, {"Change", "ModernC"});
                    },
                    {"line 2, column 'ModernC'", "missing value"});
}

TEST(Csv, QuotingLineEndingsAndSelection) {
  TableData t =
      read_csv(csv_file("q.csv", "\"a,b\",\"say \"\"hi\"\"\",c\r\n1,2,3\r\n4.5, -5e-3 ,6\r\n\r\n\n"));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a,b", "say \"hi\"", "c"}));
  ASSERT_EQ(t.values.rows(), 2);
  EXPECT_EQ(t.values(1, 0), 4.5);
  EXPECT_EQ(t.values(1, 1), -5e-3);

  TableData no_newline = read_csv(csv_file("nn.csv", "x,y\n1,2\n3,4"));
  EXPECT_EQ(no_newline.values.rows(), 2);
  EXPECT_EQ(no_newline.values(1, 1), 4.0);

  const fs::path names = csv_file("names.csv", "name,x,y\n\"Smith, J\",1.5,2\n\"Doe\nJr\",3,4\n");
  TableData sel = read_csv(names, {"y", "x"});
  EXPECT_EQ(sel.columns, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(sel.values.row(1), Eigen::RowVector2d(4, 3));
  expect_data_error(names, [&] { read_csv(names); },
                    {"column 'name' is not numeric", "\"Smith, J\"", "columns = [\"x\", \"y\"]"});
}

TEST(Csv, MissingValues) {
  expect_csv_error("na.csv", "a,b\n1,2\n3,NA\n", {"line 3, column 'b'", "missing value", "got NA"});
  expect_csv_error("blank_field.csv", "a,b\n1,2\n3,4\n,5\n", {"line 4, column 'a'", "got an empty field"});
  // A missing value in an unselected column is fine.
  TableData t = read_csv(csv_file("na_other.csv", "a,b\n1,NA\n2,3\n"), {"a"});
  EXPECT_EQ(t.values.rows(), 2);
}

TEST(Csv, NonFiniteValues) {
  expect_csv_error("inf.csv", "a,b\n1,2\n3,inf\n", {"line 3, column 'b'", "non-finite", "got 'inf'"});
  expect_csv_error("nan.csv", "a,b\nnan,2\n", {"line 2, column 'a'", "non-finite"}, {"a"});
  expect_csv_error("overflow.csv", "a\n1e999\n", {"line 2, column 'a'", "non-finite"});
}

// A file without a header must not lose its first row to the column names: a first line of numbers
// only is refused, and `header = false` reads every line as data with columns x0, x1, ...
TEST(Csv, HeaderOfNumbersIsRefused) {
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"0.125730,-0.124201", "'0.125730', '-0.124201'"},
      {"1,2", "'1', '2'"},
      {" 3 , 4e-2 ", "'3', '4e-2'"},
      {"-1,1e-400", "'-1', '1e-400'"},
      {"+5,.5", "'+5', '.5'"}};
  for (const auto& [header, shown] : headers)
    expect_csv_error("numeric_header.csv", header + "\n0.5,0.25\n",
                     {"line 1", "seems to have no header row", "header = false", "numbers only: " + shown});
  // Names that merely contain digits, quoted numbers (R writes names quoted) and a mixed header are names.
  EXPECT_EQ(read_csv(csv_file("h1.csv", "x1,x2\n1,2\n")).columns, (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(read_csv(csv_file("h2.csv", "\"1\",\"2\"\n1,2\n")).columns, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(read_csv(csv_file("h3.csv", "1,b\n1,2\n")).columns, (std::vector<std::string>{"1", "b"}));

  const fs::path p = csv_file("no_header.csv", "0.125730,-0.124201\n1,2\n3,4\n");
  const TableData t = read_csv(p, ColumnSelection({}, false));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"x0", "x1"}));
  ASSERT_EQ(t.values.rows(), 3);
  EXPECT_EQ(t.values(0, 0), 0.125730);
  EXPECT_EQ(t.values(2, 1), 4.0);
  const TableData x1 = read_table(p, ColumnSelection({"x1"}, false), RowRange{1, 2});
  ASSERT_EQ(x1.values.rows(), 2);
  EXPECT_EQ(x1.values(0, 0), 2.0);
  EXPECT_EQ(count_table_rows(p, false), 3);
  expect_data_error(p, [&] { count_table_rows(p); }, {"seems to have no header row"});
  EXPECT_EQ(read_table_rows(p, ColumnSelection({}, false), {0, 2}).values(1, 0), 3.0);
  std::vector<double> firsts;
  visit_table_rows(p, ColumnSelection({}, false), nullptr,
                   [&](Index, const double* row) { firsts.push_back(row[0]); });
  EXPECT_EQ(firsts, (std::vector<double>{0.125730, 1, 3}));
  expect_data_error(p, [&] { read_csv(p, ColumnSelection({"a"}, false)); },
                    {"no column named 'a'", "'x0', 'x1'"});
  const fs::path ragged = csv_file("no_header_ragged.csv", "1,2\n3\n");
  expect_data_error(ragged, [&] { read_csv(ragged, ColumnSelection({}, false)); },
                    {"line 2", "wrong number of fields"});
}

// strtod reads hexadecimal (0x10 = 16, 0x1p3 = 8): not what a data file means by "0x10".
TEST(Csv, HexadecimalValuesAreRefused) {
  expect_csv_error("hex.csv", "a,b\n1,0x10\n", {"line 2, column 'b'", "hexadecimal value", "got '0x10'"});
  expect_csv_error("hex_float.csv", "a\n2\n-0X1p3\n", {"line 3, column 'a'", "hexadecimal"}, {"a"});
  EXPECT_EQ(read_csv(csv_file("not_hex.csv", "a\n0\n0.5\n-0e1\n")).values(1, 0), 0.5);
}

// A value too small for a double is read as 0, with one warning naming where the first one is.
TEST(Csv, UnderflowWarnsOnce) {
  const fs::path p = csv_file("underflow.csv", "a,b\n1,2\n3,1e-400\n-1e-999,4\n0e-400,5\n");
  testing::internal::CaptureStderr();
  const TableData t = read_csv(p);
  read_csv(p);  // once per file
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(t.values(1, 1), 0.0);
  EXPECT_EQ(t.values(2, 0), 0.0);
  EXPECT_TRUE(test::contains(err, "warning: " + p.string() + ": line 3, column 'b': '1e-400'")) << err;
  EXPECT_TRUE(test::contains(err, "read as 0")) << err;
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << err;
  testing::internal::CaptureStderr();
  read_csv(csv_file("no_underflow.csv", "a\n0e-400\n4.9e-324\n"));  // exact zero; the smallest subnormal
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Csv, StructuralErrors) {
  expect_csv_error("ragged.csv", "a,b\n1,2\n3,4,5\n",
                   {"line 3", "wrong number of fields", "expected 2", "got 3"});
  expect_csv_error("short.csv", "a,b,c\n1,2,3\n4,5\n", {"line 3", "expected 3", "got 2"});
  expect_csv_error("empty.csv", "", {"file is empty"});
  expect_csv_error("newlines.csv", "\n\n", {"file is empty"});
  expect_csv_error("header_only.csv", "a,b\n", {"no data rows"});
  expect_csv_error("header_only_nonl.csv", "a,b", {"no data rows"});
  expect_csv_error("gap.csv", "a,b\n1,2\n\n3,4\n", {"line 3 is empty"});
  expect_csv_error("unterminated.csv", "a,b\n1,\"2\n", {"line 2", "unterminated quoted field"});
  const fs::path missing = data_dir() / "no_such_file.csv";
  expect_data_error(missing, [&] { read_csv(missing); }, {"file not found"});
}

TEST(Csv, ColumnErrors) {
  expect_csv_error("unknown.csv", "alpha,beta\n1,2\n", {"no column named 'gamma'", "'alpha', 'beta'"},
                   {"gamma"});
  expect_csv_error("text.csv", "a,b\n1,x\n2,y\n",
                   {"column 'b' is not numeric", "line 2", "got 'x'", "columns = [\"a\"]"});
  expect_csv_error("text_selected.csv", "a,b\n1,2\n2,1.5x\n",
                   {"line 3, column 'b'", "not a number", "'1.5x'"}, {"b"});
  expect_csv_error("twice.csv", "a,b\n1,2\n", {"selected twice"}, {"a", "a"});
  // The text column is reported before the missing value it would otherwise hide behind.
  expect_csv_error("both.csv", "id,v\n\"r1\",NA\n\"r2\",2\n", {"column 'id' is not numeric"});
  try {
    read_csv(csv_file("status.csv", "a\nNA\n"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 2);
    EXPECT_STREQ(e.kind(), "data error");
  }
}

TEST(Table, NpyColumnsAndErrors) {
  Matrix m(3, 3);
  m << 1, 2, 3, 4, 5, 6, 7, 8, 9;
  const fs::path p = csv_file("t.npy", "");
  write_npy(p, m);
  TableData all = read_table(p);
  EXPECT_EQ(all.columns, (std::vector<std::string>{"x0", "x1", "x2"}));
  EXPECT_EQ(all.values, m);
  TableData sel = read_table(p, {"x2", "x0"});
  EXPECT_EQ(sel.values.col(0), m.col(2));
  EXPECT_EQ(sel.values.col(1), m.col(0));
  expect_data_error(p, [&] { read_table(p, {"x3"}); }, {"no column named 'x3'", "x0 .. x2"});

  m(1, 2) = std::numeric_limits<double>::quiet_NaN();
  const fs::path bad = csv_file("nan.npy", "");
  write_npy(bad, m);
  expect_data_error(bad, [&] { read_table(bad); }, {"row 1 (0-based), column 'x2'", "non-finite"});
  EXPECT_EQ(read_table(bad, {"x0"}).values.rows(), 3);  // unselected columns are not checked

  const fs::path empty = csv_file("empty.npy", "");
  write_npy(empty, Matrix(0, 2));
  expect_data_error(empty, [&] { read_table(empty); }, {"no data rows"});

  const fs::path txt = csv_file("t.txt", "a\n1\n");
  expect_data_error(txt, [&] { read_table(txt); },
                    {"unsupported file type '.txt'", "expected a .csv or .npy"});
  EXPECT_EQ(read_table(csv_file("UPPER.CSV", "a\n1\n")).values(0, 0), 1.0);
}

}  // namespace
}  // namespace kef
