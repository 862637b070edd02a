#pragma once
// Kernels of the form k(x, y) = φ(‖x − y‖²) (Gaussian, inverse multiquadric) expose φ and its first
// two derivatives. With r = ‖x − y‖² every input derivative is a polynomial in (x − y) times φ'(r) or
// φ''(r):
//   ∂_{x_d} k = 2 φ'(r) (x_d − y_d),   ∂²_{x_d} k = 2 φ'(r) + 4 φ''(r) (x_d − y_d)²,
// so sums over the D coordinates collapse into N x M matrices. Framework fast paths (the lite
// system's G and b, Stein statistics) use this instead of (N·D) x M derivative stacks; the stack path
// stays the general one and is their brute-force twin in the tests.
#include "kef/types.hpp"

namespace kef {

class RadialProfile {
 public:
  virtual ~RadialProfile() = default;

  // Elementwise on squared distances r (any shape, r ≥ 0): φ(r), φ'(r), φ''(r). Outputs that are
  // null are not computed; non-null outputs are resized to r's shape.
  virtual void evaluate(const Matrix& r, Matrix* phi, Matrix* dphi, Matrix* d2phi) const = 0;
};

}  // namespace kef
