#pragma once
// A model and its metrics in the units of the user's data, through the DataTransform
// (kef/data_transform.hpp) a pipeline's standardize/whiten applied before fitting.
#include <string>
#include <utility>
#include <vector>

#include "kef/data_transform.hpp"
#include "kef/model.hpp"

namespace kef {

// The density of the data x when `model` is the density of z = A x + offset (see above): log p~,
// score, normaliser, support and exact sampling carried through the map. Not savable itself: save the
// model-space model with its transform (save_model in model_archive.hpp).
ModelPtr make_data_units_model(ModelPtr model, const DataTransform& transform);

// Log-likelihood-valued metrics are those named `log_likelihood` or ending in `_log_likelihood`
// (after any `label.` prefix). For a non-identity transform, each is reported in data units under its
// own name (+ log|det A|), followed by its model-space value under NAME_<model space> (e.g.
// log_likelihood_standardized); every other metric is unchanged. `spaces` receives, per returned
// metric, the space it is in: "data" or transform.model_space().
// Log-likelihoods of a conditional density, named `conditional_log_likelihood` or ending in it, change
// by the target block's log|det A_y| (DataTransform::target_log_abs_det) instead of log|det A|.
bool is_log_likelihood_metric(const std::string& name);
bool is_conditional_log_likelihood_metric(const std::string& name);
std::vector<std::pair<std::string, double>> metrics_in_data_units(
    const std::vector<std::pair<std::string, double>>& metrics, const DataTransform& transform,
    std::vector<std::pair<std::string, std::string>>* spaces = nullptr);

}  // namespace kef
