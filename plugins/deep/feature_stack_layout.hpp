#pragma once
// The one layout that moves a feature map's outputs and their input derivatives between one stacked
// matrix and FeatureStacks. Networks evaluate all of them in a single pass over a (1 + D·order)·N-row
// stack (rows n: the features; 1 + d blocks: ∂/∂x_d; 1 + D + d blocks: ∂²/∂x_d²), while the
// FeatureMap interface hands them out as separate N x W matrices.
#include "kef/feature_map.hpp"
#include "kef/types.hpp"

namespace kef {

// Splits a stack with N rows per block into out (order 0: features; 1: and J; 2: and S).
void unstack_features(const Matrix& stack, Index N, Index D, int order, FeatureStacks& out);

// The adjoint of unstack_features: a zero stack of rows x cols with the blocks adj provides (missing
// or empty entries stay zero).
Matrix stack_adjoint(const FeatureStacks& adj, Index N, Index D, int order, Index rows, Index cols);

}  // namespace kef
