#include "kef/defensive_proposal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "kef/categorical.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/student_t_proposal.hpp"
#include "kef/vector_exp.hpp"

namespace kef {
namespace {

// Per row: the softmax of the row (the responsibilities of a mixture), n x K.
Matrix row_softmax(const Matrix& A) {
  Matrix W(A.rows(), A.cols());
  for (Index i = 0; i < A.rows(); ++i) {
    const double m = A.row(i).maxCoeff();
    if (!std::isfinite(m)) {
      W.row(i).setZero();
      continue;
    }
    W.row(i) = (A.row(i).array() - m).exp();
    W.row(i) /= W.row(i).sum();
  }
  return W;
}

}  // namespace

GaussianCentresProposal::GaussianCentresProposal(Matrix centres, Vector bandwidth)
    : centres_(std::move(centres)), bandwidth_(std::move(bandwidth)) {
  if (centres_.rows() < 1 || bandwidth_.size() != centres_.cols())
    throw ConfigError("Gaussian-bump proposal: needs at least one centre and one bandwidth per coordinate");
  if (!centres_.allFinite() || !(bandwidth_.array() > 0.0).all() || !bandwidth_.allFinite())
    throw DataError("Gaussian-bump proposal: centres must be finite and bandwidths finite and > 0");
  scaled_centres_ = centres_ * bandwidth_.cwiseInverse().asDiagonal();
  log_norm_ =
      -0.5 * static_cast<double>(dim()) * std::log(2.0 * std::numbers::pi) - bandwidth_.array().log().sum();
}

Vector GaussianCentresProposal::silverman_bandwidth(const Matrix& data, double factor) {
  return silverman_bandwidth(summarize_columns(data), factor);
}

Vector GaussianCentresProposal::silverman_bandwidth(const ColumnSummary& data, double factor) {
  const Index n = data.rows, D = data.mean.size();
  if (n < 2) throw DataError("Gaussian-bump proposal: needs at least 2 data rows for a bandwidth");
  if (!data.finite) throw DataError("Gaussian-bump proposal: the data are not finite");
  Vector sd = data.sd();
  // A constant column would give a zero bandwidth: borrow the mean scale of the others (or 1).
  const double positive_mean =
      (sd.array() > 0).any() ? sd.sum() / static_cast<double>((sd.array() > 0).count()) : 1.0;
  for (Index d = 0; d < D; ++d)
    if (!(sd[d] > 0)) sd[d] = positive_mean;
  const double dd = static_cast<double>(D);
  const double rule = std::pow(4.0 / ((dd + 2.0) * static_cast<double>(n)), 1.0 / (dd + 4.0));
  return factor * rule * sd;
}

Matrix GaussianCentresProposal::component_log_densities(const Matrix& X) const {
  const Matrix Xs = X * bandwidth_.cwiseInverse().asDiagonal();
  return (log_norm_ - 0.5 * squared_distances(Xs, scaled_centres_).array()).matrix();
}

Matrix GaussianCentresProposal::sample(Index n, RandomStream& rng) const {
  const Index D = dim(), M = centres_.rows();
  Matrix X(n, D);
  for (Index i = 0; i < n; ++i) {
    const auto m = static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(M)));
    for (Index d = 0; d < D; ++d) X(i, d) = centres_(m, d) + bandwidth_[d] * rng.normal();
  }
  return X;
}

Vector GaussianCentresProposal::log_density(const Matrix& X) const {
  return (row_logsumexp(component_log_densities(X)).array() - std::log(static_cast<double>(centres_.rows())))
      .matrix();
}

Matrix GaussianCentresProposal::gradient(const Matrix& X) const {
  // Σ_m π_m(x) (c_m − x)/h², π the responsibilities.
  const Matrix W = row_softmax(component_log_densities(X));
  const Matrix toward = W * centres_ - X;
  return toward * bandwidth_.array().square().inverse().matrix().asDiagonal();
}

std::string GaussianCentresProposal::describe() const {
  std::ostringstream os;
  os << "Gaussian bumps at " << centres_.rows() << " points (bandwidth " << bandwidth_.minCoeff() << " to "
     << bandwidth_.maxCoeff() << ")";
  return os.str();
}

MixtureProposal::MixtureProposal(std::vector<ProposalPtr> components, std::vector<double> weights) {
  if (components.size() != weights.size() || components.empty())
    throw ConfigError("mixture proposal: needs as many weights as components, and at least one");
  double total = 0.0;
  for (double w : weights) {
    if (!(w >= 0.0) || !std::isfinite(w))
      throw ConfigError("mixture proposal: weights must be finite and >= 0 (got " + std::to_string(w) + ")");
    total += w;
  }
  if (!(total > 0.0)) throw ConfigError("mixture proposal: at least one weight must be positive");
  for (std::size_t k = 0; k < components.size(); ++k) {
    if (weights[k] == 0.0) continue;
    if (!components[k]) throw ConfigError("mixture proposal: a component is missing");
    components_.push_back(components[k]);
    weights_.push_back(weights[k] / total);
  }
  for (const auto& c : components_)
    if (c->dim() != components_.front()->dim())
      throw ConfigError("mixture proposal: components of different dimensions");
}

