#include "dde_conditional_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <sstream>

#include "dde_archive.hpp"
#include "kef/conditional_inputs.hpp"
#include "kef/error.hpp"
#include "kef/normal_fill.hpp"

namespace kef::dde {

DdeConditionalModel::DdeConditionalModel(KernelExpansion f, double lambda, Architecture arch,
                                         network::Network generator, network::Network dual, BaseMeasure p0)
    : f_(std::move(f)),
      lambda_(lambda),
      arch_(arch),
      generator_(std::move(generator)),
      dual_(std::move(dual)),
      p0_(std::move(p0)) {
  if (arch_.cond_dim < 1 || f_.dim() != arch_.cond_dim + arch_.dim || p0_.dim() != arch_.dim)
    throw ModelFileError("dde_conditional: kernel centres of " + std::to_string(f_.dim()) + " columns, " +
                         std::to_string(arch_.cond_dim) + " input and " + std::to_string(arch_.dim) +
                         " target columns, a base measure of " + std::to_string(p0_.dim()) +
                         " (expected centres of input + target columns and p0 of the target columns)");
}

FacetSet DdeConditionalModel::facets() const {
  return {Facet::ConditionalDensity, Facet::ConditionalScore, Facet::ConditionalSampler,
          Facet::ApproximateSampler};
}

Vector DdeConditionalModel::log_unnormalized(const Matrix&) const {
  throw ConfigError(
      "model dde_conditional is a conditional density p(y | x) and has no log density of whole rows");
}

Matrix DdeConditionalModel::joint(const Matrix& X, const Matrix& Y) const {
  Matrix Z(X.rows(), X.cols() + Y.cols());
  Z << X, Y;
  return Z;
}

Vector DdeConditionalModel::log_unnormalized(const Matrix& X, const Matrix& Y) const {
  check_conditional_inputs(*this, "dde_conditional", X, &Y);
  return lambda_ * f_.values(joint(X, Y)) + p0_.log_density(Y);
}

Matrix DdeConditionalModel::score(const Matrix& X, const Matrix& Y) const {
  Matrix s, lap;
  score_and_laplacian(X, Y, s, lap);
  return s;
}

// ∇_y (λ f + log p0) and the diagonal of its Hessian in y: the y block of f's input derivatives.
void DdeConditionalModel::score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score,
                                              Matrix& laplacian) const {
  check_conditional_inputs(*this, "dde_conditional", X, &Y);
  Matrix lap_f;
  const Matrix grad_f = f_.gradient(joint(X, Y), &lap_f);
  Matrix s0, l0;
  p0_.score_and_laplacian(Y, s0, l0);
  score = lambda_ * grad_f.rightCols(target_dim()) + s0;
  laplacian = lambda_ * lap_f.rightCols(target_dim()) + l0;
}

Matrix DdeConditionalModel::sampler_draws(const Matrix& X, RandomStream& rng) const {
  check_conditional_inputs(*this, "dde_conditional", X, nullptr);
  Matrix input(X.rows(), arch_.noise_dim + input_dim());
  input << normal_rows(rng, X.rows(), arch_.noise_dim), X;
  return generator_.value(input);
}

Vector DdeConditionalModel::log_importance_weights(const Matrix& X, const Matrix& Y) const {
  check_conditional_inputs(*this, "dde_conditional", X, &Y);
  const Matrix Z = joint(X, Y);
  Vector lw = lambda_ * f_.values(Z) - dual_.value(Z).col(0);
  const Vector log_p0 = p0_.log_density(Y);
  for (Index i = 0; i < lw.size(); ++i)
    if (log_p0[i] == -std::numeric_limits<double>::infinity()) lw[i] = log_p0[i];
  return lw;
}

namespace {
// Each row of X repeated k times, consecutively.
Matrix repeat_rows(const Matrix& X, Index k) {
  Matrix out(X.rows() * k, X.cols());
  for (Index i = 0; i < X.rows(); ++i) out.middleRows(i * k, k) = X.row(i).replicate(k, 1);
  return out;
}
}  // namespace

Matrix DdeConditionalModel::sample(const Matrix& X, RandomStream& rng) const {
  if (!correction_.importance) return sampler_draws(X, rng);
  const Index k = correction_.candidates;
  const Matrix Xk = repeat_rows(X, k);
  const Matrix cand = sampler_draws(Xk, rng);
  const Vector lw = log_importance_weights(Xk, cand);
  Matrix out(X.rows(), target_dim());
  for (Index n = 0; n < X.rows(); ++n) {
    try {
      out.row(n) = importance_resample(cand.middleRows(n * k, k), lw.segment(n * k, k), 1, rng);
    } catch (const NumericalError& e) {
      throw NumericalError("dde_conditional: input row " + std::to_string(n) + ": " + e.what());
    }
  }
  return out;
}

