#pragma once
// An ordered list of layers applied one after another: the body of a Network and of a Residual block.
// Parameters live outside (one flat vector of the owner); layer i's slice starts at offset(i).
#include <vector>

#include "kef/network/layer.hpp"

namespace kef::network {

class Sequence {
 public:
  Sequence() = default;
  Sequence(const Sequence& other);
  Sequence& operator=(const Sequence& other);
  Sequence(Sequence&&) noexcept = default;
  Sequence& operator=(Sequence&&) noexcept = default;

  // Error when the layer's input width differs from the previous layer's output width.
  void add(LayerPtr layer);

  Index size() const { return static_cast<Index>(layers_.size()); }
  bool empty() const { return layers_.empty(); }
  const Layer& layer(Index i) const { return *layers_[static_cast<std::size_t>(i)]; }
  Layer& layer(Index i) { return *layers_[static_cast<std::size_t>(i)]; }
  Index offset(Index i) const { return offsets_[static_cast<std::size_t>(i)]; }
  Index parameter_count() const { return parameter_count_; }
  Index input_width() const { return layers_.front()->input_width(); }
  Index output_width() const { return layers_.back()->output_width(); }
  int max_order(bool training) const;

  void initialize(double* theta, RandomStream& rng) const;
  bool masks_parameters() const;
  void mask_parameters(double* theta) const;
  // As Layer::forward and Layer::backward, for the whole list (tapes: one per layer, or null).
  void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h,
               std::vector<LayerTape>* tapes) const;
  void backward(const double* theta, const Pass& pass, const std::vector<LayerTape>& tapes, Matrix& adjoint,
                double* grad, Matrix* grad_X) const;
  void update_statistics(const std::vector<LayerTape>& tapes, double momentum);

 private:
  std::vector<LayerPtr> layers_;
  std::vector<Index> offsets_;
  Index parameter_count_ = 0;
};

// The seed as a full stack: x, J_d = e_d (broadcast over the rows), S_d = 0.
Matrix expand_seed(const Pass& pass);

}  // namespace kef::network
