// libFuzzer target: TOML pipeline text through Config (the nesting bound, TOML++, the conversions
// `kef run` makes when it writes results.json and model.toml), and Config::parse_file on files that are
// not regular files (fuzz_common.hpp), which it must refuse at once.
#include <string>

#include "fuzz_common.hpp"
#include "kef/config.hpp"
#include "kef/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (const auto irregular = kef::fuzz::irregular_input("irregular.toml", text); !irregular.empty()) {
    try {
      (void)kef::Config::parse_file(irregular.string());
    } catch (const kef::ConfigError&) {
      return 0;
    }
    __builtin_trap();  // read as a pipeline
  }
  try {
    kef::Config c = kef::Config::parse_string(text, "fuzz.toml");
    (void)c.to_json(false);
    (void)c.to_toml(false);
    // Reparsing what kef writes must succeed.
    (void)kef::Config::parse_string(c.to_toml(false), "fuzz-roundtrip.toml");
  } catch (const kef::ConfigError&) {
  }
  return 0;
}
