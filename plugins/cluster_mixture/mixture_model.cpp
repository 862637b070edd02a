#include "mixture_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "kef/categorical.hpp"
#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef::cluster_mixture {

// ---------------------------------------------------------------------------------------------
// MixtureBaseMeasure

MixtureBaseMeasure::MixtureBaseMeasure(std::vector<std::shared_ptr<const BaseMeasure>> parts, Vector weights)
    : parts_(std::move(parts)), log_weights_(weights.array().log().matrix()), weights_(std::move(weights)) {
  attach_config("cluster_mixture_components", Config());
}

void MixtureBaseMeasure::check_dimension(Index dim) const {
  for (const auto& b : parts_) b->check_dimension(dim);
}

Matrix MixtureBaseMeasure::log_terms(const Matrix& X) const {
  Matrix T(X.rows(), static_cast<Index>(parts_.size()));
  for (std::size_t k = 0; k < parts_.size(); ++k)
    T.col(static_cast<Index>(k)) = parts_[k]->log_density(X).array() + log_weights_[static_cast<Index>(k)];
  return T;
}

Vector MixtureBaseMeasure::log_density(const Matrix& X) const { return row_logsumexp(log_terms(X)); }

void MixtureBaseMeasure::derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const {
  const Matrix T = log_terms(X);
  const Vector lse = row_logsumexp(T);
  const Index n = X.rows(), D = X.cols(), K = T.cols();
  std::vector<Matrix> g1(static_cast<std::size_t>(K)), g2(static_cast<std::size_t>(K));
  d1 = Matrix::Zero(n, D);
  Matrix gamma(n, K);
  for (Index k = 0; k < K; ++k) {
    parts_[static_cast<std::size_t>(k)]->derivatives(X, g1[static_cast<std::size_t>(k)],
                                                     g2[static_cast<std::size_t>(k)]);
    for (Index i = 0; i < n; ++i) {
      gamma(i, k) = lse[i] == -kInf ? 0.0 : std::exp(T(i, k) - lse[i]);
      if (gamma(i, k) > 0) d1.row(i) += gamma(i, k) * g1[static_cast<std::size_t>(k)].row(i);
    }
  }
  d2 = Matrix::Zero(n, D);
  for (Index k = 0; k < K; ++k)
    for (Index i = 0; i < n; ++i)
      if (gamma(i, k) > 0)
        d2.row(i) += gamma(i, k) * (g2[static_cast<std::size_t>(k)].row(i).array() +
                                    (g1[static_cast<std::size_t>(k)].row(i) - d1.row(i)).array().square())
                                       .matrix();
}

bool MixtureBaseMeasure::can_sample() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& b) { return b->can_sample(); });
}

