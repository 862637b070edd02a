#pragma once
// The y-derivatives of a mixture of isotropic Gaussians with a common variance s²,
//   p(y) ∝ Σ_k a_k N(y; c_k, s² I),
// the form of the conditional KDEs (eps_kde: the neighbours' targets; lscde: the basis functions'
// centres, weighted by their input factors). With w_k the responsibilities at y (softmax of the log
// terms, kef::logsumexp_softmax) and g_k = (c_k − y)/s²:
//   ∇_y log p       = Σ_k w_k g_k
//   ∂²/∂y_d² log p  = Σ_k w_k g_kd² − (Σ_k w_k g_kd)² − 1/s²
// (the Hessian of each Gaussian's log is −I/s², and the mixture adds the responsibilities' variance).
#include "kef/types.hpp"

namespace kef {

// Row n of `score` and `laplacian` at row n of Y; centre(k, d) is c_kd, for k < w.size().
template <class Centre>
void isotropic_mixture_derivatives(const Vector& w, const Centre& centre, const Matrix& Y, Index n, double s2,
                                   Matrix& score, Matrix& laplacian) {
  for (Index d = 0; d < Y.cols(); ++d) {
    double m1 = 0.0, m2 = 0.0;
    for (Index k = 0; k < w.size(); ++k) {
      const double g = (centre(k, d) - Y(n, d)) / s2;
      m1 += w[k] * g;
      m2 += w[k] * g * g;
    }
    score(n, d) = m1;
    laplacian(n, d) = m2 - m1 * m1 - 1.0 / s2;
  }
}

}  // namespace kef
