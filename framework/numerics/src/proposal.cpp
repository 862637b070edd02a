#include "kef/proposal.hpp"

#include "kef/error.hpp"

namespace kef {

BaseMeasureProposal::BaseMeasureProposal(const BaseMeasure& base, Index dim) : base_(base), dim_(dim) {
  if (!base.can_sample())
    throw ConfigError("base measure " + base.type_name() +
                      " cannot be sampled, so it cannot serve as a proposal");
}

Matrix BaseMeasureProposal::sample(Index n, RandomStream& rng) const { return base_.sample(n, dim_, rng); }

Vector BaseMeasureProposal::log_density(const Matrix& X) const { return base_.log_density(X); }

Matrix BaseMeasureProposal::gradient(const Matrix& X) const {
  Matrix d1, d2;
  base_.derivatives(X, d1, d2);
  return d1;
}

std::string BaseMeasureProposal::describe() const {
  return "the model's base measure q0 (" + base_.type_name() + ")";
}

}  // namespace kef
