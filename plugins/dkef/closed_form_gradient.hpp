#pragma once
// The gradient of DKEF's meta-objective (docs/math.md §5): the score-matching loss on a validation batch
// Dv of the lite fit α(θ; Dt) = −(G + λ_α I + λ_C U)^{-1} b on a training batch Dt, with respect to
// everything the fit depends on: kernel parameters, inducing points, log λ_α, log λ_C and the base
// measure's parameters. The adjoint of the Cholesky solve is w = A^{-1} ∂J_v/∂α; the adjoints of the
// training and validation derivative stacks then flow back through Kernel::backward and
// BaseMeasure::backward.
//
// Threads: both batches are split into row blocks of about 25 rows whose boundaries depend only on the
// batch sizes; the stacks, their contributions to G, U, b, the loss and ∂J/∂α, and each block's
// backward pass run in parallel over blocks, and the partial results are added in block order, so the
// results are bitwise identical for any thread count (tested for 1, 2 and 3). G, U, b and the loss
// are added in at most 8 runs of consecutive blocks (each run in block order, then the runs in
// order); closed_form_validation_loss shares these runs between the processes of a distributed run
// (kef/distributed_reduce.hpp) with the single-process result, and equals the gradient's loss bitwise.
// The gradient (a minibatch) is computed whole by every process.
#include <cstddef>
#include <memory>

#include "kef/base_measure.hpp"
#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/training_rows.hpp"
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
                                                   const Context& context);

// The loss alone (for line searches, early stopping and tests).
double closed_form_validation_loss(const Kernel& kernel, const BaseMeasure& base, const Matrix& train,
                                   const Matrix& validation, const Matrix& Z, double lambda_alpha,
                                   double lambda_c, const Context& context);

// Stage 2 of DKEF: the kernel and the inducing points are frozen, only log λ_α, log λ_C (and, if
// `base_learns`, q0's parameters) change. The construction computes the derivative stacks once and
// keeps their statistics — G = B1ᵀB1/N, U = B2ᵀB2/N, B2ᵀ1 on the training rows; B1vᵀB1v, B2vᵀ1 on
// the validation rows; and, while q0 is fixed, B1ᵀq1, B2ᵀq2, B1vᵀq1v, Σq2v, |q1v|² — so one
// evaluation costs a Cholesky of M x M plus M-vector products, with the validation loss expanded as
// J_v(α) = (B2vᵀ1·α + Σq2v + ½ αᵀB1vᵀB1v α + αᵀB1vᵀq1v + ½|q1v|²)/Nv. The kernel is never touched
// again (its parameters must stay unchanged while this object is used: a std::logic_error otherwise).
//
// When q0 learns, B1ᵀq1, B2ᵀq2 and B1vᵀq1v depend on q0's parameters and its adjoints need B1 w,
// B2 w and B1v α per row, so the stacks B1, B2, B1v are kept in memory if they fit
// `stack_budget_bytes` (the dkef estimator's `stage2_memory_mb`) and otherwise recomputed block by
// block at every evaluation (through Kernel::derivatives only; no backward pass), with bitwise the
// same results. q0's derivatives are re-read at every evaluation; if q0 does not learn, evaluating
// after its parameters changed is a std::logic_error.
//
// Processes: the statistics and q0's two passes are ordered reductions over at most 8 runs of blocks,
// shared between the processes of a distributed run (each keeps only its own blocks' stacks; whether
// they are kept is decided on all rows' stacks, as by one process), bitwise the single-process result.
//
// Equal to closed_form_validation_gradient's loss and λ/q0 gradients up to rounding (the expanded
// quadratic form adds O(ε·(αᵀB1vᵀB1v α + |q1v|²)/Nv) to the loss); the same fixed row blocks and
// block-order reductions make results bitwise identical for any thread count.
struct FrozenKernelGradient {
  double loss = 0;
  Vector alpha;
  double log_lambda_alpha = 0;
  double log_lambda_c = 0;
  Vector base;  // dJ/d(q0 parameters); zeros (of q0's parameter count) when q0 does not learn
  double jitter = 0;
};

class FrozenKernelMetaProblem {
 public:
  static constexpr std::size_t kDefaultStackBudgetBytes = std::size_t{512} << 20;

  FrozenKernelMetaProblem(const Kernel& kernel, const BaseMeasure& base, const Matrix& train,
                          const Matrix& validation, const Matrix& Z, bool base_learns, const Context& context,
                          std::size_t stack_budget_bytes = kDefaultStackBudgetBytes);
  // The same with the training rows read by blocks (kef/training_rows.hpp: a split a distributed run
  // leaves in the data file): each process reads only the blocks it sums, at construction and at each
  // evaluation whose stacks are not kept; the same bits as for the held rows.
  FrozenKernelMetaProblem(const Kernel& kernel, const BaseMeasure& base, TrainingRowsPtr train,
                          const Matrix& validation, const Matrix& Z, bool base_learns, const Context& context,
                          std::size_t stack_budget_bytes = kDefaultStackBudgetBytes);
  ~FrozenKernelMetaProblem();
  FrozenKernelMetaProblem(const FrozenKernelMetaProblem&) = delete;
  FrozenKernelMetaProblem& operator=(const FrozenKernelMetaProblem&) = delete;

  FrozenKernelGradient gradient(double lambda_alpha, double lambda_c) const;
  double loss(double lambda_alpha, double lambda_c) const;
  bool keeps_stacks() const;  // whether B1, B2, B1v are held in memory (q0 learns, within budget)

 private:
  struct Impl;
  void build(const Matrix& validation, const Matrix& Z, bool base_learns, std::size_t stack_budget_bytes);
  double evaluate(double lambda_alpha, double lambda_c, FrozenKernelGradient* gradient) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kef
