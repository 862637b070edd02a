#pragma once
// A feed-forward network over batches: an input dimension, a list of layers (layer.hpp) and one flat
// parameter vector (each layer's slice in layer order, its layout in the layer's header). Values,
// forward-mode first and diagonal second input derivatives, and reverse mode from adjoints of all of
// them to parameter and input gradients; the layout of the stacked channels is in layer.hpp.
//
//   Network net(D);
//   net.add(std::make_unique<Dense>(D, 30)).add(std::make_unique<Activation>(ActivationKind::tanh, 30))
//      .add(std::make_unique<Dense>(30, 1));
//   net.initialize(rng);
//   Network::Tape tape;  Matrix out;
//   net.forward(X, 2, out, &tape);              // N·(1 + 2D) x 1: f, ∂_d f, ∂²_d f
//   net.backward(X, tape, adjoint, &g, &gX);    // g += ∂⟨adjoint, out⟩/∂θ, gX += ∂⟨adjoint, out⟩/∂X
//
// Copies are deep (a network is a value). Everything is sequential and deterministic: callers
// parallelise over independent networks or fixed row blocks, so results never depend on threads.
#include "kef/network/sequence.hpp"

namespace kef::network {

class Network {
 public:
  explicit Network(Index input_dim);

  // Appends a layer (its parameters start at zero; initialize() draws them all). Error when its
  // input width differs from the current output width.
  Network& add(LayerPtr layer);

  Index input_dim() const { return input_dim_; }
  Index output_dim() const { return body_.empty() ? input_dim_ : body_.output_width(); }
  Index layer_count() const { return body_.size(); }
  const Layer& layer(Index i) const { return body_.layer(i); }
  Layer& layer(Index i) { return body_.layer(i); }
  Index parameter_offset(Index i) const { return body_.offset(i); }
  Index parameter_count() const { return static_cast<Index>(theta_.size()); }
  const Vector& parameters() const { return theta_; }
  void set_parameters(const Vector& theta);
  void initialize(RandomStream& rng);

  // Batch norm's mode (default: training); the other layers have none.
  void set_training(bool training) { training_ = training; }
  bool training() const { return training_; }
  // The highest derivative order a pass in the current mode supports.
  int max_order() const { return body_.max_order(training_); }

  struct Tape {
    int order = 0;
    Index n = 0;
    bool training = false;
    std::vector<LayerTape> layers;
  };
  static Index stacked_rows(Index n, Index dim, int order) { return n * (1 + dim * order); }

  // out: stacked_rows(N, D, order) x output_dim(). With a tape, keeps what backward needs.
  void forward(const Matrix& X, int order, Matrix& out, Tape* tape) const;
  // adjoint: stacked like forward's output for the tape's order. Gradients are accumulated (resized
  // and zeroed first when their size is wrong); either may be null.
  void backward(const Matrix& X, const Tape& tape, const Matrix& adjoint, Vector* grad_params,
                Matrix* grad_X) const;
  // The values alone (order 0, no tape).
  Matrix value(const Matrix& X) const;
  // Forward mode on an input that is itself a stack (layer.hpp's layout) over an outer variable of
  // dimension outer_dim: stacked_rows(n, outer_dim, order) x input_dim(), the values of the input and
  // their first and diagonal second derivatives in that variable (e.g. the output stack of another
  // network, for derivatives through a composition of networks). out: the same stack of the output.
  // No tape; batch norm needs evaluation mode for order >= 1, as in forward(); a network with an input
  // skip (which assumes the seed) is refused.
  void forward_stack(const Matrix& stack, Index outer_dim, int order, Matrix& out) const;

  // Folds the batch statistics of a training-mode tape into every batch norm's running statistics.
  void update_running_statistics(const Tape& tape, double momentum);

 private:
  Pass pass(const Matrix& X, int order, bool training) const;
  // theta_ masked by the layers (Layer::mask_parameters) when one of them masks, else empty: what the
  // passes read.
  void refresh_masked();
  const double* pass_parameters() const { return masked_.size() ? masked_.data() : theta_.data(); }
  Index input_dim_;
  Sequence body_;
  Vector theta_;
  Vector masked_;
  bool training_ = true;
};

}  // namespace kef::network
