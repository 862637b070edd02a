// Defaults for fitting without a pipeline (see kef/fit_defaults.hpp).
#include "kef/fit_defaults.hpp"

#include <algorithm>
#include <cstdint>
#include <variant>

namespace kef {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool uses_part(const ComponentInfo& info, const std::string& part, bool shorthand) {
  if (shorthand) return true;
  for (const PartSpec& p : info.parts)
    if (p.name == part) return true;
  return false;
}

}  // namespace

std::vector<DefaultSetting> fit_defaults(const ComponentInfo& estimator, const std::vector<std::string>& given_tables,
                                         const std::vector<std::string>& given_keys, Index train_rows) {
  std::vector<DefaultSetting> out;
  if (uses_part(estimator, "kernel", estimator.uses_kernel) && !contains(given_tables, "kernel")) {
    out.push_back({"kernel", "type", std::string("gaussian")});
    out.push_back({"kernel", "sigma", std::string("median")});
  }
  if (uses_part(estimator, "base_measure", estimator.uses_base_measure) && !contains(given_tables, "base_measure"))
    out.push_back({"base_measure", "type", std::string("gaussian")});
  for (const KeySpec& k : estimator.keys) {
    if (k.name != "inducing_points" || contains(given_keys, k.name)) continue;
    const auto* def = std::get_if<std::int64_t>(&k.default_value);
    if (def && *def > train_rows && train_rows >= 1)
      out.push_back({"estimator", k.name, static_cast<std::int64_t>(train_rows)});
  }
  return out;
}

}  // namespace kef
