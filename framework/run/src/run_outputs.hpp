#pragma once
// The files a run writes into its staging directory besides its saved models: density.png, the
// splits (data/*.npy) and results.json. Internal to the run layer (pipeline.cpp).
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "kef/context.hpp"
#include "kef/model.hpp"
#include "pipeline_plan.hpp"

namespace kef::pipeline_detail {

// density.png of a run: the truth first (captioned with the metrics that describe it), then every model
// captioned with its held-out metrics (`models`: results.json's models table). D > 2 is skipped with a
// note in `log`, as there is no 2-D view to draw.
void write_run_plot(const Plan& plan, const std::map<std::string, ModelPtr>& fitted,
                    const nlohmann::ordered_json& models, const std::filesystem::path& staging,
                    const Context& context, std::ostream& log);

// [output] save_splits: data/{train,validation,test}.npy in data units, as `kef sample` writes draws:
// the split rows mapped back through the inverse of standardize/whiten (the source's rows up to
// rounding).
void write_splits(const Plan& plan, const std::filesystem::path& staging);

// results.json, checked when closed (a full disk is an Error, not a truncated file).
void write_results(const nlohmann::ordered_json& results, const std::filesystem::path& staging);

}  // namespace kef::pipeline_detail
