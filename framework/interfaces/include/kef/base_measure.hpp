#pragma once
// The base measure q0 of log p~(x) = f(x) + log q0(x). log_density is the normalised log density
// (the importance-sampling log-likelihood needs it); the estimators only use its input derivatives.
#include <memory>

#include "kef/clonable.hpp"
#include "kef/component.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

class BaseMeasure : public Component {
 public:
  static constexpr const char* kInterface = "base_measure";

  // A deep copy (docs/design.md, "Components are values").
  std::unique_ptr<BaseMeasure> clone() const { return std::unique_ptr<BaseMeasure>(clone_raw()); }

  // Checks that the measure fits D-dimensional data (e.g. a `mean` list of the right length);
  // throws ConfigError naming the key otherwise.
  virtual void check_dimension(Index dim) const = 0;

  virtual Vector log_density(const Matrix& X) const = 0;
  // d1(n, d) = ∂_d log q0(x_n), d2(n, d) = ∂²_d log q0(x_n); both N x D.
  virtual void derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const = 0;

  virtual bool can_sample() const { return false; }
  virtual Matrix sample(Index n, Index dim, RandomStream& rng) const;

  // Reverse mode: adjoints of log_density (N), d1 and d2 (N x D); empty means zero.
  virtual void backward(const Matrix& X, const Vector& adj_log, const Matrix& adj_d1,
                        const Matrix& adj_d2, Vector& grad_params) const;

 protected:
  BaseMeasure* clone_raw() const override = 0;
};

using BaseMeasurePtr = std::shared_ptr<BaseMeasure>;

}  // namespace kef
