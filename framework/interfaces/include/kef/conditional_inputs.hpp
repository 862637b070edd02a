#pragma once
// The shape check every conditional model makes before it evaluates or samples p~(y | x): X has the
// model's input columns and, when Y is given, Y has one row per row of X and the model's target
// columns. A mismatch is a DataError naming the model (`who`) and both shapes.
#include <string>

#include "kef/conditional_model.hpp"
#include "kef/types.hpp"

namespace kef {

void check_conditional_inputs(const ConditionalModel& model, const std::string& who, const Matrix& X,
                              const Matrix* Y);

}  // namespace kef
