#pragma once
// A defensive mixture proposal for importance sampling a normaliser (Hesterberg 1995; Owen & Zhou
// 2000): q = Σ_k w_k q_k with components that do not depend on the model's q0 covering its mass —
// the model's base measure (when it has one), a Student-t fitted to the data, and Gaussian bumps at
// data points (inducing or training points). Every ratio obeys p~/q <= p~/(w_k q_k) for each k, so
// the mixture is never much worse than its best component, and the bumps reach mass that sits at
// outlying data points, where a fitted model can put a narrow spike that q0 never proposes.
#include <vector>

#include "kef/column_summary.hpp"
#include "kef/proposal.hpp"
#include "kef/training_rows.hpp"

namespace kef {

// Equal-weight mixture of N(c_m, diag(h²)) over the rows c_m of `centres`.
class GaussianCentresProposal final : public Proposal {
 public:
  GaussianCentresProposal(Matrix centres, Vector bandwidth);
  // Bandwidth per coordinate: `factor` times Silverman's rule, sd_d·(4/((D + 2) n))^{1/(D+4)}, with
  // sd_d the standard deviation of `data` (n rows) in coordinate d.
  static Vector silverman_bandwidth(const Matrix& data, double factor);
  // The same from the data's summary (kef/column_summary.hpp).
  static Vector silverman_bandwidth(const ColumnSummary& data, double factor);

  Index dim() const override { return centres_.cols(); }
  Matrix sample(Index n, RandomStream& rng) const override;
  Vector log_density(const Matrix& X) const override;
  Matrix gradient(const Matrix& X) const override;
  std::string describe() const override;

  const Matrix& centres() const { return centres_; }
  const Vector& bandwidth() const { return bandwidth_; }

 private:
  // Per row of X: log N(x; c_m, h²) for every m (n x M).
  Matrix component_log_densities(const Matrix& X) const;
  Matrix centres_;
  Vector bandwidth_;
  Matrix scaled_centres_;  // centres / h, per coordinate
  double log_norm_ = 0.0;  // log of N(0; 0, diag(h²))
};

// Σ_k w_k q_k. sample(n) draws the component of each of the n draws from rng, then each component's
// draws in one call (component order), so the draws depend only on rng.
class MixtureProposal final : public Proposal {
 public:
  // Weights are normalised; components with weight 0 are dropped. ConfigError for no positive weight,
  // a negative or non-finite weight, or components of different dimensions.
  MixtureProposal(std::vector<ProposalPtr> components, std::vector<double> weights);

  Index dim() const override { return components_.front()->dim(); }
  Matrix sample(Index n, RandomStream& rng) const override;
  Vector log_density(const Matrix& X) const override;
  Matrix gradient(const Matrix& X) const override;
  std::string describe() const override;

  const std::vector<ProposalPtr>& components() const { return components_; }
  const std::vector<double>& weights() const { return weights_; }

 private:
  // log w_k + log q_k(x), n x K.
  Matrix weighted_log_densities(const Matrix& X) const;
  std::vector<ProposalPtr> components_;
  std::vector<double> weights_;
};

struct DefensiveOptions {
  // Weights of q0, the Student-t and the Gaussian bumps (normalised; q0's is dropped when there is
  // no samplable base measure).
  double weight_base = 1.0, weight_student_t = 1.0, weight_centres = 1.0;
  double dof = 3.0;          // of the Student-t
  Index max_centres = 1000;  // bumps at most at this many data rows (a random subset)
  // Bump bandwidths, each a multiple of Silverman's rule: one family of bumps per factor, sharing
  // weight_centres equally.
  std::vector<double> bandwidth_factors = {1.0, 0.25};
};

// The defensive mixture for a model of dimension data.cols(): q0 = base (may be null), the Student-t
// fitted to `data`, and bumps at the rows of `inducing` (may have 0 rows) and of `data` (at most
// max_centres in all, a subset drawn from rng when there are more) with Silverman's bandwidth of `data`.
// `data` is read in blocks for its summary and by position for the bumps' centres, so a training split
// left in the data file (kef/training_rows.hpp) is never held; the mixture is the same bits as for
// the held rows.
MixtureProposal make_defensive_proposal(const BaseMeasure* base, const TrainingRows& data, const Matrix& inducing,
                                        const DefensiveOptions& options, RandomStream& rng);
MixtureProposal make_defensive_proposal(const BaseMeasure* base, const Matrix& data, const Matrix& inducing,
                                        const DefensiveOptions& options, RandomStream& rng);

}  // namespace kef
