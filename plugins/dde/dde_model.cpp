#include "dde_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "dde_archive.hpp"
#include "kef/error.hpp"
#include "kef/normal_fill.hpp"

namespace kef::dde {

DdeModel::DdeModel(KernelExpansion f, double lambda, Architecture arch, network::Network generator,
                   network::Network dual, Vector lo, Vector hi)
    : f_(std::move(f)),
      lambda_(lambda),
      arch_(arch),
      generator_(std::move(generator)),
      dual_(std::move(dual)),
      lo_(std::move(lo)),
      hi_(std::move(hi)) {
  log_p0_ = -(hi_ - lo_).array().log().sum();
}

FacetSet DdeModel::facets() const {
  return FacetSet{Facet::LogDensity, Facet::Score, Facet::Laplacian, Facet::ApproximateSampler};
}

std::vector<bool> DdeModel::in_support(const Matrix& X) const {
  std::vector<bool> in(static_cast<std::size_t>(X.rows()));
  for (Index i = 0; i < X.rows(); ++i)
    in[static_cast<std::size_t>(i)] = (X.row(i).transpose().array() >= lo_.array()).all() &&
                                      (X.row(i).transpose().array() <= hi_.array()).all();
  return in;
}

Vector DdeModel::log_unnormalized(const Matrix& X) const {
  Vector out = lambda_ * f_.values(X);
  const auto in = in_support(X);
  for (Index i = 0; i < X.rows(); ++i)
    out[i] = in[static_cast<std::size_t>(i)] ? out[i] + log_p0_ : -std::numeric_limits<double>::infinity();
  return out;
}

// Inside the box log p0 is constant, so the score is λ∇f; outside (where p~ = 0) the same smooth
// expression is returned, and score-based metrics skip those rows (bounded_support()).
Matrix DdeModel::score(const Matrix& X) const { return lambda_ * f_.gradient(X); }

void DdeModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  score = lambda_ * f_.gradient(X, &laplacian);
  laplacian *= lambda_;
}

Matrix DdeModel::sampler_draws(Index n, RandomStream& rng) const {
  return generator_.value(normal_rows(rng, n, arch_.noise_dim));
}

Vector DdeModel::log_importance_weights(const Matrix& X) const {
  Vector lw = lambda_ * f_.values(X) - dual_.value(X).col(0);
  const auto in = in_support(X);
  for (Index i = 0; i < X.rows(); ++i)
    if (!in[static_cast<std::size_t>(i)]) lw[i] = -std::numeric_limits<double>::infinity();
  return lw;
}

Matrix DdeModel::sample(Index n, RandomStream& rng) const {
  if (!correction_.importance) return sampler_draws(n, rng);
  // n · candidates draws of the sampler, then n rows resampled from all of them.
  const Matrix cand = sampler_draws(n * correction_.candidates, rng);
  return importance_resample(cand, log_importance_weights(cand), n, rng);
}

SamplerDiagnostic DdeModel::diagnose(Index m, RandomStream& rng) const {
  return diagnose_log_weights(log_importance_weights(sampler_draws(m, rng)));
}

std::string DdeModel::describe() const {
  std::ostringstream os;
  os << "dde: f over " << f_.alpha.size()
     << (f_.random_features() ? " random Fourier features" : " kernel centres") << " (Gaussian, gamma "
     << f_.gamma << "), lambda " << lambda_ << ", p0 uniform on the data box; sampler "
     << arch_.generator_depth << " ReLU layers of " << arch_.width << " from xi of dimension "
     << arch_.noise_dim << " (" << generator_.parameter_count() << " parameters), dual " << arch_.dual_depth
     << " layers of " << arch_.dual_hidden() << " (" << dual_.parameter_count() << " parameters), dimension "
     << dim();
  return os.str();
}

void DdeModel::save(ModelWriter& w) const {
  Config& m = w.manifest();
  m.set("dim", static_cast<std::int64_t>(dim()));
  save_expansion_and_networks(w, f_, lambda_, arch_, generator_, dual_);
  write_correction(w, correction_);
  for (const auto& [k, v] : fit_info_) m.set(k, v);
  w.write_array("box_lo", lo_);
  w.write_array("box_hi", hi_);
}

ModelPtr DdeModel::load(const ModelReader& r, Registry& /*registry*/) {
  Architecture a;
  a.dim = r.positive_integer("dim");
  SavedParts p = load_expansion_and_networks(r, a);
  Vector lo = r.read_vector("box_lo", a.dim), hi = r.read_vector("box_hi", a.dim);
  if (!((hi - lo).array() > 0.0).all()) r.fail("box_hi.npy must exceed box_lo.npy in every coordinate");
  auto model = std::make_shared<DdeModel>(std::move(p.f), p.lambda, a, std::move(p.generator),
                                          std::move(p.dual), std::move(lo), std::move(hi));
  model->set_correction(read_correction(r));
  return model;
}

}  // namespace kef::dde
