#pragma once
// FeatureMap `mlp`: the framework's DKEF network (kef::Mlp) as a standalone component.
#include "kef/feature_map.hpp"
#include "mlp.hpp"

namespace kef::deep {

class MlpFeatureMap final : public Clonable<MlpFeatureMap, FeatureMap> {
 public:
  MlpFeatureMap(Index input_dim, Index width, Index layers, RandomStream& rng);
  Index input_dim() const override { return net_.input_dim(); }
  Index output_dim() const override { return net_.width(); }
  void forward(const Matrix& X, int order, FeatureStacks& out) const override { net_.forward(X, order, out); }
  void backward(const Matrix& X, const FeatureStacks& adjoint, Vector* grad_params, Matrix* grad_X) const override;
  void initialize(RandomStream& rng) override { net_.initialize(rng); }
  Index parameter_count() const override { return net_.parameter_count(); }
  Vector parameters() const override { return net_.parameters(); }
  void set_parameters(const Vector& theta) override { net_.set_parameters(theta); }

 private:
  Mlp net_;
};

}  // namespace kef::deep
