// libFuzzer target: read_npy on arbitrary bytes. A kef::DataError is the expected way to refuse an
// input; any other exception, a crash or a sanitizer report is a finding.
#include "fuzz_common.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kef::fuzz::write_input("x.npy", {reinterpret_cast<const char*>(data), size});
  try {
    const kef::Matrix m = kef::read_npy(path);
    // Whatever is accepted must be finite (the reader refuses NaN and inf).
    if (!m.allFinite()) __builtin_trap();
  } catch (const kef::DataError&) {
  }
  return 0;
}
