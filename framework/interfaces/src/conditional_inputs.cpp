#include "kef/conditional_inputs.hpp"

#include "kef/error.hpp"

namespace kef {

void check_conditional_inputs(const ConditionalModel& model, const std::string& who, const Matrix& X,
                              const Matrix* Y) {
  if (X.cols() != model.input_dim())
    throw DataError(who + ": inputs of " + std::to_string(X.cols()) + " columns, the model has " +
                    std::to_string(model.input_dim()));
  if (Y && (Y->cols() != model.target_dim() || Y->rows() != X.rows()))
    throw DataError(who + ": targets of " + std::to_string(Y->rows()) + " x " + std::to_string(Y->cols()) +
                    " for " + std::to_string(X.rows()) + " inputs and " + std::to_string(model.target_dim()) +
                    " target columns");
}

}  // namespace kef
