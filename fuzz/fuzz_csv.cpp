// libFuzzer target: read_csv on arbitrary bytes, with all columns and with one selected column.
#include "fuzz_common.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kef::fuzz::write_input("x.csv", {reinterpret_cast<const char*>(data), size});
  for (const std::vector<std::string>& columns :
       {std::vector<std::string>{}, std::vector<std::string>{"a"}}) {
    try {
      const kef::TableData t = kef::read_csv(path, columns);
      if (t.values.rows() < 1 || !t.values.allFinite() ||
          static_cast<std::size_t>(t.values.cols()) != t.columns.size())
        __builtin_trap();
    } catch (const kef::DataError&) {
    }
  }
  return 0;
}
