#pragma once
// RMSprop (Tieleman & Hinton 2012) in the form of PyTorch's torch.optim.RMSprop (no momentum, not
// centred), which DDE's reference uses for its dual network:
//   v ← α v + (1 − α) g²,  θ ← θ − lr · g / (√v + ε),  v starting at 0.
#include "kef/network/optimizer.hpp"

namespace kef {

struct RmsPropOptions {
  double learning_rate = 1e-2;  // > 0
  double alpha = 0.99;          // in [0, 1)
  double epsilon = 1e-8;        // > 0
};

class RmsProp final : public Optimizer {
 public:
  // Throws ConfigError naming `where` and the option when an option is out of range.
  explicit RmsProp(RmsPropOptions options = {}, std::string where = "RMSprop");
  const RmsPropOptions& options() const { return options_; }

 protected:
  void update(Vector& theta, const Vector& gradient) override;
  void forget() override { v_.resize(0); }

 private:
  RmsPropOptions options_;
  Vector v_;
};

}  // namespace kef
