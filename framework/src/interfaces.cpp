// Default behaviour of the optional parts of the interfaces: an honest error naming the component.
#include "kef/base_measure.hpp"
#include "kef/component.hpp"
#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"

namespace kef {

void Component::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error(type_name() + ": set_parameters expected " + std::to_string(parameter_count()) +
                " values, got " + std::to_string(theta.size()));
}

Vector Kernel::gram_times(const Matrix& X, const Matrix& Y, const Vector& b) const {
  if (b.size() != Y.rows())
    throw Error("kernel " + type_name() + ": gram_times needs one coefficient per point of Y (got " +
                std::to_string(b.size()) + " for " + std::to_string(Y.rows()) + ")");
  return gram(X, Y) * b;
}

void Kernel::cross_derivatives(const Matrix&, const Matrix&, KernelCrossStacks&) const {
  throw Error("kernel " + type_name() + " does not provide mixed derivatives in both arguments");
}

void Kernel::backward(const Matrix&, const Matrix&, const KernelStacks&, Vector*, Matrix*) const {
  throw Error("kernel " + type_name() + " is not differentiable in its parameters");
}

Matrix BaseMeasure::sample(Index, Index, RandomStream&) const {
  throw Error("base measure " + type_name() + " cannot be sampled");
}

void BaseMeasure::backward(const Matrix&, const Vector&, const Matrix&, const Matrix&,
                           Vector& grad_params) const {
  if (parameter_count() != 0)
    throw Error("base measure " + type_name() + " has parameters but no backward pass");
  grad_params.resize(0);
}

std::vector<bool> Model::in_support(const Matrix& X) const {
  return std::vector<bool>(static_cast<std::size_t>(X.rows()), true);
}

Vector Model::log_ratio_to_base(const Matrix& X) const {
  const BaseMeasure* q0 = base_measure();
  if (!q0) throw Error("model " + type_name() + " has no base measure, so no log ratio to it");
  return log_unnormalized(X) - q0->log_density(X);
}

Matrix Model::hessian(const Vector&) const {
  throw Error("model " + type_name() + " does not provide a full Hessian");
}

Matrix Model::sample(Index, RandomStream&) const {
  throw Error("model " + type_name() + " cannot be sampled");
}

void Model::save(ModelWriter&) const {
  throw ModelFileError("model " + type_name() + " cannot be saved");
}

}  // namespace kef
