// libFuzzer target: TOML pipeline text through Config (the nesting bound, TOML++, the conversions
// `kef run` makes when it writes results.json and model.toml).
#include <string>

#include "kef/config.hpp"
#include "kef/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
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
