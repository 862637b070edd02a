#pragma once
// A residual (skip) connection around a block of layers: h ↦ h + block(h), on every channel (the
// derivative channels of a sum are the sums). The block's output width must equal its input width.
// For DKEF's skip from the network input into a later layer see InputSkip (dense.hpp).
#include "kef/network/sequence.hpp"

namespace kef::network {

class Residual : public Layer {
 public:
  explicit Residual(Sequence block);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Residual>(*this); }
  std::string name() const override;
  const Sequence& block() const { return block_; }
  Index input_width() const override { return block_.input_width(); }
  Index output_width() const override { return block_.output_width(); }
  Index parameter_count() const override { return block_.parameter_count(); }
  void initialize(double* theta, RandomStream& rng) const override { block_.initialize(theta, rng); }
  bool masks_parameters() const override { return block_.masks_parameters(); }
  void mask_parameters(double* theta) const override { block_.mask_parameters(theta); }
  int max_order(bool training) const override { return block_.max_order(training); }
  bool has_running_statistics() const override;
  void update_statistics(const LayerTape& tape, double momentum) override;
  void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h, LayerTape* tape) const override;
  void backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint, double* grad,
                Matrix* grad_X) const override;

 private:
  Sequence block_;
};

}  // namespace kef::network
