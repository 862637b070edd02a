#pragma once
// Adam (Kingma & Ba 2015) for minimisation, with bias-corrected moment estimates. The optimiser of
// DKEF's training loop (docs/math.md §5) and of any plugin that learns parameters by stochastic
// gradients. The checks, the step count and the error messages are the Optimizer base's
// (kef/network/optimizer.hpp, with RMSprop and gradient clipping beside it).
#include <string>

#include "kef/network/optimizer.hpp"

namespace kef {

struct AdamOptions {
  double learning_rate = 1e-3;  // > 0
  double beta1 = 0.9;           // in [0, 1)
  double beta2 = 0.999;         // in [0, 1)
  double epsilon = 1e-8;        // > 0
};

class Adam final : public Optimizer {
 public:
  // Throws ConfigError naming `where` (e.g. the dotted config key of the estimator) and the option
  // when an option is out of range.
  explicit Adam(AdamOptions options = {}, std::string where = "Adam");
  const AdamOptions& options() const { return options_; }

 protected:
  // θ ← θ − lr · m̂ / (√v̂ + ε) for the gradient g of the objective at θ.
  void update(Vector& theta, const Vector& gradient) override;
  void forget() override;

 private:
  AdamOptions options_;
  Vector m_, v_;
};

}  // namespace kef
