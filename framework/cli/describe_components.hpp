#pragma once
// What `kef plugins --describe TYPE` prints and what `kef plugins --json` lists (the manual's component
// reference is generated from the latter): both are built from the same per-key texts, so the
// command and the manual say the same thing about every key.
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "kef/component_info.hpp"
#include "kef/config.hpp"
#include "kef/registry.hpp"

namespace kef_cli {

// One declared key as users read it. `default_text` is "required" for a key that must be given and
// "none" for one that may be left out without a default; `range` is empty when the key has no bounds.
struct KeyText {
  std::string name;
  std::string kind;  // "a number", "an integer", ...
  std::string default_text;
  std::string range;    // ">= 1, <= 1e+12", "> 0", ...
  std::string choices;  // "gaussian, imq" when the key takes one of a few strings
  std::string doc;
};

KeyText key_text(const kef::KeySpec& key);

// The text block of one component (`kef plugins --describe`).
void print_component(std::ostream& out, const std::string& interface, const kef::ComponentInfo& info);

// Every loaded plugin and every registered component with its parts, facets and keys, as JSON.
nlohmann::ordered_json components_json(const kef::Registry& registry);

}  // namespace kef_cli
