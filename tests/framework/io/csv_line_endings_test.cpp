// CSV line endings: \n, \r\n and a lone \r (classic Mac OS and some spreadsheet exports) all end a
// line. kef 0.2 read a CR-only file as one header line and reported "no data rows".
#include <gtest/gtest.h>

#include <fstream>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

fs::path write_bytes(const std::string& name, const std::string& text) {
  static const fs::path dir = test::temp_dir("csv-eol");
  return test::write_file(dir, name, text);
}

TEST(CsvLineEndings, CarriageReturnOnlyFilesAreRead) {
  TableData t = read_csv(write_bytes("cr.csv", "a,b\r1,2\r3.5,-4\r"));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.values.rows(), 2);
  EXPECT_EQ(t.values(0, 1), 2.0);
  EXPECT_EQ(t.values(1, 0), 3.5);
  EXPECT_EQ(t.values(1, 1), -4.0);

  // No final line end, trailing blank lines, a quoted header field.
  TableData u = read_csv(write_bytes("cr2.csv", "\"x\",y\r1,2\r3,4\r\r"));
  ASSERT_EQ(u.values.rows(), 2);
  EXPECT_EQ(u.values(1, 1), 4.0);
  TableData v = read_csv(write_bytes("cr3.csv", "x\r1\r2"));
  ASSERT_EQ(v.values.rows(), 2);
  EXPECT_EQ(v.values(1, 0), 2.0);
}

TEST(CsvLineEndings, AllThreeEndingsGiveTheSameTableAndTheSameLineNumbers) {
  const std::string rows[] = {"a,b", "1,2", "3,4", "5,6"};
  for (const std::string eol : {"\n", "\r\n", "\r"}) {
    std::string text;
    for (const auto& r : rows) text += r + eol;
    TableData t = read_csv(write_bytes("same.csv", text));
    ASSERT_EQ(t.values.rows(), 3);
    EXPECT_EQ(t.values(2, 1), 6.0);
    // An error on the third line is reported there whatever ends the lines.
    const fs::path bad = write_bytes("bad.csv", "a,b" + eol + "1,2" + eol + "3,x" + eol);
    try {
      read_csv(bad);
      ADD_FAILURE() << "accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kef
