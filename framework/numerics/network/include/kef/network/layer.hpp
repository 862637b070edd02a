#pragma once
// One layer of a kef::network::Network: the interface every layer implements, and the batched,
// channel-stacked layout all of them share (docs/math.md §2 for DKEF's use of it).
//
// A pass over a batch X (N x D, rows = samples) at derivative order k ∈ {0, 1, 2} carries, for a
// layer whose activations have width W, one column-major matrix of N·(1 + D·k) rows and W columns:
// row block c (N rows each) holds the values h (c = 0), the first input derivatives J_d = ∂h/∂x_d
// (c = 1 + d, order ≥ 1) and the diagonal second derivatives S_d = ∂²h/∂x_d² (c = 1 + D + d, order 2).
// Every linear map then acts on all channels in one GEMM, and an elementwise map s acts by the chain
// rule J' = s'(P)·J, S' = s''(P)·J² + s'(P)·S. Reverse mode takes an adjoint of every channel of the
// output (what score matching needs: gradients through J and S, not only through h) to the adjoints
// of the input channels and to parameter gradients.
//
// The network's own input is "seeded": its channels are x, J_d = e_d and S_d = 0, constants that the
// first layer may use without their being stored (Dense does: ∂_d of its pre-activation is the d-th
// column of its weights). A layer that does not say takes_seed() receives the seed expanded.
#include <memory>
#include <string>
#include <vector>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::network {

// The shape of one pass: the batch, the network input and the derivative order.
struct Pass {
  const Matrix& X;  // the network input, N x D
  Index n;          // N
  Index dim;        // D
  int order;        // 0, 1 or 2
  bool training;    // batch norm: batch statistics (true) or the running ones
  // The parameters passed with this pass went through Layer::mask_parameters (a Network's do), so a
  // masked dense layer may use its weights as they are.
  bool masked_parameters = false;
  Index channels() const { return 1 + dim * order; }
  Index rows() const { return n * channels(); }
};

// What a layer's forward pass keeps for its backward pass (each layer uses the fields it needs).
struct LayerTape {
  Matrix input;       // the input stack (Dense, activations; batch norm: x̂, or x − m in evaluation)
  Matrix d1, d2, d3;  // s', s'', s''' at the pre-activation values (activations)
  // Batch norm: the batch's mean, variance and 1/√(v + ε) in training mode; in evaluation mode only
  // inv_std, holding the unit's whole factor e^γ/√(v + ε).
  Vector mean, variance, inv_std;
  std::vector<LayerTape> inner;  // the block's tapes (Residual)
  bool seeded = false;           // the layer received the network input as a seed
  bool expanded = false;         // the seed was expanded into a full stack for it
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::unique_ptr<Layer> clone() const = 0;
  virtual std::string name() const = 0;  // for error messages ("dense 11->30")
  virtual Index input_width() const = 0;
  virtual Index output_width() const = 0;
  virtual Index parameter_count() const { return 0; }
  // Fills the layer's parameters (theta points at its slice of the network's vector).
  virtual void initialize(double* /*theta*/, RandomStream& /*rng*/) const {}
  // Whether the layer ignores some of its parameters (a masked dense layer's masked weights), and
  // mask_parameters, which zeroes those in a copy of its slice: a Network masks its parameters once
  // when they are set instead of in every pass (W ∘ M per pass was 2–4% of a MAF training epoch).
  virtual bool masks_parameters() const { return false; }
  virtual void mask_parameters(double* /*theta*/) const {}
  // True when forward/backward accept the network input as a seed (see the header comment).
  virtual bool takes_seed() const { return false; }
  // Highest derivative order the layer propagates in the given mode (batch norm in training mode: 0).
  virtual int max_order(bool /*training*/) const { return 2; }
  // Batch norm's mode-dependent state; other layers have none.
  virtual bool has_running_statistics() const { return false; }
  // Folds the batch statistics of a training-mode tape into the running ones (batch norm):
  // running = (1 − momentum)·running + momentum·batch; momentum = 1 records the batch's.
  virtual void update_statistics(const LayerTape& /*tape*/, double /*momentum*/) {}

  // h: in, the input stack (pass.rows() x input_width()), or unused when `seeded` (the input is
  // pass.X with J_d = e_d, S_d = 0); out, the output stack (pass.rows() x output_width()).
  // With tape == nullptr nothing is kept (and a value-only pass may work in place).
  virtual void forward(const double* theta, const Pass& pass, bool seeded, Matrix& h,
                       LayerTape* tape) const = 0;
  // adjoint: in, the adjoint of the output stack; out, the adjoint of the input stack, except when the
  // input was seeded: then the value adjoint is added to *grad_X (when not null) and adjoint is left
  // in an unspecified state. Parameter gradients are added to grad (the layer's slice).
  virtual void backward(const double* theta, const Pass& pass, const LayerTape& tape, Matrix& adjoint,
                        double* grad, Matrix* grad_X) const = 0;
};

using LayerPtr = std::unique_ptr<Layer>;

}  // namespace kef::network
