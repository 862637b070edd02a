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
//    rows as its validation split ([data] split.validation, table "data", key "validation"); every
//    count here is then capped by the rows left to train on;
//  - a mandatory count of mixture components or clusters (`components`, `clusters` declared required
//    and without a default) is 1, as scikit-learn's GaussianMixture: more can leave a component or
//    cluster with too few rows on some data, so more is the user's modelling choice;
//  - a mandatory inner estimator (`inner`, a required table) is gaussian_fit (table "estimator.inner",
//    key "type"): it fits any data with more rows than columns and no collinear columns, and its
//    normaliser is exact, so the mixture needs no importance sampling per component;
//  - minibatches drawn from the training rows (`batch_fit`, `batch_loss`) are at most half of them
//    each, so that both fit in the fit split together;
//  - a `solver` whose choices include "pinv" gets it: the eigendecomposition pseudo-inverse fits
//    near-duplicate rows (a singular system), which the Cholesky default refuses. The declared default
//    stays, so existing pipelines keep their results; pinv costs a symmetric eigendecomposition of
//    the m·D system instead of a Cholesky factorisation (the same O((m·D)³), a larger constant).
#include <string>
#include <vector>

#include "kef/component_info.hpp"
#include "kef/config.hpp"
#include "kef/types.hpp"

namespace kef {

struct DefaultSetting {
  std::string table;   // "estimator", "kernel", "base_measure", "data", or "estimator.inner" (nested)
  std::string key;     // "type", "sigma", "inducing_points", ...
  DefaultValue value;  // what to set
};

// `given_tables`: the names of the tables the user gave ("kernel", "base_measure"); `given_keys`: the
// estimator keys the user set. Only absent tables and keys get a default.
std::vector<DefaultSetting> fit_defaults(const ComponentInfo& estimator, const std::vector<std::string>& given_tables,
                                         const std::vector<std::string>& given_keys, Index train_rows);

}  // namespace kef