Matrix MixtureProposal::sample(Index n, RandomStream& rng) const {
  const std::size_t K = components_.size();
  const std::vector<Index> count = draw_categorical_counts(weights_, n, rng);
  Matrix X(n, dim());
  Index row = 0;
  for (std::size_t k = 0; k < K; ++k) {
    if (count[k] == 0) continue;
    X.middleRows(row, count[k]) = components_[k]->sample(count[k], rng);
    row += count[k];
  }
  return X;
}

Matrix MixtureProposal::weighted_log_densities(const Matrix& X) const {
  Matrix L(X.rows(), static_cast<Index>(components_.size()));
  for (std::size_t k = 0; k < components_.size(); ++k)
    L.col(static_cast<Index>(k)) = (components_[k]->log_density(X).array() + std::log(weights_[k])).matrix();
  return L;
}

Vector MixtureProposal::log_density(const Matrix& X) const {
  return row_logsumexp(weighted_log_densities(X));
}

Matrix MixtureProposal::gradient(const Matrix& X) const {
  const Matrix R = row_softmax(weighted_log_densities(X));
  Matrix G = Matrix::Zero(X.rows(), X.cols());
  for (std::size_t k = 0; k < components_.size(); ++k) {
    const Matrix g = components_[k]->gradient(X);
    // A component whose density is 0 at x (responsibility 0) may have a non-finite gradient there.
    for (Index i = 0; i < X.rows(); ++i)
      if (R(i, static_cast<Index>(k)) > 0.0) G.row(i) += R(i, static_cast<Index>(k)) * g.row(i);
  }
  return G;
}

std::string MixtureProposal::describe() const {
  std::ostringstream os;
  os << "mixture of ";
  for (std::size_t k = 0; k < components_.size(); ++k)
    os << (k ? " + " : "") << weights_[k] << " × " << components_[k]->describe();
  return os.str();
}

MixtureProposal make_defensive_proposal(const BaseMeasure* base, const Matrix& data, const Matrix& inducing,
                                        const DefensiveOptions& o, RandomStream& rng) {
  return make_defensive_proposal(base, MatrixRows(data), inducing, o, rng);
}

MixtureProposal make_defensive_proposal(const BaseMeasure* base, const TrainingRows& data, const Matrix& inducing,
                                        const DefensiveOptions& o, RandomStream& rng) {
  const Index D = data.cols();
  if (o.max_centres < 1) throw ConfigError("defensive proposal: max_centres must be >= 1");
  const ColumnSummary summary = summarize_columns(data);
  std::vector<ProposalPtr> components;
  std::vector<double> weights;
  if (base && base->can_sample() && o.weight_base > 0.0) {
    components.push_back(std::make_shared<BaseMeasureProposal>(*base, D));
    weights.push_back(o.weight_base);
  }
  components.push_back(std::make_shared<StudentTProposal>(StudentTProposal::fit(summary, o.dof)));
  weights.push_back(o.weight_student_t);
  // Bumps at the inducing points (where a kernel model can put its mass) and at data rows (an
  // outlying row can carry a spike), at most max_centres in all, a random subset when more. The pool
  // is the inducing rows, then the data rows; only the data rows drawn are read.
  const Index pool = inducing.rows() + data.rows();
  const Index k = std::min(o.max_centres, pool);
  const std::vector<Index> rows = sample_without_replacement(pool, k, rng);
  std::vector<Index> data_positions;
  for (Index r : rows)
    if (r >= inducing.rows()) data_positions.push_back(r - inducing.rows());
  const Matrix picked = data.pick(data_positions);
  Matrix centres(k, D);
  Index next_data = 0;
  for (Index i = 0; i < k; ++i) {
    const Index r = rows[static_cast<std::size_t>(i)];
    centres.row(i) = r < inducing.rows() ? inducing.row(r) : picked.row(next_data++);
  }
  // One bump family per bandwidth factor, sharing the centres and the bumps' weight: a model can be far
  // narrower than the data's scale at an outlying point (a spike), and wide bumps reach it only rarely.
  if (o.bandwidth_factors.empty())
    throw ConfigError("defensive proposal: needs at least one bandwidth factor");
  for (double factor : o.bandwidth_factors) {
    components.push_back(std::make_shared<GaussianCentresProposal>(
        centres, GaussianCentresProposal::silverman_bandwidth(summary, factor)));
    weights.push_back(o.weight_centres / static_cast<double>(o.bandwidth_factors.size()));
  }
  return MixtureProposal(std::move(components), std::move(weights));
}

}  // namespace kef
