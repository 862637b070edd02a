#include "kef/adam.hpp"

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

Vector Adam::update(const Vector& theta, const Vector& gradient) {
  if (m_.size() != theta.size()) {
    m_ = Vector::Zero(theta.size());
    v_ = Vector::Zero(theta.size());
  }
  const double b1 = options_.beta1, b2 = options_.beta2;
  m_ = b1 * m_ + (1.0 - b1) * gradient;
  v_ = b2 * v_ + (1.0 - b2) * gradient.cwiseAbs2();
  // Bias correction: the moments start at zero, so early averages underestimate by 1 − β^t.
  const double c1 = 1.0 - std::pow(b1, static_cast<double>(steps()));
  const double c2 = 1.0 - std::pow(b2, static_cast<double>(steps()));
  const auto m_hat = m_.array() / c1;
  const auto v_hat = v_.array() / c2;
  return (theta.array() - options_.learning_rate * m_hat / (v_hat.sqrt() + options_.epsilon)).matrix();
}

}  // namespace kef
