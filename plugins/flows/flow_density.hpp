#pragma once
// MADE and MAF densities (Germain et al. 2015; Papamakarios et al. 2017), docs/math.md §15, built on
// kef's network library: every MADE is a kef::network::Network of masked dense layers (made.hpp masks),
// every batch norm a one-layer Network (batch_norm.hpp). The density is exact and normalised:
//
//   x ↦ z = (x − shift)/scale ↦ u_1 ↦ ... ↦ u_K   (K Gaussian MADEs, each optionally followed by a
//   batch norm), log p(x) = log p_base(u_K) + Σ log-determinants − Σ_d log scale_d,
//
// with p_base = N(0, I) or a MADE whose conditionals are mixtures of C Gaussians. The gradient of
// log p with respect to every parameter and to x comes from one reverse pass through the networks'
// own backward (Network::backward's parameter and input gradients), so training and the score share
// one code path; sampling inverts the flow (one network pass per dimension and MADE).
//
// Everything here is sequential and deterministic; callers parallelise over fixed row chunks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "kef/network/activation.hpp"
#include "kef/network/network.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::flows {

// ½ log(2π) as std::log computes it (the PyTorch twins' value, to the last bit), for the density and
// its Laplacian.
inline const double kHalfLog2Pi = 0.5 * std::log(2.0 * std::numbers::pi);

// log Σ_c exp(row(n)[first + c]) over the C entries from `first`: the log-normaliser of a MoG head's
// mixing logits, shifted by their maximum so that nothing overflows.
inline double log_sum_exp_of_row(const Matrix& out, Index n, Index first, Index C) {
  double m = -std::numeric_limits<double>::infinity();
  for (Index c = 0; c < C; ++c) m = std::max(m, out(n, first + c));
  double sum = 0.0;
  for (Index c = 0; c < C; ++c) sum += std::exp(out(n, first + c) - m);
  return m + std::log(sum);
}

struct FlowArchitecture {
  Index dim = 0;
  std::vector<Index> hidden_units{100, 100};
  network::ActivationKind activation = network::ActivationKind::tanh;
  Index layers = 0;         // Gaussian MADEs in the flow (MADE: 1, MADE-MoG: 0)
  Index components = 0;     // 0: the base is N(0, I); C ≥ 1: a MADE with C-component Gaussian mixtures
  bool batch_norm = false;  // a batch norm after every Gaussian MADE (coupling layer)
  double batch_norm_epsilon = 1e-5;
  // Real NVP: the `layers` are affine coupling layers instead of MADEs (no mixture base); the scale
  // net uses `activation`, the shift net `shift_activation`.
  bool coupling = false;
  network::ActivationKind shift_activation = network::ActivationKind::relu;
};

// The degrees of one MADE (1-based, made.hpp): its inputs' (the order) and each hidden layer's.
struct MadeDegrees {
  std::vector<Index> inputs;
  std::vector<std::vector<Index>> hidden;
};

// The degrees of every MADE of the architecture (the flow's, then the base's): natural order for the
// first MADE, reversed between consecutive MADEs; hidden degrees 'sequential' or 'random' (rng needed).
// None for the coupling layers of Real NVP.
std::vector<MadeDegrees> flow_degrees(const FlowArchitecture& arch, bool random_hidden, RandomStream* rng);

// One MADE: inputs (N x D) to the heads (mean, log precision and, with C ≥ 1 components, log mixing
// weight) of every conditional. Output column of head h, input d, component c: h·D·C' + d·C' + c with
// C' = max(C, 1); the log precision is −2α in the notation of docs/math.md §15.
class Made {
 public:
  Made(const FlowArchitecture& arch, MadeDegrees degrees, Index components);
  const network::Network& net() const { return net_; }
  network::Network& net() { return net_; }
  const MadeDegrees& degrees() const { return degrees_; }
  Index components() const { return components_; }
  Index width() const { return dim_ * std::max<Index>(components_, 1); }  // columns per head
  // Weights N(0, 1/(fan_in + 1)), biases 0; a mixture MADE's output biases N(0, 1) (the reference's).
  void initialize(RandomStream& rng);
  // The input j whose degree is t (1..D).
  Index input_of_degree(Index t) const { return by_degree_[static_cast<std::size_t>(t - 1)]; }

 private:
  Index dim_, components_;
  MadeDegrees degrees_;
  std::vector<Index> by_degree_;
  network::Network net_;
};

// One affine coupling layer of Real NVP (Dinh et al. 2017, as the MAF paper's code builds it): with the
// 0/1 mask m_j = (j + k) mod 2 of layer k, s = S(m∘v) and t = T(m∘v) (two MLPs, D -> hidden -> D),
//   u = m∘v + (1 − m)∘e^{−s}∘(v − t),   log |det ∂u/∂v| = −Σ_j (1 − m_j) s_j.
// Parameters: the scale net's, then the shift net's.
class Coupling {
 public:
  Coupling(const FlowArchitecture& arch, Index k);
  const network::Network& scale_net() const { return s_; }
  network::Network& scale_net() { return s_; }
  const network::Network& shift_net() const { return t_; }
  network::Network& shift_net() { return t_; }
  const Vector& mask() const { return mask_; }
  void initialize(RandomStream& rng);  // weights N(0, 1/(fan_in + 1)), biases 0
  Index parameter_count() const { return s_.parameter_count() + t_.parameter_count(); }
  Vector parameters() const;
  void set_parameters(const Vector& theta);

