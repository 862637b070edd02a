#include "residual.hpp"

#include "kef/error.hpp"

namespace kef::network {

Residual::Residual(Sequence block) : block_(std::move(block)) {
  if (block_.empty()) throw Error("network: a residual block needs at least one layer");
  if (block_.input_width() != block_.output_width())
    throw Error("network: a residual block maps width " + std::to_string(block_.input_width()) + " to " +
                std::to_string(block_.output_width()) + "; h + block(h) needs them equal");
}

std::string Residual::name() const {
  return "residual (" + std::to_string(block_.size()) + " layers, width " + std::to_string(input_width()) +
         ")";
}

bool Residual::has_running_statistics() const {
  for (Index i = 0; i < block_.size(); ++i)
    if (block_.layer(i).has_running_statistics()) return true;
  return false;
}

void Residual::update_statistics(const LayerTape& tape, double momentum) {
  block_.update_statistics(tape.inner, momentum);
}

void Residual::forward(const double* theta, const Pass& pass, bool /*seeded*/, Matrix& h,
                       LayerTape* tape) const {
  Matrix inner = h;
  block_.forward(theta, pass, false, inner, tape ? &tape->inner : nullptr);
  h += inner;
}

void Residual::backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint,
                        double* grad, Matrix* grad_X) const {
  Matrix inner = adjoint;
  block_.backward(theta, pass, tape.inner, inner, grad, grad_X);
  adjoint += inner;
}

}  // namespace kef::network
