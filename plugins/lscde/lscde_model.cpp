#include "lscde_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "kef/categorical.hpp"
#include "kef/conditional_inputs.hpp"
#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/isotropic_mixture.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef::lscde {

LscdeModel::LscdeModel(Matrix input_centres, Matrix target_centres, Vector alpha, double sigma)
    : sigma_(sigma) {
  const Index L = alpha.size();
  if (input_centres.rows() != L || target_centres.rows() != L)
    throw ModelFileError("lscde: " + std::to_string(L) + " coefficients for " +
                         std::to_string(input_centres.rows()) + " input and " +
                         std::to_string(target_centres.rows()) + " target centres");
  if (!(sigma > 0) || !std::isfinite(sigma)) throw ModelFileError("lscde: bandwidth " + number_text(sigma));
  if (!alpha.allFinite() || (alpha.array() < 0).any())
    throw NumericalError("lscde: the coefficients α must be finite and >= 0");
  Index kept = 0;
  for (Index l = 0; l < L; ++l) kept += alpha[l] > 0 ? 1 : 0;
  if (kept == 0)
    throw NumericalError(
        "lscde: every coefficient α is 0 after clipping the negative ones, so p̂(y | x) is 0 everywhere; "
        "widen `sigma_grid` or lower `lambda`");
  U_.resize(kept, input_centres.cols());
  V_.resize(kept, target_centres.cols());
  alpha_.resize(kept);
  for (Index l = 0, k = 0; l < L; ++l) {
    if (!(alpha[l] > 0)) continue;
    U_.row(k) = input_centres.row(l);
    V_.row(k) = target_centres.row(l);
    alpha_[k] = alpha[l];
    ++k;
  }
}

FacetSet LscdeModel::facets() const {
  return {Facet::ConditionalDensity, Facet::ConditionalScore, Facet::ConditionalSampler};
}

Vector LscdeModel::log_unnormalized(const Matrix&) const {
  throw ConfigError("model lscde is a conditional density p(y | x) and has no log density of whole rows");
}

void LscdeModel::check_inputs(const Matrix& X, const Matrix* Y) const {
  check_conditional_inputs(*this, "lscde", X, Y);
}

Matrix LscdeModel::log_input_weights(const Matrix& X) const {
  const double c = 0.5 / (sigma_ * sigma_);
  Matrix A(X.rows(), alpha_.size());
  for (Index n = 0; n < X.rows(); ++n)
    for (Index l = 0; l < alpha_.size(); ++l)
      A(n, l) = std::log(alpha_[l]) - c * squared_distance(X, n, U_, l);
  return A;
}

Vector LscdeModel::log_unnormalized(const Matrix& X, const Matrix& Y) const {
  check_inputs(X, &Y);
  const double c = 0.5 / (sigma_ * sigma_);
  const Matrix A = log_input_weights(X);
  Vector out(X.rows());
  Vector t(alpha_.size()), w;
  for (Index n = 0; n < X.rows(); ++n) {
    for (Index l = 0; l < alpha_.size(); ++l) t[l] = A(n, l) - c * squared_distance(Y, n, V_, l);
    out[n] = logsumexp_softmax(t, w);
  }
  return out;
}

std::optional<Vector> LscdeModel::log_normalizer(const Matrix& X) const {
  check_inputs(X, nullptr);
  const Matrix A = log_input_weights(X);
  const double log_mass =
      0.5 * static_cast<double>(target_dim()) * std::log(2.0 * std::numbers::pi * sigma_ * sigma_);
  Vector out(X.rows()), w;
  for (Index n = 0; n < X.rows(); ++n) out[n] = log_mass + logsumexp_softmax(A.row(n).transpose(), w);
  return out;
}

Matrix LscdeModel::score(const Matrix& X, const Matrix& Y) const {
  Matrix s, lap;
  score_and_laplacian(X, Y, s, lap);
  return s;
}

// A mixture of N(y; v_l, σ² I) weighted by the input factors (kef/isotropic_mixture.hpp).
void LscdeModel::score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score,
                                     Matrix& laplacian) const {
  check_inputs(X, &Y);
  const double s2 = sigma_ * sigma_, c = 0.5 / s2;
  const Matrix A = log_input_weights(X);
  const Index L = alpha_.size(), Dy = target_dim();
  score.resize(X.rows(), Dy);
  laplacian.resize(X.rows(), Dy);
  Vector t(L), w;
  for (Index n = 0; n < X.rows(); ++n) {
    for (Index l = 0; l < L; ++l) t[l] = A(n, l) - c * squared_distance(Y, n, V_, l);
    logsumexp_softmax(t, w);
    isotropic_mixture_derivatives(
        w, [&](Index l, Index d) { return V_(l, d); }, Y, n, s2, score, laplacian);
  }
}

Matrix LscdeModel::sample(const Matrix& X, RandomStream& rng) const {
  check_inputs(X, nullptr);
  const Matrix A = log_input_weights(X);
  const Index L = alpha_.size(), Dy = target_dim();
  Matrix out(X.rows(), Dy);
  Vector w;
  for (Index n = 0; n < X.rows(); ++n) {
    logsumexp_softmax(A.row(n).transpose(), w);
    const Index pick = draw_categorical({w.data(), static_cast<std::size_t>(L)}, rng);
    for (Index d = 0; d < Dy; ++d) out(n, d) = V_(pick, d) + sigma_ * rng.normal();
  }
  return out;
}

std::string LscdeModel::describe() const {
  std::ostringstream s;
  s << "LSCDE p(y | x): " << alpha_.size()
    << " Gaussian basis functions with α > 0, σ = " << number_text(sigma_) << ", x of " << input_dim()
    << " and y of " << target_dim() << " columns";
  return s.str();
}

void LscdeModel::save(ModelWriter& w) const {
  w.manifest().set("dim", static_cast<std::int64_t>(dim()));
  w.write_array("input_centres", U_);
  w.write_array("target_centres", V_);
  w.write_array("alpha", alpha_);
  w.write_array("bandwidth", Vector(Vector::Constant(1, sigma_)));
}

ModelPtr LscdeModel::load(const ModelReader& r, Registry&) {
  const Matrix alpha = r.read_array("alpha"), bandwidth = r.read_array("bandwidth");
  if (bandwidth.size() != 1)
    throw ModelFileError(r.dir().string() + "/bandwidth.npy: expected one value, got " +
                         std::to_string(bandwidth.size()));
  return std::make_shared<LscdeModel>(r.read_array("input_centres"), r.read_array("target_centres"),
                                      Eigen::Map<const Vector>(alpha.data(), alpha.size()), bandwidth(0, 0));
}

}  // namespace kef::lscde
