#include "kef/adam.hpp"

#include <cmath>
#include <sstream>

#include "kef/error.hpp"

namespace kef {

namespace {

void require(bool ok, const std::string& where, const char* option, const char* expected, double got) {
  if (ok) return;
  std::ostringstream os;
  os << where << ": " << option << " is out of range (expected " << expected << ", got " << got << ")";
  throw ConfigError(os.str());
}

}  // namespace

Adam::Adam(AdamOptions options, std::string where) : options_(options), where_(std::move(where)) {
  const auto& o = options_;
  require(std::isfinite(o.learning_rate) && o.learning_rate > 0.0, where_, "learning_rate",
          "a finite number > 0", o.learning_rate);
  require(o.beta1 >= 0.0 && o.beta1 < 1.0, where_, "beta1", "a number in [0, 1)", o.beta1);
  require(o.beta2 >= 0.0 && o.beta2 < 1.0, where_, "beta2", "a number in [0, 1)", o.beta2);
  require(std::isfinite(o.epsilon) && o.epsilon > 0.0, where_, "epsilon", "a finite number > 0", o.epsilon);
}

std::string Adam::label(Index i) const {
  std::ostringstream os;  // (not string operator+, which trips a false -Wrestrict in g++ 12)
  os << '[' << i << ']';
  if (i < static_cast<Index>(names_.size())) os << " (" << names_[static_cast<std::size_t>(i)] << ')';
  return os.str();
}

Vector Adam::step(const Vector& theta, const Vector& gradient) {
  if (theta.size() != gradient.size())
    throw Error(where_ + ": gradient has " + std::to_string(gradient.size()) + " values for " +
                std::to_string(theta.size()) + " parameters");
  if (steps_ > 0 && theta.size() != m_.size())
    throw Error(where_ + ": step with " + std::to_string(theta.size()) + " parameters after steps with " +
                std::to_string(m_.size()) + " (call reset() to start over)");
  for (Index i = 0; i < theta.size(); ++i) {
    if (!std::isfinite(gradient[i])) {
      std::ostringstream os;
      os << where_ << ": gradient" << label(i) << " is " << gradient[i] << " at step " << steps_ + 1
         << "; the objective or its gradient is not finite there";
      throw NumericalError(os.str());
    }
    if (!std::isfinite(theta[i])) {
      std::ostringstream os;
      os << where_ << ": parameter" << label(i) << " is " << theta[i] << " at step " << steps_ + 1;
      throw NumericalError(os.str());
    }
  }
  if (steps_ == 0) {
    m_ = Vector::Zero(theta.size());
    v_ = Vector::Zero(theta.size());
  }
  ++steps_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  m_ = b1 * m_ + (1.0 - b1) * gradient;
  v_ = b2 * v_ + (1.0 - b2) * gradient.cwiseAbs2();
  // Bias correction: the moments start at zero, so early averages underestimate by 1 − β^t.
  const double c1 = 1.0 - std::pow(b1, static_cast<double>(steps_));
  const double c2 = 1.0 - std::pow(b2, static_cast<double>(steps_));
  const auto m_hat = m_.array() / c1;
  const auto v_hat = v_.array() / c2;
  return (theta.array() - options_.learning_rate * m_hat / (v_hat.sqrt() + options_.epsilon)).matrix();
}

void Adam::reset() {
  m_.resize(0);
  v_.resize(0);
  steps_ = 0;
}

}  // namespace kef
