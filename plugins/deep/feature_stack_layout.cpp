#include "feature_stack_layout.hpp"

#include <algorithm>
#include <cstddef>

namespace kef {

void unstack_features(const Matrix& stack, Index N, Index D, int order, FeatureStacks& out) {
  out.features = stack.topRows(N);
  out.J.clear();
  out.S.clear();
  for (Index d = 0; d < D * std::min(order, 1); ++d) out.J.emplace_back(stack.middleRows((1 + d) * N, N));
  for (Index d = 0; d < (order >= 2 ? D : 0); ++d) out.S.emplace_back(stack.middleRows((1 + D + d) * N, N));
}

Matrix stack_adjoint(const FeatureStacks& adj, Index N, Index D, int order, Index rows, Index cols) {
  Matrix a = Matrix::Zero(rows, cols);
  if (adj.features.size()) a.topRows(N) = adj.features;
  for (Index d = 0; d < D * std::min(order, 1) && d < static_cast<Index>(adj.J.size()); ++d)
    if (adj.J[static_cast<std::size_t>(d)].size())
      a.middleRows((1 + d) * N, N) = adj.J[static_cast<std::size_t>(d)];
  for (Index d = 0; d < (order >= 2 ? D : 0) && d < static_cast<Index>(adj.S.size()); ++d)
    if (adj.S[static_cast<std::size_t>(d)].size())
      a.middleRows((1 + D + d) * N, N) = adj.S[static_cast<std::size_t>(d)];
  return a;
}

}  // namespace kef
