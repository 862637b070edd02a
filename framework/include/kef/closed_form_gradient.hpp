#pragma once
// The gradient of DKEF's meta-objective (MATH.md §5): the score-matching loss on a validation batch
// Dv of the lite fit α(θ; Dt) = −(G + λ_α I + λ_C U)^{-1} b on a training batch Dt, with respect to
// everything the fit depends on: kernel parameters, inducing points, log λ_α, log λ_C and the base
// measure's parameters. The adjoint of the Cholesky solve is w = A^{-1} ∂J_v/∂α; the adjoints of the
// training and validation derivative stacks then flow back through Kernel::backward and
// BaseMeasure::backward.
//
// Threads: both batches are split into row blocks of about 25 rows whose boundaries depend only on the
// batch sizes; the stacks, their contributions to G, U, b, the loss and ∂J/∂α, and each block's
// backward pass run in parallel over blocks, and the partial results are added in block order, so the
// results are bitwise identical for any `threads` (tested for 1, 2 and 3).
#include "kef/base_measure.hpp"
#include "kef/kernel.hpp"
#include "kef/types.hpp"

namespace kef {

struct ClosedFormGradient {
  double loss = 0;        // J(α(θ; Dt), Dv)
  Vector alpha;           // α(θ; Dt)
  Vector kernel;          // dJ/d(kernel parameters)
  Matrix inducing;        // dJ/dZ (M x D)
  double log_lambda_alpha = 0;
  double log_lambda_c = 0;
  Vector base;            // dJ/d(base measure parameters)
  double jitter = 0;      // jitter the Cholesky factorisation needed
};

ClosedFormGradient closed_form_validation_gradient(const Kernel& kernel, const BaseMeasure& base,
                                                   const Matrix& train, const Matrix& validation,
                                                   const Matrix& Z, double lambda_alpha, double lambda_c,
                                                   int threads = 1);

// The loss alone (for line searches, early stopping and tests).
double closed_form_validation_loss(const Kernel& kernel, const BaseMeasure& base, const Matrix& train,
                                   const Matrix& validation, const Matrix& Z, double lambda_alpha,
                                   double lambda_c, int threads = 1);

}  // namespace kef
