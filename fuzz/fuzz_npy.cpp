// libFuzzer target: read_npy on arbitrary bytes. A kef::DataError is the expected way to refuse an
// input; any other exception, a crash or a sanitizer report is a finding. (NaN and inf are valid
// float64 payloads here: the callers that need finite data, such as read_table, check them.)
#include "fuzz_common.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // A directory, FIFO or device (fuzz_common.hpp) is refused before it is opened.
  if (const auto irregular = kef::fuzz::irregular_input("irregular.npy", bytes); !irregular.empty()) {
    try {
      (void)kef::read_npy(irregular);
    } catch (const kef::DataError&) {
      return 0;
    }
    __builtin_trap();
  }
  const auto path = kef::fuzz::write_input("x.npy", bytes);
  try {
    const kef::Matrix m = kef::read_npy(path);
    // The array cannot hold more values than the file has bytes for.
    if (static_cast<std::size_t>(m.size()) > size) __builtin_trap();
  } catch (const kef::DataError&) {
  }
  return 0;
}