DdeConditionalModel::Diagnostic DdeConditionalModel::diagnose(const Matrix& inputs, Index per_input,
                                                              RandomStream& rng) const {
  const Matrix Xk = repeat_rows(inputs, per_input);
  const Vector lw = log_importance_weights(Xk, sampler_draws(Xk, rng));
  Diagnostic d;
  d.ess_fraction_min = std::numeric_limits<double>::infinity();
  for (Index n = 0; n < inputs.rows(); ++n) {
    const SamplerDiagnostic one = diagnose_log_weights(lw.segment(n * per_input, per_input));
    d.mean.ess_fraction += one.ess_fraction;
    d.mean.kl += one.kl;
    d.ess_fraction_min = std::min(d.ess_fraction_min, one.ess_fraction);
  }
  const double m = static_cast<double>(inputs.rows());
  d.mean.ess_fraction /= m;
  d.mean.kl /= m;
  Index outside = 0;
  for (Index i = 0; i < lw.size(); ++i) outside += std::isfinite(lw[i]) ? 0 : 1;
  d.mean.outside_box = static_cast<double>(outside) / static_cast<double>(lw.size());
  return d;
}

std::string DdeConditionalModel::describe() const {
  std::ostringstream os;
  os << "dde_conditional: p(y | x) with f over " << f_.alpha.size()
     << (f_.random_features() ? " random Fourier features" : " kernel centres")
     << " of (x, y) (Gaussian, gamma " << f_.gamma << "), lambda " << lambda_ << ", p0 of y "
     << (p0_.kind == BaseMeasure::Kind::gaussian ? "Gaussian" : "uniform on the training box")
     << "; sampler g(xi, x) " << arch_.generator_depth << " ReLU layers of " << arch_.width
     << " from xi of dimension " << arch_.noise_dim << " (" << generator_.parameter_count()
     << " parameters), dual nu(x, y) " << arch_.dual_depth << " layers of " << arch_.dual_hidden() << " ("
     << dual_.parameter_count() << " parameters); " << input_dim() << " input and " << target_dim()
     << " target columns" << (correction_.importance ? "; draws importance-resampled from " + std::to_string(correction_.candidates) + " sampler draws per x" : std::string());
  return os.str();
}

void DdeConditionalModel::save(ModelWriter& w) const {
  Config& m = w.manifest();
  m.set("input_dim", static_cast<std::int64_t>(input_dim()));
  m.set("target_dim", static_cast<std::int64_t>(target_dim()));
  save_expansion_and_networks(w, f_, lambda_, arch_, generator_, dual_);
  m.set("base_measure", std::string(p0_.kind == BaseMeasure::Kind::gaussian ? "gaussian" : "uniform"));
  write_correction(w, correction_);
  for (const auto& [k, v] : fit_info_) m.set(k, v);
  w.write_array("base_a", p0_.a);
  w.write_array("base_b", p0_.b);
}

ModelPtr DdeConditionalModel::load(const ModelReader& r, Registry& /*registry*/) {
  Architecture a;
  a.cond_dim = r.positive_integer("input_dim");
  a.dim = r.positive_integer("target_dim");
  SavedParts p = load_expansion_and_networks(r, a);
  if (!r.manifest().has("base_measure")) r.fail("model.toml has no `base_measure`");
  const std::string kind = r.manifest().string("base_measure");
  Vector ba = r.read_vector("base_a", a.dim), bb = r.read_vector("base_b", a.dim);
  BaseMeasure p0;
  if (kind == "gaussian") {
    if (!(bb.array() > 0.0).all()) r.fail("base_b.npy (the Gaussian p0's sd) must be positive");
    p0 = BaseMeasure::gaussian(std::move(ba), std::move(bb));
  } else if (kind == "uniform") {
    if (!((bb - ba).array() > 0.0).all()) r.fail("base_b.npy must exceed base_a.npy in every coordinate");
    p0 = BaseMeasure::box(std::move(ba), std::move(bb));
  } else {
    r.fail("model.toml `base_measure` must be \"gaussian\" or \"uniform\" (got \"" + kind + "\")");
  }
  auto model = std::make_shared<DdeConditionalModel>(std::move(p.f), p.lambda, a, std::move(p.generator),
                                                     std::move(p.dual), std::move(p0));
  model->set_correction(read_correction(r));
  return model;
}

}  // namespace kef::dde
