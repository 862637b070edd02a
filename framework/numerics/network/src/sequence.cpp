#include "kef/network/sequence.hpp"

#include <algorithm>

#include "kef/error.hpp"

namespace kef::network {

Sequence::Sequence(const Sequence& other)
    : offsets_(other.offsets_), parameter_count_(other.parameter_count_) {
  layers_.reserve(other.layers_.size());
  for (const auto& l : other.layers_) layers_.push_back(l->clone());
}

Sequence& Sequence::operator=(const Sequence& other) {
  if (this != &other) *this = Sequence(other);
  return *this;
}

void Sequence::add(LayerPtr layer) {
  if (!layer) throw Error("network: null layer");
  if (!layers_.empty() && layer->input_width() != output_width())
    throw Error("network: layer " + std::to_string(layers_.size()) + " (" + layer->name() + ") takes width " +
                std::to_string(layer->input_width()) + " but the layer before it (" + layers_.back()->name() +
                ") gives width " + std::to_string(output_width()));
  offsets_.push_back(parameter_count_);
  parameter_count_ += layer->parameter_count();
  layers_.push_back(std::move(layer));
}

int Sequence::max_order(bool training) const {
  int m = 2;
  for (const auto& l : layers_) m = std::min(m, l->max_order(training));
  return m;
}

void Sequence::initialize(double* theta, RandomStream& rng) const {
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->initialize(theta + offsets_[i], rng);
}

bool Sequence::masks_parameters() const {
  for (const auto& layer : layers_)
    if (layer->masks_parameters()) return true;
  return false;
}

void Sequence::mask_parameters(double* theta) const {
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->mask_parameters(theta + offsets_[i]);
}

Matrix expand_seed(const Pass& pass) {
  const Index N = pass.n, D = pass.dim;
  Matrix h = Matrix::Zero(pass.rows(), D);
  h.topRows(N) = pass.X;
  if (pass.order >= 1)
    for (Index d = 0; d < D; ++d) h.block((1 + d) * N, d, N, 1).setOnes();
  return h;
}

void Sequence::forward(const double* theta, const Pass& pass, bool seeded, Matrix& h,
                       std::vector<LayerTape>* tapes) const {
  if (layers_.empty()) throw Error("network: a layer sequence needs at least one layer");
  if (tapes) tapes->assign(layers_.size(), LayerTape{});
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = *layers_[i];
    bool expanded = false;
    if (seeded && !layer.takes_seed()) {
      h = expand_seed(pass);
      seeded = false;
      expanded = true;
    }
    LayerTape* tape = tapes ? &(*tapes)[i] : nullptr;
    if (tape) {
      tape->seeded = seeded;
      tape->expanded = expanded;
    }
    layer.forward(theta + offsets_[i], pass, seeded, h, tape);
    seeded = false;
  }
}

void Sequence::backward(const double* theta, const Pass& pass, const std::vector<LayerTape>& tapes,
                        Matrix& adjoint, double* grad, Matrix* grad_X) const {
  if (tapes.size() != layers_.size())
    throw Error("network: backward needs the tape of a forward pass of the same network");
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const LayerTape& tape = tapes[i];
    layers_[i]->backward(theta + offsets_[i], pass, tape, adjoint, grad + offsets_[i], grad_X);
    // An expanded seed's derivative channels are constants: only the values reach x.
    if (tape.expanded && grad_X) *grad_X += adjoint.topRows(pass.n);
  }
}

void Sequence::update_statistics(const std::vector<LayerTape>& tapes, double momentum) {
  if (tapes.size() != layers_.size())
    throw Error("network: update_running_statistics needs the tape of a forward pass of the same network");
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->update_statistics(tapes[i], momentum);
}

}  // namespace kef::network
