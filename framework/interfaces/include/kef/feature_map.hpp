#pragma once
// A learned feature map φ : R^D -> R^W with forward-mode input derivatives, for deep kernels.
// For a batch X (N x D): features (N x W); J[d] (N x W) = ∂φ/∂x_d; S[d] (N x W) = ∂²φ/∂x_d².
#include <memory>
#include <vector>

#include "kef/clonable.hpp"
#include "kef/component.hpp"
#include "kef/types.hpp"

namespace kef {

struct FeatureStacks {
  Matrix features;         // N x W
  std::vector<Matrix> J;   // D entries of N x W, when order >= 1
  std::vector<Matrix> S;   // D entries of N x W, when order >= 2
};

class FeatureMap : public Component {
 public:
  static constexpr const char* kInterface = "feature_map";

  // A deep copy (docs/design.md, "Components are values").
  std::unique_ptr<FeatureMap> clone() const { return std::unique_ptr<FeatureMap>(clone_raw()); }

  virtual Index input_dim() const = 0;
  virtual Index output_dim() const = 0;
  virtual void forward(const Matrix& X, int order, FeatureStacks& out) const = 0;
  // Reverse mode: adjoints of the stacks (empty means zero) into parameter and input gradients.
  virtual void backward(const Matrix& X, const FeatureStacks& adjoint, Vector* grad_params,
                        Matrix* grad_X) const = 0;

 protected:
  FeatureMap* clone_raw() const override = 0;
};

using FeatureMapPtr = std::shared_ptr<FeatureMap>;

}  // namespace kef
