// Defaults for fitting without a pipeline (see kef/fit_defaults.hpp).
#include "kef/fit_defaults.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <variant>

namespace kef {

namespace {

constexpr std::int64_t kDefaultInducingPoints = 100;
constexpr double kDefaultValidationFraction = 0.1;
// A mandatory inner estimator's default: few requirements on the data, an exact normaliser.
constexpr const char* kDefaultInnerEstimator = "gaussian_fit";

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

std::vector<DefaultSetting> fit_defaults(const ComponentInfo& estimator,
                                         const std::vector<std::string>& given_tables,
                                         const std::vector<std::string>& given_keys, Index train_rows) {
  std::vector<DefaultSetting> out;
  if (uses_part(estimator, "kernel", estimator.uses_kernel) && !contains(given_tables, "kernel")) {
    out.push_back({"kernel", "type", std::string("gaussian")});
    out.push_back({"kernel", "sigma", std::string("median")});
  }
  if (uses_part(estimator, "base_measure", estimator.uses_base_measure) &&
      !contains(given_tables, "base_measure"))
    out.push_back({"base_measure", "type", std::string("gaussian")});
  // An estimator that early-stops on the validation split (a `patience` counted in validation
  // losses) and was given no split gets a tenth of the rows.
  for (const KeySpec& k : estimator.keys)
    if (k.name == "patience" && k.doc.find("validation") != std::string::npos &&
        !contains(given_tables, "validation")) {
      out.push_back({"data", "validation", kDefaultValidationFraction});
      // The counts below are capped by the rows left to train on (rounded as [data]'s split rounds).
      train_rows -=
          static_cast<Index>(std::llround(kDefaultValidationFraction * static_cast<double>(train_rows)));
    }
  // Mandatory counts and inner estimator, minibatches and solver (kef/fit_defaults.hpp says why).
  for (const KeySpec& k : estimator.keys) {
    if (contains(given_keys, k.name)) continue;
    const bool no_default = std::holds_alternative<std::monostate>(k.default_value);
    if ((k.name == "components" || k.name == "clusters") && k.required && no_default)
      out.push_back({"estimator", k.name, std::int64_t{1}});
    if (k.name == "inner" && k.required && k.kind == ValueKind::Table)
      out.push_back({"estimator.inner", "type", std::string(kDefaultInnerEstimator)});
    if ((k.name == "batch_fit" || k.name == "batch_loss") && train_rows >= 2) {
      const auto* def = std::get_if<std::int64_t>(&k.default_value);
      const std::int64_t half = train_rows / 2;
      if (def && *def > half) out.push_back({"estimator", k.name, half});
    }
    // The pseudo-inverse solves the singular systems of near-duplicate rows (kef/fit_defaults.hpp).
    const auto* declared = std::get_if<std::string>(&k.default_value);
    if (k.name == "solver" && contains(k.choices, "pinv") && !(declared && *declared == "pinv"))
      out.push_back({"estimator", k.name, std::string("pinv")});
  }
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
