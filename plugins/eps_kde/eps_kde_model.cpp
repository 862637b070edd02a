#include "eps_kde_model.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "kef/conditional_inputs.hpp"
#include "kef/error.hpp"
#include "kef/isotropic_mixture.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef::eps_kde {

namespace {

std::vector<Index> every_row(Index n) {
  std::vector<Index> all(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
  return all;
}

}  // namespace

std::vector<std::vector<Index>> neighbourhoods(const Matrix& train_inputs, const Matrix& X, double epsilon) {
  std::vector<std::vector<Index>> out(static_cast<std::size_t>(X.rows()));
  const double e2 = epsilon * epsilon;
  for (Index n = 0; n < X.rows(); ++n)
    for (Index i = 0; i < train_inputs.rows(); ++i)
      if (squared_distance(X, n, train_inputs, i) <= e2) out[static_cast<std::size_t>(n)].push_back(i);
  return out;
}

Vector eps_kde_log_density(const Matrix& train_targets, const std::vector<std::vector<Index>>& hoods,
                           const Matrix& Y, double sigma) {
  const Index Dy = Y.cols();
  const double log_gauss = -0.5 * static_cast<double>(Dy) * std::log(2.0 * std::numbers::pi * sigma * sigma);
  const double c = 0.5 / (sigma * sigma);
  std::vector<Index> all;
  Vector t, w;
  Vector out(Y.rows());
  for (Index n = 0; n < Y.rows(); ++n) {
    const std::vector<Index>* hood = &hoods[static_cast<std::size_t>(n)];
    if (hood->empty()) {  // no neighbour within ε: the marginal KDE of y
      if (all.empty()) all = every_row(train_targets.rows());
      hood = &all;
    }
    t.resize(static_cast<Index>(hood->size()));
    for (std::size_t k = 0; k < hood->size(); ++k)
      t[static_cast<Index>(k)] = -c * squared_distance(Y, n, train_targets, (*hood)[k]);
    out[n] = logsumexp_softmax(t, w) - std::log(static_cast<double>(hood->size())) + log_gauss;
  }
  return out;
}

EpsKdeModel::EpsKdeModel(Matrix inputs, Matrix targets, double epsilon, double sigma)
    : X_(std::move(inputs)), Y_(std::move(targets)), epsilon_(epsilon), sigma_(sigma) {
  if (X_.rows() < 1 || X_.rows() != Y_.rows())
    throw ModelFileError("eps_kde: " + std::to_string(X_.rows()) + " training inputs and " +
                         std::to_string(Y_.rows()) + " targets");
  if (!(epsilon_ > 0) || !std::isfinite(epsilon_) || !(sigma_ > 0) || !std::isfinite(sigma_))
    throw ModelFileError("eps_kde: ε = " + number_text(epsilon_) + ", σ = " + number_text(sigma_) +
                         " (expected both positive and finite)");
}

FacetSet EpsKdeModel::facets() const {
  return {Facet::ConditionalDensity, Facet::ConditionalScore, Facet::ConditionalSampler};
}

Vector EpsKdeModel::log_unnormalized(const Matrix&) const {
  throw ConfigError("model eps_kde is a conditional density p(y | x) and has no log density of whole rows");
}

void EpsKdeModel::check_inputs(const Matrix& X, const Matrix* Y) const {
  check_conditional_inputs(*this, "eps_kde", X, Y);
}

std::vector<std::vector<Index>> EpsKdeModel::hoods_or_all(const Matrix& X) const {
  std::vector<std::vector<Index>> hoods = neighbourhoods(X_, X, epsilon_);
  for (auto& h : hoods)
    if (h.empty()) h = every_row(X_.rows());
  return hoods;
}

std::vector<Index> EpsKdeModel::neighbour_counts(const Matrix& X) const {
  check_inputs(X, nullptr);
  std::vector<Index> out;
  for (const auto& h : neighbourhoods(X_, X, epsilon_)) out.push_back(static_cast<Index>(h.size()));
  return out;
}

Vector EpsKdeModel::log_unnormalized(const Matrix& X, const Matrix& Y) const {
  check_inputs(X, &Y);
  return eps_kde_log_density(Y_, neighbourhoods(X_, X, epsilon_), Y, sigma_);
}

Matrix EpsKdeModel::score(const Matrix& X, const Matrix& Y) const {
  Matrix s, lap;
  score_and_laplacian(X, Y, s, lap);
  return s;
}

// An equally weighted mixture of N(y; y_i, σ² I) over the neighbours (kef/isotropic_mixture.hpp).
void EpsKdeModel::score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score,
                                      Matrix& laplacian) const {
  check_inputs(X, &Y);
  const auto hoods = hoods_or_all(X);
  const double s2 = sigma_ * sigma_, c = 0.5 / s2;
  const Index Dy = target_dim();
  score.resize(X.rows(), Dy);
  laplacian.resize(X.rows(), Dy);
  Vector t, w;
  for (Index n = 0; n < X.rows(); ++n) {
    const auto& hood = hoods[static_cast<std::size_t>(n)];
    t.resize(static_cast<Index>(hood.size()));
    for (std::size_t k = 0; k < hood.size(); ++k)
      t[static_cast<Index>(k)] = -c * squared_distance(Y, n, Y_, hood[k]);
    logsumexp_softmax(t, w);
    isotropic_mixture_derivatives(
        w, [&](Index k, Index d) { return Y_(hood[static_cast<std::size_t>(k)], d); }, Y, n, s2, score,
        laplacian);
  }
}

Matrix EpsKdeModel::sample(const Matrix& X, RandomStream& rng) const {
  check_inputs(X, nullptr);
  const auto hoods = hoods_or_all(X);
  Matrix out(X.rows(), target_dim());
  for (Index n = 0; n < X.rows(); ++n) {
    const auto& hood = hoods[static_cast<std::size_t>(n)];
    const Index i = hood[static_cast<std::size_t>(rng.uniform_int(hood.size()))];
    for (Index d = 0; d < target_dim(); ++d) out(n, d) = Y_(i, d) + sigma_ * rng.normal();
  }
  return out;
}

std::string EpsKdeModel::describe() const {
  std::ostringstream s;
  s << "ε-neighbourhood KDE p(y | x): " << X_.rows() << " training pairs, ε = " << number_text(epsilon_)
    << ", σ = " << number_text(sigma_) << " (no neighbour within ε: the marginal KDE of y)";
  return s.str();
}

void EpsKdeModel::save(ModelWriter& w) const {
  w.manifest().set("dim", static_cast<std::int64_t>(dim()));
  w.write_array("inputs", X_);
  w.write_array("targets", Y_);
  Vector hyper(2);
  hyper << epsilon_, sigma_;
  w.write_array("epsilon_bandwidth", hyper);
}

ModelPtr EpsKdeModel::load(const ModelReader& r, Registry&) {
  const Matrix hyper = r.read_array("epsilon_bandwidth");
  if (hyper.size() != 2)
    throw ModelFileError(r.dir().string() + "/epsilon_bandwidth.npy: expected 2 values (ε, σ), got " +
                         std::to_string(hyper.size()));
  return std::make_shared<EpsKdeModel>(r.read_array("inputs"), r.read_array("targets"), hyper.data()[0],
                                       hyper.data()[1]);
}

}  // namespace kef::eps_kde