 private:
  network::Network s_, t_;
  Vector mask_;
};

class FlowDensity {
 public:
  // degrees: one entry per Gaussian MADE, then one for the base when arch.components ≥ 1.
  // shift and scale (D each, scale > 0): the standardisation z = (x − shift)/scale.
  FlowDensity(FlowArchitecture arch, Vector shift, Vector scale, const std::vector<MadeDegrees>& degrees);

  const FlowArchitecture& architecture() const { return arch_; }
  Index dim() const { return arch_.dim; }
  const Vector& shift() const { return shift_; }
  const Vector& scale() const { return scale_; }
  Index layer_count() const { return static_cast<Index>(mades_.size() + couplings_.size()); }
  bool is_coupling() const { return arch_.coupling; }
  const Coupling& coupling(Index k) const { return couplings_[static_cast<std::size_t>(k)]; }
  Coupling& coupling(Index k) { return couplings_[static_cast<std::size_t>(k)]; }
  const Made& made(Index k) const { return mades_[static_cast<std::size_t>(k)]; }
  Made& made(Index k) { return mades_[static_cast<std::size_t>(k)]; }
  bool has_batch_norm() const { return !norms_.empty(); }
  // The batch norm after MADE k (a one-layer network; parameters log γ then β).
  const network::Network& batch_norm(Index k) const { return norms_[static_cast<std::size_t>(k)]; }
  network::Network& batch_norm(Index k) { return norms_[static_cast<std::size_t>(k)]; }
  bool has_mixture_base() const { return !base_.empty(); }
  const Made& base() const { return base_.front(); }
  Made& base() { return base_.front(); }

  void initialize(RandomStream& rng);
  // All parameters in one vector: MADE 0, its batch norm, MADE 1, ..., the base MADE.
  Index parameter_count() const;
  Vector parameters() const;
  void set_parameters(const Vector& theta);
  // Batch norm in training mode uses the batch's statistics; evaluation mode (the default after
  // construction is evaluation) the recorded ones.
  void set_training(bool training);
  bool training() const { return training_; }
  // Records every batch norm's statistics from a training-mode pass over X (the reference records
  // those of the whole training set), then returns to evaluation mode.
  void record_batch_norm_statistics(const Matrix& X);

  // What a forward pass keeps for the reverse pass.
  struct Trace;
  // log p at the rows of X (in the current mode).
  Vector log_density(const Matrix& X) const;
  // log p and, by the reverse pass, d log p/dx (N x D).
  Vector log_density_and_score(const Matrix& X, Matrix& score) const;
  // log p, the score and the diagonal of the Hessian of log p (N x D each), by forward mode: every
  // quantity carries its first and diagonal second derivatives in x through the networks
  // (Network::forward_stack). Evaluation mode only.
  Vector log_density_score_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const;
  // The minibatch loss −mean log p (without weight decay) and its gradient in the parameters. The rows
  // are cut into loss_groups(N) consecutive groups of about kLossGroupRows, a cut fixed by N alone;
  // the groups' sums run on up to `threads` threads and are added in group order, so the result is
  // the same bits for any thread count. With batch norm, whose statistics couple the rows, one group.
  static constexpr Index kLossGroupRows = 50;
  double loss_and_gradient(const Matrix& X, Vector& gradient, int threads = 1) const;
  Index loss_groups(Index rows) const;

  // u_K = the flow's map of X (before the base density), and its inverse.
  Matrix to_base(const Matrix& X) const;
  Matrix from_base(const Matrix& U) const;
  // n exact draws: u_K from the base (autoregressively for a mixture base), then the inverse flow.
  Matrix sample(Index n, RandomStream& rng) const;

 private:
  Vector forward(const Matrix& X, Trace* trace) const;
  // g: the adjoint of log p per row. Adds to gradient (size parameter_count(), when not null) and
  // writes grad_X (when not null).
  void backward(const Trace& trace, const Vector& g, Vector* gradient, Matrix* grad_X) const;
  double batch_norm_log_det(Index k, const Vector& variance) const;
  std::vector<Index> offsets() const;  // parameter offsets, in parameters() order, one per layer
  Index layer_parameter_count(std::size_t k) const;
  Vector layer_parameters(std::size_t k) const;
  void set_layer_parameters(std::size_t k, const Vector& theta);

  FlowArchitecture arch_;
  Vector shift_, scale_;
  std::vector<Made> mades_;
  std::vector<Coupling> couplings_;
  std::vector<network::Network> norms_;
  std::vector<Made> base_;  // empty or one
  bool training_ = false;
};

}  // namespace kef::flows
