#pragma once
// Adam (Kingma & Ba 2015) for minimisation, with bias-corrected moment estimates. The optimiser of
// DKEF's training loop (docs/math.md §5) and of any plugin that learns parameters by stochastic gradients.
// A non-finite gradient is an error naming the parameter, never zeroed or skipped: it means the
// objective or its gradient is broken, and continuing would hide that.
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

struct AdamOptions {
  double learning_rate = 1e-3;  // > 0
  double beta1 = 0.9;           // in [0, 1)
  double beta2 = 0.999;         // in [0, 1)
  double epsilon = 1e-8;        // > 0
};

class Adam {
 public:
  // Throws ConfigError naming `where` (e.g. the dotted config key of the estimator) and the option
  // when an option is out of range.
  explicit Adam(AdamOptions options = {}, std::string where = "Adam");

  // Names used in error messages ("gradient[3] (log_sigma_1)"); optional.
  void set_parameter_names(std::vector<std::string> names) { names_ = std::move(names); }

  // θ − lr · m̂ / (√v̂ + ε) for the gradient g of the objective at θ. The first call fixes the size;
  // Error on a size mismatch, NumericalError naming the index if θ or g is not finite.
  Vector step(const Vector& theta, const Vector& gradient);

  // Forgets the moments and the step count (the next step is a "first" step again).
  void reset();
  Index steps() const { return steps_; }
  const AdamOptions& options() const { return options_; }

 private:
  std::string label(Index i) const;
  AdamOptions options_;
  std::string where_;
  std::vector<std::string> names_;
  Vector m_, v_;
  Index steps_ = 0;
};

}  // namespace kef
