#pragma once
// First-order optimisers for minimisation by stochastic gradients: what they share (the checks, the
// step count, parameter names in errors) in one base class, the update rule in each subclass (Adam in
// kef/adam.hpp, RMSprop in kef/network/rmsprop.hpp), and global-norm gradient clipping.
// A non-finite gradient or parameter is an error naming the parameter, never zeroed or skipped: it
// means the objective or its gradient is broken, and continuing would hide that.
#include <span>
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

class Optimizer {
 public:
  explicit Optimizer(std::string where);
  virtual ~Optimizer() = default;

  // Names used in error messages ("gradient[3] (log_sigma_1)"); optional.
  void set_parameter_names(std::vector<std::string> names) { names_ = std::move(names); }

  // The new parameters for the gradient of the objective at theta. The first step fixes the size;
  // Error on a size mismatch, NumericalError naming the index if theta or gradient is not finite (a
  // refused step changes nothing and does not count).
  Vector step(const Vector& theta, const Vector& gradient);
  // The same step written into theta (bitwise the same values), for training loops that keep their
  // parameters in one vector: no copy of θ per step.
  void step_in_place(Vector& theta, const Vector& gradient);

  // Forgets the optimiser's state and the step count (the next step is a "first" step again).
  void reset();
  Index steps() const { return steps_; }

 protected:
  // Called by step() after the checks, with steps() already counting this step: θ ← the new
  // parameters; allocate the state on the first one.
  virtual void update(Vector& theta, const Vector& gradient) = 0;
  virtual void forget() = 0;
  const std::string& where() const { return where_; }
  // ConfigError "where: option is out of range (expected ..., got ...)" unless ok.
  static void require(bool ok, const std::string& where, const char* option, const char* expected,
                      double got);

 private:
  // The checks and the step count shared by step() and step_in_place().
  void begin_step(const Vector& theta, const Vector& gradient);
  std::string label(Index i) const;
  std::string where_;
  std::vector<std::string> names_;
  Index steps_ = 0;
  Index size_ = 0;
};

// Scales the gradients together so that their joint Euclidean norm is at most max_norm: all by
// max_norm / (norm + 1e-6) when that factor is below 1 (the rule of PyTorch's clip_grad_norm_, which
// the reference implementations use). Returns the norm before clipping. Error unless max_norm is a
// finite number > 0; NumericalError when the norm is not finite.
double clip_global_norm(std::span<Vector* const> gradients, double max_norm);
double clip_global_norm(Vector& gradient, double max_norm);

}  // namespace kef
