#pragma once
// A positive definite kernel k(x, y) with the input derivatives the score-matching estimators need.
//
// Derivative stacks (docs/math.md §4): for X (N x D) and Y (M x D), row d*N + n of `d1` holds
// ∂k(x_n, y_m)/∂x_d for every m, and `d2` the second derivative ∂²/∂x_d² along the same coordinate.
// Stacks are (N·D) x M, so G = d1ᵀ d1 / N is a single symmetric rank-k update.
#include <memory>
#include <string>

#include "kef/clonable.hpp"
#include "kef/component.hpp"
#include "kef/radial_profile.hpp"
#include "kef/types.hpp"

namespace kef {

struct KernelStacks {
  Matrix value;  // N x M
  Matrix d1;     // (N·D) x M, filled when order >= 1
  Matrix d2;     // (N·D) x M, filled when order >= 2
};

// Mixed derivatives in both arguments (full and Nyström estimators, KSD):
// dxdy[(i*N + n), (j*M + m)] = ∂_{x_i} ∂_{y_j} k(x_n, y_m)
// d2xdy[(i*N + n), (j*M + m)] = ∂²_{x_i} ∂_{y_j} k(x_n, y_m)
// ∂_{x_i} ∂²_{y_j} k(x, y) is d2xdy of (Y, X) transposed (k is symmetric), so no stack holds it; the
// fourth-order ∂²_{x_i} ∂²_{y_j} k comes from cross_second_derivatives (docs/math.md §6).
struct KernelCrossStacks {
  Matrix dxdy;
  Matrix d2xdy;
};

struct KernelCapabilities {
  bool differentiable_parameters = false;  // backward() gives parameter gradients
  bool inducing_point_gradients = false;   // backward() gives gradients for Y
  bool cross_derivatives = false;          // cross_derivatives() is implemented
  bool cross_second_derivatives = false;   // cross_second_derivatives() is implemented
  bool bounded_unit = false;               // 0 <= k <= 1 everywhere (used by the IS bias bound)
};

class Kernel : public Component {
 public:
  static constexpr const char* kInterface = "kernel";

  // A deep copy (docs/design.md, "Components are values").
  std::unique_ptr<Kernel> clone() const { return std::unique_ptr<Kernel>(clone_raw()); }

  virtual KernelCapabilities capabilities() const = 0;

  virtual Matrix gram(const Matrix& X, const Matrix& Y) const = 0;

  // K(X, Y)·b, the model evaluation f = Σ_m b_m k(·, y_m). The default forms K; kernels whose Gram is
  // expensive to store (the deep kernel) override it to consume K block by block in cache, which is
  // what the importance-sampled log-likelihood's throughput rests on.
  virtual Vector gram_times(const Matrix& X, const Matrix& Y, const Vector& b) const;

  // order 0: value only; 1: value and d1; 2: value, d1, d2.
  virtual void derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const = 0;

  virtual void cross_derivatives(const Matrix& X, const Matrix& Y, KernelCrossStacks& out) const;

  // d2xd2y[(i*N + n), (j*M + m)] = ∂²_{x_i} ∂²_{y_j} k(x_n, y_m): the inner products of second-derivative
  // features ⟨∂²_i k(x, ·), ∂²_j k(y, ·)⟩ (docs/math.md §6). A separate call from cross_derivatives so
  // that callers needing only dxdy and d2xdy (KSD, first-order Nyström) never pay for it.
  virtual void cross_second_derivatives(const Matrix& X, const Matrix& Y, Matrix& d2xd2y) const;

  // Reverse mode: given adjoints of the stacks of derivatives(X, Y, order) (empty matrices mean zero
  // adjoint), accumulate into grad_params (size parameter_count()) and grad_Y (M x D), either of
  // which may be null.
  virtual void backward(const Matrix& X, const Matrix& Y, const KernelStacks& adjoint,
                        Vector* grad_params, Matrix* grad_Y) const;

  // Non-null when k(x, y) = φ(‖x − y‖²) for the current parameters (see radial_profile.hpp); the
  // pointer stays valid while the kernel lives and reflects later set_parameters calls.
  virtual const RadialProfile* radial_profile() const { return nullptr; }

 protected:
  Kernel* clone_raw() const override = 0;
};

using KernelPtr = std::shared_ptr<Kernel>;

}  // namespace kef
