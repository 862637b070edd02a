#pragma once
// Defaults for fitting one model to a data set without a pipeline (the Python estimators; a `kef fit
// DATA` command would use the same): what to add to the tables a user gave, chosen from the
// estimator's declarations and the number of training rows, so that an estimator named alone fits
// any data it can fit:
//  - an estimator that uses a kernel and was given none gets kernel/gaussian with sigma = "median"
//    (the pipeline's median heuristic on the training rows);
//  - one that uses a base measure and was given none gets base_measure/gaussian (its declared keys'
//    defaults);
//  - a declared `inducing_points` default larger than the training rows is lowered to their number;
//    a count declared without a default (the estimator takes a count or a file) is min(100, rows);
//  - an estimator that early-stops on the validation split (a `patience` key counted in validation
//    losses) and was given no split ("validation" not among the given tables) gets a tenth of the
//    rows as its validation split ([data] split.validation, table "data", key "validation").
#include <string>
#include <vector>

#include "kef/component_info.hpp"
#include "kef/config.hpp"
#include "kef/types.hpp"

namespace kef {

struct DefaultSetting {
  std::string table;   // "estimator", "kernel", "base_measure", "data"
  std::string key;     // "type", "sigma", "inducing_points", ...
  DefaultValue value;  // what to set
};

// `given_tables`: the names of the tables the user gave ("kernel", "base_measure"); `given_keys`: the
// estimator keys the user set. Only absent tables and keys get a default.
std::vector<DefaultSetting> fit_defaults(const ComponentInfo& estimator, const std::vector<std::string>& given_tables,
                                         const std::vector<std::string>& given_keys, Index train_rows);

}  // namespace kef
