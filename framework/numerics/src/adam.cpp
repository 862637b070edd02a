#include "kef/adam.hpp"

#include <algorithm>
#include <cmath>

namespace kef {

Adam::Adam(AdamOptions options, std::string where) : Optimizer(std::move(where)), options_(options) {
  const auto& o = options_;
  require(std::isfinite(o.learning_rate) && o.learning_rate > 0.0, this->where(), "learning_rate",
          "a finite number > 0", o.learning_rate);
  require(o.beta1 >= 0.0 && o.beta1 < 1.0, this->where(), "beta1", "a number in [0, 1)", o.beta1);
  require(o.beta2 >= 0.0 && o.beta2 < 1.0, this->where(), "beta2", "a number in [0, 1)", o.beta2);
  require(std::isfinite(o.epsilon) && o.epsilon > 0.0, this->where(), "epsilon", "a finite number > 0",
          o.epsilon);
}

void Adam::forget() {
  m_.resize(0);
  v_.resize(0);
}

void Adam::update(Vector& theta, const Vector& gradient) {
  const Index n = theta.size();
  if (m_.size() != n) {
    m_ = Vector::Zero(n);
    v_ = Vector::Zero(n);
  }
  const double b1 = options_.beta1, b2 = options_.beta2, lr = options_.learning_rate, eps = options_.epsilon;
  // Bias correction: the moments start at zero, so early averages underestimate by 1 − β^t.
  const double c1 = 1.0 - std::pow(b1, static_cast<double>(steps()));
  const double c2 = 1.0 - std::pow(b2, static_cast<double>(steps()));
  // θ ← θ − (lr/c1)·m / (√v·(1/√c2) + ε): the textbook (m/c1)/(√(v/c2) + ε) with the bias
  // corrections folded into scalars, one division and one square root per element instead of three
  // divisions and a root. The update is bound by those (11% of a MAF training epoch), not by memory.
  const double step = lr / c1, inv_sqrt_c2 = 1.0 / std::sqrt(c2);
  m_.array() = b1 * m_.array() + (1.0 - b1) * gradient.array();
  v_.array() = b2 * v_.array() + (1.0 - b2) * gradient.array().square();
  theta.array() -= step * m_.array() / (v_.array().sqrt() * inv_sqrt_c2 + eps);
}
}  // namespace kef
