#pragma once
// The score-matching objective of docs/math.md §1 and the Fisher divergence, evaluated from a model's
// score and Hessian diagonal.
#include <string_view>
#include <vector>

#include "kef/conditional_model.hpp"
#include "kef/context.hpp"
#include "kef/model.hpp"
#include "kef/types.hpp"

namespace kef {

// J = (1/N) Σ_n Σ_d [ lap(n,d) + ½ score(n,d)² ]; NumericalError naming the first non-finite row.
double score_matching_objective(const Matrix& score, const Matrix& laplacian, std::string_view where);

// Evaluates a model on X in chunks (threads over chunks, fixed order). rows: optional mask.
double score_matching_loss(const Model& model, const Matrix& X, const Context& context,
                           const std::vector<bool>* rows = nullptr);
// Conditional score matching in y (docs/math.md §17.4): (1/N) Σ_n Σ_d [∂²_(y_d) log p~(y_n | x_n) +
// ½ (∂_(y_d) log p~(y_n | x_n))²] over the pairs (row n of X, row n of Y). In the same chunks and order
// as score_matching_loss; NumericalError naming the first non-finite row.
double conditional_score_matching_loss(const ConditionalModel& model, const Matrix& X, const Matrix& Y,
                                       const Context& context);
// ½ mean ‖∇log p~ − ∇log p0‖² over the rows of X (mask optional).
double fisher_divergence(const Model& model, const Model& truth, const Matrix& X, const Context& context,
                         const std::vector<bool>* rows = nullptr);

}  // namespace kef
