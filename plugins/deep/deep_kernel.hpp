#pragma once
// The deep kernel of DKEF (eq. 7, docs/math.md §2): a mixture of R components, each a Gaussian (or, for
// DKEF-L, linear) kernel on its own learned feature map φ_r (kef::Mlp),
//   k(x, y) = Σ_r ρ_r exp(−‖φ_r(x) − φ_r(y)‖² / (2σ_r²)),   ρ = softmax(v),  σ_r = exp(s_r).
// Parameter vector: v (R), then s (R; Gaussian components only), then each network's parameters.
//
// Speed (docs/math.md §2 shapes): each network runs once per call on the stacked channels (features, J_d,
// S_d) of all rows, one GEMM per layer; the Gaussian Gram in feature space is ‖a‖² + ‖c‖² − 2aᵀc after
// centring both on the mean of the second argument's features (one GEMM that also yields uᵀJ_d and
// uᵀS_d for every coordinate). Features of the second argument (the inducing points) are cached per
// parameter setting, so repeated calls against the same Y (a model's chunks, the meta-gradient's
// row blocks) compute them once. The direct per-pair definitions are the tests' brute-force twins.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kef/kernel.hpp"
#include "mlp.hpp"

namespace kef::deep {

enum class OnFeatures { Gaussian, Linear };

class DeepKernel final : public Clonable<DeepKernel, Kernel> {
 public:
  DeepKernel(Index input_dim, Index components, Index layers, Index width, const std::vector<double>& sigma_init,
             OnFeatures on, RandomStream& rng);

  KernelCapabilities capabilities() const override;
  Matrix gram(const Matrix& X, const Matrix& Y) const override;
  Vector gram_times(const Matrix& X, const Matrix& Y, const Vector& b) const override;
  void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const override;
  void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint, Vector* grad_params,
                Matrix* grad_Y) const override;

  // The networks' weights, network r from rng.derive(r) (DKEF's initialisation, see mlp.hpp).
  void initialize(RandomStream& rng) override;

  Index parameter_count() const override;
  Vector parameters() const override;
  void set_parameters(const Vector& theta) override;
  std::vector<std::string> parameter_names() const override;

 private:
  Vector weights() const;  // ρ
  Index components() const { return static_cast<Index>(nets_.size()); }
  bool gaussian() const { return on_ == OnFeatures::Gaussian; }
  Index net_offset(Index r) const;

  // Features of a second argument Y for every component, with the tape of the network's pass (for
  // backward) and the centred form the Gram uses.
  struct YFeatures {
    Matrix Y;
    std::uint64_t generation = 0;
    std::vector<Matrix> C;           // φ_r(Y), M x W
    std::vector<Mlp::Tape> tape;     // order-0 tapes of φ_r(Y)
    std::vector<Eigen::RowVectorXd> mean;  // column means of φ_r(Y)
    std::vector<Matrix> Cc;          // φ_r(Y) − mean
    std::vector<Vector> norms;       // ‖row of Cc‖²
  };
  std::shared_ptr<const YFeatures> y_features(const Matrix& Y) const;
  // Component r's Gram on a block of rows: its kernel values (Gaussian, in T) or its features (linear,
  // in A); A and T are scratch.
  const Matrix& component_block(const Matrix& Xb, Index r, const YFeatures& yf, Matrix& A, Matrix& T) const;
  // use(begin, rows, r, component_block(...)) for each 128-row block of X and each component.
  template <class Use>
  void for_each_block(const Matrix& X, const YFeatures& yf, Use&& use) const;
  void check_inputs(const Matrix& X, const Matrix& Y) const;

  // Thread-safe single-entry cache; copies of the kernel start empty.
  struct Cache {
    Cache() = default;
    Cache(const Cache&) {}
    Cache& operator=(const Cache&) { return *this; }
    mutable std::mutex mutex;
    mutable std::shared_ptr<const YFeatures> entry;
  };

  OnFeatures on_;
  Vector logits_;     // v
  Vector log_sigma_;  // s (Gaussian components)
  std::vector<Mlp> nets_;
  std::uint64_t generation_ = 0;  // bumped by set_parameters
  Cache cache_;
};

}  // namespace kef::deep
