#include "mlp_feature_map.hpp"

namespace kef::deep {

MlpFeatureMap::MlpFeatureMap(Index input_dim, Index width, Index layers, RandomStream& rng)
    : net_(input_dim, width, layers) {
  initialize(rng);
}

void MlpFeatureMap::backward(const Matrix& X, const FeatureStacks& adjoint, Vector* grad_params,
                             Matrix* grad_X) const {
  // The order of the forward pass the adjoints belong to is the deepest one they reach.
  const int order = !adjoint.S.empty() ? 2 : !adjoint.J.empty() ? 1 : 0;
  net_.backward(X, order, adjoint, grad_params, grad_X);
}

}  // namespace kef::deep
