#pragma once
// Conditional sampling from a saved model: y ~ p(y | x) for given inputs x, in data units. What
// `kef sample MODEL_DIR --given X.npy` and the Python package's Model.sample(n, given=X) run.
#include <string>

#include "kef/column_roles.hpp"
#include "kef/conditional_model.hpp"
#include "kef/context.hpp"
#include "kef/model_archive.hpp"

namespace kef {

struct ConditionalDraws {
  // n draws of y for every row of the given inputs, n consecutive rows each, as full rows in the data's
  // column order (x where the data had its inputs, y where it had its targets), in data units.
  Matrix rows;
  bool approximate = false;  // facet ApproximateSampler: draws from a learned q(y | x), not the density
};

// The roles of a conditional model's columns: the recorded ones, or (a model saved without them) x first.
ColumnRoles conditional_roles(const SavedModel& saved, const ConditionalModel& model);
// The model's columns for messages: the recorded names and roles, or the layout of a model saved
// without them ("inputs x the first 2, targets y the last 1").
std::string conditional_columns_text(const SavedModel& saved, const ConditionalModel* model);

// `given`: the model's input columns x in data units, one row per x (finite: the caller's reader checks).
// Draws from the model's conditional sampler with context.rng(). ConfigError for a model that is not
// conditional or has no conditional sampler, for n < 1 or more than 10⁹ draws; DataError for a wrong
// column count or no rows; NumericalError for non-finite draws. `given_label` ("--given FILE",
// "given"), `n_label` ("-n", "n") and `model_label` ("the model at DIR") name them in messages.
ConditionalDraws sample_conditional(const SavedModel& saved, const Matrix& given, Index n, Context& context,
                                    const std::string& given_label, const std::string& n_label,
                                    const std::string& model_label);

}  // namespace kef
