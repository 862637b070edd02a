#include "describe_components.hpp"

#include <cmath>
#include <ostream>

#include "kef/number_text.hpp"

namespace kef_cli {

namespace {

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

}  // namespace

KeyText key_text(const kef::KeySpec& key) {
  KeyText t{key.name, kef::to_string(key.kind), key.default_text(), "", joined(key.choices, ", "), key.doc};
  if (std::isfinite(key.min)) t.range = (key.min_exclusive ? "> " : ">= ") + kef::number_text(key.min);
  if (std::isfinite(key.max)) t.range += (t.range.empty() ? "<= " : ", <= ") + kef::number_text(key.max);
  return t;
}

void print_component(std::ostream& out, const std::string& interface, const kef::ComponentInfo& info) {
  out << interface << "/" << info.type << "  (plugin " << info.plugin << ")\n  " << info.summary << "\n";
  if (!info.reference.empty()) out << "  reference: " << info.reference << "\n";
  if (!info.deprecated_aliases.empty())
    out << "  deprecated names: " << joined(info.deprecated_aliases, ", ") << "\n";
  for (const auto& part : info.all_parts())
    out << "  part [model." << part.name << "]: " << part.interface << (part.required ? "" : " (optional)")
        << (part.doc.empty() ? "" : ", " + part.doc) << "\n";
  if (!info.facets.empty())
    out << "  " << (interface == "evaluator" ? "needs" : "models have") << ": " << info.facets.text() << "\n";
  if (info.keys.empty()) out << "  keys: none besides `type`\n";
  for (const auto& key : info.keys) {
    const KeyText t = key_text(key);
    out << "  " << t.name << " (" << t.kind << ", default " << t.default_text << ")";
    if (!t.range.empty()) out << " range " << t.range;
    if (!t.choices.empty()) out << " one of " << t.choices;
    out << "\n      " << t.doc << "\n";
  }
}

nlohmann::ordered_json components_json(const kef::Registry& registry) {
  nlohmann::ordered_json j;
  j["kef_version"] = kef::version();
  j["plugins"] = nlohmann::ordered_json::array();
  for (const auto& p : registry.plugins()) {
    if (p.status != kef::PluginRecord::Status::Loaded) continue;
    j["plugins"].push_back({{"name", p.name}, {"version", p.version}, {"summary", p.summary}});
  }
  j["components"] = nlohmann::ordered_json::array();
  for (const auto& interface : registry.interfaces()) {
    for (const auto& info : registry.components(interface)) {
      nlohmann::ordered_json c{{"interface", interface}, {"type", info.type},       {"plugin", info.plugin},
                               {"summary", info.summary}, {"reference", info.reference}};
      c["deprecated_aliases"] = joined(info.deprecated_aliases, ", ");
      c["parts"] = nlohmann::ordered_json::array();
      for (const auto& part : info.all_parts())
        c["parts"].push_back(
            {{"name", part.name}, {"interface", part.interface}, {"required", part.required}, {"doc", part.doc}});
      c["facets"] = info.facets.empty() ? "" : info.facets.text();
      c["facets_role"] = interface == "evaluator" ? "needs" : "models have";
      c["keys"] = nlohmann::ordered_json::array();
      for (const auto& key : info.keys) {
        const KeyText t = key_text(key);
        c["keys"].push_back({{"name", t.name},
                             {"kind", t.kind},
                             {"default", t.default_text},
                             {"required", key.required},
                             {"range", t.range},
                             {"choices", t.choices},
                             {"doc", t.doc}});
      }
      j["components"].push_back(std::move(c));
    }
  }
  return j;
}

}  // namespace kef_cli
