#pragma once
// Private to the run layer: a pipeline's plan (what validate builds and run executes), shared by
// pipeline.cpp and tune.cpp (the [tune] grid search).
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kef/config.hpp"
#include "kef/context.hpp"
#include "kef/data_shape.hpp"
#include "kef/dataset.hpp"
#include "kef/density_plot.hpp"
#include "kef/estimator.hpp"
#include "kef/evaluator.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"

namespace kef::pipeline_detail {

// How errors name RunOptions::threads (the command line's --threads).
inline constexpr const char* kThreadsKey = "--threads";

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct ModelPlan {
  std::string name;
  Config table;
  const ComponentInfo* info = nullptr;  // the estimator's
  EstimatorPtr estimator;
  Parts parts;  // [model.kernel], [model.base_measure], [model.sampler], ...: what the estimator declares
  // The facets the fitted model will have (Estimator::facets, else the type's declaration); empty: unknown.
  std::optional<FacetSet> facets;
  // Values the host chose for the model's keys (e.g. sigma = "median"): key, value, how.
  struct Choice {
    std::string key;
    double value;
    std::string rule;
    Json details = nullptr;  // sigma = "bkl": τ², prior, method, the profile of log L in ℓ
  };
  std::vector<Choice> choices;
  // The tuned model's fit, kept from the search (the same config and stream as a refit).
  ModelPtr prefit;
  FitReport prefit_report;
  double prefit_seconds = 0.0;
};

// [tune]: a grid over numeric keys of one model, each candidate fitted on the training split and scored
// by one evaluator on a held-out split.
struct TunePlan {
  std::string model;
  std::size_t model_index = 0;
  std::vector<std::pair<std::string, std::vector<double>>> grid;  // "kernel.sigma" -> values
  std::vector<std::vector<double>> candidates;                    // the grid's product, in order
  Config evaluate;
  EvaluatorPtr evaluator;
  std::string metric;  // the evaluator metric that scores a candidate
  bool maximize = false;
};

struct EvalPlan {
  std::string label;  // metric prefix ("" for none)
  Config table;
  const ComponentInfo* info = nullptr;
  EvaluatorPtr evaluator;
  std::vector<std::string> models;
  std::string other;  // second model of comparative evaluators
};

struct Plan {
  std::string path;
  std::vector<std::string> overrides;
  Config root;
  std::uint64_t seed = 0;
  std::unique_ptr<Registry> registry;
  Dataset data;
  // How a distributed run holds its training split: read by rows, or why every process holds it whole
  // (written to log.txt; empty for one process).
  std::string data_reading;
  DataShape shape;
  std::vector<ModelPlan> models;
  std::vector<EvalPlan> evaluations;
  std::optional<TunePlan> tune;
  fs::path output_dir;
  bool save_models = true;
  bool save_splits = false;  // [output] save_splits: data/{train,validation,test}.npy
  bool plot = false;
  DensityPlotOptions plot_options;
};

// One [[model]]: its components built and checked against the data's shape (pipeline.cpp).
ModelPlan build_model(const Plan& plan, Config m, const std::string& name);
// A metric as printed in tables and messages: 6 significant digits.
std::string format_metric(double v);

// [tune] (tune.cpp): the plan of the grid search, checked before any fit; the search itself, which
// writes the chosen values into plan.root and the winner's fit into its ModelPlan; the summary table.
TunePlan build_tune(const Plan& plan, Config t);
Json run_tuning(Plan& plan, const Context& run, std::ostream& log);
std::string tuning_table(const Json& tuning);

}  // namespace kef::pipeline_detail
