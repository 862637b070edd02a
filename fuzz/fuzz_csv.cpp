// libFuzzer target: read_csv on arbitrary bytes, with all columns, with one selected column and without
// a header (header = false), and on files that are not regular files (fuzz_common.hpp). A header of
// numbers only must be refused, never dropped: no file reads both with a header and without one (its
// first line would be names one way and a data row the other).
#include "fuzz_common.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (const auto irregular = kef::fuzz::irregular_input("irregular.csv", bytes); !irregular.empty()) {
    try {
      (void)kef::read_csv(irregular);
    } catch (const kef::DataError&) {
      return 0;
    }
    __builtin_trap();  // read as data
  }
  const auto path = kef::fuzz::write_input("x.csv", bytes);
  kef::Index with_header = -1, without_header = -1;
  for (const kef::ColumnSelection& columns :
       {kef::ColumnSelection{}, kef::ColumnSelection{"a"}, kef::ColumnSelection({}, false)}) {
    try {
      const kef::TableData t = kef::read_csv(path, columns);
      if (t.values.rows() < 1 || !t.values.allFinite() ||
          static_cast<std::size_t>(t.values.cols()) != t.columns.size())
        __builtin_trap();
      if (columns.header && columns.names.empty()) with_header = t.values.rows();
      if (!columns.header) without_header = t.values.rows();
    } catch (const kef::DataError&) {
    }
  }
  if (with_header >= 0 && without_header >= 0) __builtin_trap();
  return 0;
}
