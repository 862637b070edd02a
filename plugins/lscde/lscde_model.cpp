#include "lscde_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "kef/conditional_inputs.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"

namespace kef::lscde {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double squared_distance(const Matrix& A, Index a, const Matrix& B, Index b) {
  double d2 = 0.0;
  for (Index d = 0; d < A.cols(); ++d) {
    const double u = A(a, d) - B(b, d);
    d2 += u * u;
  }
  return d2;
}

// log Σ_l exp(t_l) of one row, and the weights softmax(t) into w when asked.
double row_logsumexp(const Eigen::Ref<const Vector>& t, Vector* w = nullptr) {
  const double m = t.maxCoeff();
  if (m == -kInf) {
    if (w) w->setZero(t.size());
    return -kInf;
  }
  double s = 0.0;
  for (Index l = 0; l < t.size(); ++l) s += std::exp(t[l] - m);
  if (w) {
    w->resize(t.size());
    for (Index l = 0; l < t.size(); ++l) (*w)[l] = std::exp(t[l] - m) / s;
  }
  return m + std::log(s);
}

}  // namespace

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
  Vector t(alpha_.size());
  for (Index n = 0; n < X.rows(); ++n) {
    for (Index l = 0; l < alpha_.size(); ++l) t[l] = A(n, l) - c * squared_distance(Y, n, V_, l);
    out[n] = row_logsumexp(t);
  }
  return out;
}

std::optional<Vector> LscdeModel::log_normalizer(const Matrix& X) const {
  check_inputs(X, nullptr);
  const Matrix A = log_input_weights(X);
  const double log_mass =
      0.5 * static_cast<double>(target_dim()) * std::log(2.0 * std::numbers::pi * sigma_ * sigma_);
  Vector out(X.rows());
  for (Index n = 0; n < X.rows(); ++n) out[n] = log_mass + row_logsumexp(A.row(n).transpose());
  return out;
}

Matrix LscdeModel::score(const Matrix& X, const Matrix& Y) const {
  Matrix s, lap;
  score_and_laplacian(X, Y, s, lap);
  return s;
}

// With w_l the posterior weights of the components at (x, y) and g_l = (v_l − y)/σ²:
// ∇_y log p = Σ_l w_l g_l and ∂²/∂y_d² log p = Σ_l w_l g_ld² − (Σ_l w_l g_ld)² − 1/σ².
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
    row_logsumexp(t, &w);
    for (Index d = 0; d < Dy; ++d) {
      double m1 = 0.0, m2 = 0.0;
      for (Index l = 0; l < L; ++l) {
        const double g = (V_(l, d) - Y(n, d)) / s2;
        m1 += w[l] * g;
        m2 += w[l] * g * g;
      }
      score(n, d) = m1;
      laplacian(n, d) = m2 - m1 * m1 - 1.0 / s2;
    }
  }
}

Matrix LscdeModel::sample(const Matrix& X, RandomStream& rng) const {
  check_inputs(X, nullptr);
  const Matrix A = log_input_weights(X);
  const Index L = alpha_.size(), Dy = target_dim();
  Matrix out(X.rows(), Dy);
  Vector w;
  for (Index n = 0; n < X.rows(); ++n) {
    row_logsumexp(A.row(n).transpose(), &w);
    const double u = rng.uniform();
    Index pick = L - 1;  // rounding may leave the cumulative sum just below u: the last component
    double cumulative = 0.0;
    for (Index l = 0; l < L; ++l) {
      cumulative += w[l];
      if (u < cumulative) {
        pick = l;
        break;
      }
    }
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
