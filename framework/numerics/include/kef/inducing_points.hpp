#pragma once
// Inducing points as a seeded random subset of the training rows: the basis placement shared by the
// estimators that put kernel functions at data points (lite, dkef). One rule for the count check,
// so `kef validate` and the fit refuse the same configurations with the same message.
#include <string_view>

#include "kef/options.hpp"
#include "kef/random.hpp"
#include "kef/training_rows.hpp"
#include "kef/types.hpp"

namespace kef {

// m inducing points need at least m training rows: a ConfigError at `key` (cited through `sites`,
// file:line and the dotted key) otherwise. Run from Estimator::check with DataShape::train_rows and
// again at fit time.
void check_inducing_count(Index m, Index train_rows, const KeySites& sites,
                          std::string_view key = "inducing_points");

// m distinct training rows drawn from stream.derive("inducing_points"), in draw order, after the check.
Matrix draw_inducing_points(const Matrix& train, Index m, const RandomStream& stream, const KeySites& sites,
                            std::string_view key = "inducing_points");
// The same rows of a training split read by rows: the same draw, the rows read by position.
Matrix draw_inducing_points(const TrainingRows& train, Index m, const RandomStream& stream, const KeySites& sites,
                            std::string_view key = "inducing_points");

}  // namespace kef
