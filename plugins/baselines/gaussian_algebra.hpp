#pragma once
// Small dense helpers shared by the baselines' models: triangular solves with a Cholesky factor, one
// row at a time. Written as plain loops so that a row's result depends only on that row (never on
// how many rows a call holds), which keeps every evaluation independent of batching and threads.
#include <cmath>
#include <numbers>

#include "kef/types.hpp"

namespace kef::baselines {

// z = L⁻¹ v for lower-triangular L (forward substitution); z may not alias v.
inline void forward_solve(const Matrix& L, const double* v, double* z) {
  const Index D = L.rows();
  for (Index a = 0; a < D; ++a) {
    double s = v[a];
    for (Index b = 0; b < a; ++b) s -= L(a, b) * z[b];
    z[a] = s / L(a, a);
  }
}

// w = L⁻ᵀ z for lower-triangular L (back substitution with Lᵀ); w may not alias z.
inline void back_solve_transpose(const Matrix& L, const double* z, double* w) {
  const Index D = L.rows();
  for (Index a = D - 1; a >= 0; --a) {
    double s = z[a];
    for (Index b = a + 1; b < D; ++b) s -= L(b, a) * w[b];
    w[a] = s / L(a, a);
  }
}

// log of the N(0, I) density's constant in D dimensions: −(D/2) log 2π.
inline double standard_normal_log_constant(Index D) {
  return -0.5 * static_cast<double>(D) * std::log(2.0 * std::numbers::pi);
}

}  // namespace kef::baselines
