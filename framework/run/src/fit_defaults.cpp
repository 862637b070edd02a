// Defaults for fitting without a pipeline (see kef/fit_defaults.hpp).
#include "kef/fit_defaults.hpp"

#include <algorithm>
#include <cstdint>
#include <variant>

namespace kef {

namespace {

constexpr std::int64_t kDefaultInducingPoints = 100;
constexpr double kDefaultValidationFraction = 0.1;

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether the estimator needs `part`: the shorthand, or a required part of that name. An optional
// part (cluster_mixture's kernel, used only by some inner estimators) gets no default.
bool uses_part(const ComponentInfo& info, const std::string& part, bool shorthand) {
  if (shorthand) return true;
  for (const PartSpec& p : info.parts)
    if (p.name == part && p.required) return true;
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
  // An estimator that early-stops on the validation split (a `patience` counted in validation
  // losses) and was given no split gets a tenth of the rows.
  for (const KeySpec& k : estimator.keys)
    if (k.name == "patience" && k.doc.find("validation") != std::string::npos &&
        !contains(given_tables, "validation"))
      out.push_back({"data", "validation", kDefaultValidationFraction});
  for (const KeySpec& k : estimator.keys) {
    if (k.name != "inducing_points" || contains(given_keys, k.name) || train_rows < 1) continue;
    const auto* def = std::get_if<std::int64_t>(&k.default_value);
    if (def) {
      if (*def > train_rows) out.push_back({"estimator", k.name, static_cast<std::int64_t>(train_rows)});
    } else if (!contains(given_keys, "inducing_points_file")) {
      // Declared without a default (the estimator needs a count or a file): a subset small enough
      // for the estimator's cubic solve whatever the data's size.
      out.push_back({"estimator", k.name, std::min<std::int64_t>(kDefaultInducingPoints, train_rows)});
    }
  }
  return out;
}

}  // namespace kef