Matrix MixtureBaseMeasure::sample(Index n, Index dim, RandomStream& rng) const {
  const Index K = static_cast<Index>(parts_.size());
  const std::vector<Index> counts =
      draw_categorical_counts({weights_.data(), static_cast<std::size_t>(K)}, n, rng);
  Matrix out(n, dim);
  Index row = 0;
  for (Index k = 0; k < K; ++k) {
    const Index c = counts[static_cast<std::size_t>(k)];
    if (c == 0) continue;
    RandomStream part = rng.derive(static_cast<std::uint64_t>(k));
    out.middleRows(row, c) = parts_[static_cast<std::size_t>(k)]->sample(c, dim, part);
    row += c;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// MixtureModel

MixtureModel::MixtureModel(std::vector<ModelPtr> components, Vector weights, Vector log_normalizers,
                           MixtureInfo info)
    : components_(std::move(components)),
      weights_(std::move(weights)),
      log_z_(std::move(log_normalizers)),
      info_(std::move(info)) {
  const Index K = static_cast<Index>(components_.size());
  if (K < 1 || weights_.size() != K || log_z_.size() != K)
    throw Error("cluster_mixture: " + std::to_string(K) + " components with " +
                std::to_string(weights_.size()) + " weights and " + std::to_string(log_z_.size()) +
                " log normalisers");
  for (Index k = 0; k < K; ++k) {
    if (!(weights_[k] > 0) || !std::isfinite(weights_[k]) || !std::isfinite(log_z_[k]))
      throw NumericalError("cluster_mixture: component " + std::to_string(k) + " has weight " +
                           number_text(weights_[k]) + " and log normaliser " + number_text(log_z_[k]));
    if (components_[static_cast<std::size_t>(k)]->dim() != components_.front()->dim())
      throw Error("cluster_mixture: components of different dimensions");
  }
  offsets_ = weights_.array().log().matrix() - log_z_;
  std::vector<std::shared_ptr<const BaseMeasure>> bases;
  for (const auto& c : components_)
    if (const BaseMeasure* b = c->base_measure()) bases.emplace_back(c, b);  // aliasing: owned by c
  if (static_cast<Index>(bases.size()) == K) base_ = std::make_unique<MixtureBaseMeasure>(bases, weights_);
  exact_ = true;
  for (Index k = 0; k < K; ++k) {
    const std::optional<double> z = components_[static_cast<std::size_t>(k)]->log_normalizer();
    exact_ = exact_ && z && *z == log_z_[k];
  }
}

FacetSet MixtureModel::facets() const {
  bool score = true, laplacian = true, sampler = exact_;
  for (const ModelPtr& c : components_) {
    const FacetSet f = c->facets();
    score = score && f.has(Facet::Score);
    laplacian = laplacian && f.has(Facet::Laplacian);
    sampler = sampler && f.has(Facet::Sampler);
  }
  FacetSet out = Facet::LogDensity;
  if (score) out |= Facet::Score;
  if (laplacian) out |= Facet::Laplacian;
  if (exact_) out |= Facet::NormalizedDensity;
  if (sampler) out |= Facet::Sampler;
  if (base_) out |= Facet::BaseMeasureRatio;
  return out;
}

std::optional<double> MixtureModel::log_normalizer() const {
  if (!exact_) return std::nullopt;
  return 0.0;
}

bool MixtureModel::can_sample() const { return facets().has(Facet::Sampler); }

Matrix MixtureModel::sample(Index n, RandomStream& rng) const {
  if (!can_sample())
    throw ConfigError("cluster_mixture model: cannot sample exactly (" +
                      std::string(exact_ ? "a component has no exact sampler"
                                         : "its components' normalisers are estimates") +
                      "); use HMC");
  const Index K = components();
  std::vector<Index> label(static_cast<std::size_t>(n));
  std::vector<Index> counts(static_cast<std::size_t>(K), 0);
  for (Index i = 0; i < n; ++i) {
    label[static_cast<std::size_t>(i)] =
        draw_categorical({weights_.data(), static_cast<std::size_t>(K)}, rng);
    ++counts[static_cast<std::size_t>(label[static_cast<std::size_t>(i)])];
  }
  Matrix out(n, dim());
  for (Index k = 0; k < K; ++k) {
    const Index c = counts[static_cast<std::size_t>(k)];
    if (c == 0) continue;
    RandomStream part = rng.derive(static_cast<std::uint64_t>(k));
    const Matrix draws = components_[static_cast<std::size_t>(k)]->sample(c, part);
    Index next = 0;
    for (Index i = 0; i < n; ++i)
      if (label[static_cast<std::size_t>(i)] == k) out.row(i) = draws.row(next++);
  }
  return out;
}

void MixtureModel::check_input(const Matrix& X) const {
  if (X.cols() != dim())
    throw DataError("cluster_mixture model: rows of dimension " + std::to_string(X.cols()) +
                    ", the model has " + std::to_string(dim()));
}

Matrix MixtureModel::log_terms(const Matrix& X) const {
  check_input(X);
  const Index K = components();
  Matrix T(X.rows(), K);
  for (Index k = 0; k < K; ++k) {
    const Vector lp = components_[static_cast<std::size_t>(k)]->log_unnormalized(X);
    for (Index i = 0; i < X.rows(); ++i)
      if (std::isnan(lp[i]) || lp[i] == kInf)
        throw NumericalError("cluster_mixture: component " + std::to_string(k) +
                             " has log p~ = " + number_text(lp[i]) + " at row " + std::to_string(i));
    T.col(k) = lp.array() + offsets_[k];
  }
  return T;
}

Vector MixtureModel::log_unnormalized(const Matrix& X) const { return row_logsumexp(log_terms(X)); }

Matrix MixtureModel::responsibilities(const Matrix& X) const {
  const Matrix T = log_terms(X);
  const Vector lse = row_logsumexp(T);
  Matrix gamma(T.rows(), T.cols());
  for (Index i = 0; i < T.rows(); ++i) {
    if (lse[i] == -kInf)
      throw NumericalError("cluster_mixture: every component has p~ = 0 at row " + std::to_string(i) +
                           ", so the score is undefined there");
    gamma.row(i) = (T.row(i).array() - lse[i]).exp();
  }
  return gamma;
}

Matrix MixtureModel::score(const Matrix& X) const {
  const Matrix gamma = responsibilities(X);
  Matrix S = Matrix::Zero(X.rows(), X.cols());
  for (Index k = 0; k < components(); ++k) {
    const Matrix sk = components_[static_cast<std::size_t>(k)]->score(X);
    // Only where γ_k > 0: a component whose p~ vanishes may have an infinite score there.
    for (Index i = 0; i < X.rows(); ++i)
      if (gamma(i, k) > 0) S.row(i) += gamma(i, k) * sk.row(i);
  }
  check_finite(S, "cluster_mixture score");
  return S;
}

void MixtureModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  const Matrix gamma = responsibilities(X);
  const Index n = X.rows(), D = X.cols(), K = components();
  std::vector<Matrix> s(static_cast<std::size_t>(K)), h(static_cast<std::size_t>(K));
  score = Matrix::Zero(n, D);
  for (Index k = 0; k < K; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    components_[kk]->score_and_laplacian(X, s[kk], h[kk]);
    for (Index i = 0; i < n; ++i)
      if (gamma(i, k) > 0) score.row(i) += gamma(i, k) * s[kk].row(i);
  }
  laplacian = Matrix::Zero(n, D);
  for (Index k = 0; k < K; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    for (Index i = 0; i < n; ++i)
      if (gamma(i, k) > 0)
        laplacian.row(i) +=
            gamma(i, k) * (h[kk].row(i).array() + (s[kk].row(i) - score.row(i)).array().square()).matrix();
  }
  check_finite(score, "cluster_mixture score");
  check_finite(laplacian, "cluster_mixture Hessian diagonal");
}

std::optional<double> MixtureModel::log_ratio_lower_bound() const {
  if (!base_) return std::nullopt;
  double lower = kInf;
  for (Index k = 0; k < components(); ++k) {
    const std::optional<double> a = components_[static_cast<std::size_t>(k)]->log_ratio_lower_bound();
    if (!a) return std::nullopt;
    lower = std::min(lower, *a - log_z_[k]);
  }
  return lower;
}

std::string MixtureModel::describe() const {
  std::ostringstream os;
  os << "cluster_mixture of " << components() << " components (DKEF section 3.1): spectral clustering";
  if (info_.bandwidth > 0) os << " with affinity bandwidth " << number_text(info_.bandwidth);
  if (exact_) {
    os << "; each component exactly normalised (its own log Z), so the mixture is too";
  } else {
    os << "; each component normalised by importance sampling from "
       << (info_.normalizer_proposal == "defensive"
               ? "a defensive mixture (its base measure, a Student-t and "
                 "Gaussian bumps at its cluster's rows)"
               : "its base measure");
    if (info_.normalizer_samples > 0) os << " (" << info_.normalizer_samples << " proposals)";
  }
  for (Index k = 0; k < components(); ++k) {
    os << "; component " << k << ": weight " << number_text(weights_[k]);
    if (static_cast<Index>(info_.counts.size()) == components())
      os << " (" << info_.counts[static_cast<std::size_t>(k)] << " rows)";
    os << (exact_ ? ", log Z = " : ", log Ẑ = ") << number_text(log_z_[k]);
    if (!exact_ && info_.log_normalizer_stderr.size() == components())
      os << " ± " << number_text(info_.log_normalizer_stderr[k]);
    os << ", " << components_[static_cast<std::size_t>(k)]->describe();
  }
  return os.str();
}

bool MixtureModel::can_save() const {
  return std::all_of(components_.begin(), components_.end(), [](const ModelPtr& c) { return c->can_save(); });
}

void MixtureModel::save(ModelWriter& writer) const {
  const Index K = components();
  writer.manifest().set("dim", static_cast<std::int64_t>(dim()));
  writer.manifest().set("clusters", static_cast<std::int64_t>(K));
  writer.manifest().set("normalizer_samples", static_cast<std::int64_t>(info_.normalizer_samples));
  writer.manifest().set("normalizer_proposal", info_.normalizer_proposal);
  writer.manifest().set("bandwidth", info_.bandwidth);
  writer.write_array("weights", weights_);
  writer.write_array("log_normalizers", log_z_);
  if (info_.log_normalizer_stderr.size() == K)
    writer.write_array("log_normalizer_stderr", info_.log_normalizer_stderr);
  if (static_cast<Index>(info_.counts.size()) == K) {
    Vector counts(K);
    for (Index k = 0; k < K; ++k) counts[k] = static_cast<double>(info_.counts[static_cast<std::size_t>(k)]);
    writer.write_array("counts", counts);
  }
  // Each component is a complete saved model of its own, in componentK/.
  for (Index k = 0; k < K; ++k)
    save_model(*components_[static_cast<std::size_t>(k)], writer.dir() / ("component" + std::to_string(k)));
}

ModelPtr MixtureModel::load(const ModelReader& reader, Registry& registry) {
  const Config& m = reader.manifest();
  if (!m.has("clusters") || !m.holds_integer("clusters") || m.integer("clusters") < 1)
    reader.fail("`clusters` must be a positive integer");
  const Index K = m.integer("clusters");
  auto read_vector = [&](const std::string& name) {
    const Matrix a = reader.read_array(name);
    if (a.cols() != 1 || a.rows() != K)
      reader.fail(name + ".npy must hold " + std::to_string(K) + " values (one per component)");
    if (!a.allFinite()) reader.fail(name + ".npy has non-finite values");
    return Vector(a.col(0));
  };
  const Vector weights = read_vector("weights");
  const Vector log_z = read_vector("log_normalizers");
  if ((weights.array() <= 0).any()) reader.fail("weights.npy must be positive");
  MixtureInfo info;
  if (std::filesystem::exists(reader.dir() / "log_normalizer_stderr.npy"))
    info.log_normalizer_stderr = read_vector("log_normalizer_stderr");
  if (std::filesystem::exists(reader.dir() / "counts.npy")) {
    const Vector c = read_vector("counts");
    for (Index k = 0; k < K; ++k) info.counts.push_back(static_cast<Index>(c[k]));
  }
  if (m.has("normalizer_samples") && m.holds_integer("normalizer_samples"))
    info.normalizer_samples = m.integer("normalizer_samples");
  if (m.has("bandwidth")) info.bandwidth = m.number("bandwidth");
  if (m.has("normalizer_proposal")) info.normalizer_proposal = m.string("normalizer_proposal");
  std::vector<ModelPtr> components;
  for (Index k = 0; k < K; ++k) {
    ModelPtr c = load_model(reader.dir() / ("component" + std::to_string(k)), registry);
    if (reader.dim() >= 0 && c->dim() != reader.dim())
      reader.fail("component" + std::to_string(k) + " has dimension " + std::to_string(c->dim()) +
                  ", the mixture " + std::to_string(reader.dim()));
    components.push_back(std::move(c));
  }
  return std::make_shared<MixtureModel>(std::move(components), weights, log_z, std::move(info));
}

}  // namespace kef::cluster_mixture
