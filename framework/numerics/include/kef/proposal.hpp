#pragma once
// A proposal density for estimating a normaliser: normalised, samplable, with the gradient of its log
// density (annealed importance sampling moves along q^{1−β} p~^β and needs ∇ log q). Importance
// sampling (importance_sampling.hpp) and annealed importance sampling (the likelihood plugin's ais.hpp)
// draw from one.
#include <memory>
#include <string>

#include "kef/base_measure.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

class Proposal {
 public:
  virtual ~Proposal() = default;
  virtual Index dim() const = 0;
  virtual Matrix sample(Index n, RandomStream& rng) const = 0;  // n x dim
  virtual Vector log_density(const Matrix& X) const = 0;        // normalised
  virtual Matrix gradient(const Matrix& X) const = 0;           // ∇ log q, n x dim
  virtual std::string describe() const = 0;
};

using ProposalPtr = std::shared_ptr<const Proposal>;

// A model's base measure q0 seen as a proposal (it must be able to sample). Holds a reference: the
// base measure must outlive it.
class BaseMeasureProposal final : public Proposal {
 public:
  BaseMeasureProposal(const BaseMeasure& base, Index dim);
  Index dim() const override { return dim_; }
  Matrix sample(Index n, RandomStream& rng) const override;
  Vector log_density(const Matrix& X) const override;
  Matrix gradient(const Matrix& X) const override;
  std::string describe() const override;
  const BaseMeasure& base() const { return base_; }

 private:
  const BaseMeasure& base_;
  Index dim_;
};

}  // namespace kef
