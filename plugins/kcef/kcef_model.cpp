#include "kcef_model.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "kef/conditional_inputs.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"
#include "kef/vector_exp.hpp"

namespace kef::kcef {

namespace {

bool positive_finite(double v) { return v > 0 && std::isfinite(v); }

}  // namespace

Matrix input_gram(const Matrix& A, const Matrix& B, const Vector& sigma_x) {
  Matrix K(A.rows(), B.rows());
  for (Index n = 0; n < A.rows(); ++n)
    for (Index m = 0; m < B.rows(); ++m) {
      double t = 0.0;
      for (Index d = 0; d < A.cols(); ++d) {
        const double u = (A(n, d) - B(m, d)) / sigma_x[d];
        t += u * u;
      }
      K(n, m) = -0.5 * t;
    }
  exp_array(K.data(), K.data(), K.size());  // the exponentials are most of the cost
  return K;
}

KcefModel::KcefModel(KcefParameters p) : p_(std::move(p)) {
  const Index n = p_.basis_inputs.rows();
  if (p_.basis_targets.rows() != n || p_.coefficients.rows() != n ||
      p_.coefficients.cols() != p_.basis_targets.cols())
    throw ModelFileError("kcef: " + std::to_string(n) + " input rows, " +
                         std::to_string(p_.basis_targets.rows()) + " target rows and a " +
                         std::to_string(p_.coefficients.rows()) + " x " +
                         std::to_string(p_.coefficients.cols()) +
                         " coefficient matrix (expected one row each per basis pair, one column per target)");
  if (n == 0 || p_.basis_targets.cols() == 0)
    throw ModelFileError("kcef: the model has no basis pairs or no target columns");
  if (p_.sigma_x.size() != p_.basis_inputs.cols())
    throw ModelFileError("kcef: " + std::to_string(p_.sigma_x.size()) + " input bandwidths for " +
                         std::to_string(p_.basis_inputs.cols()) + " input columns");
  for (Index d = 0; d < p_.sigma_x.size(); ++d)
    if (!positive_finite(p_.sigma_x[d]))
      throw ModelFileError("kcef: input bandwidth " + number_text(p_.sigma_x[d]));
  if (!positive_finite(p_.sigma_y)) throw ModelFileError("kcef: target bandwidth " + number_text(p_.sigma_y));
  if (!positive_finite(p_.q0_sd)) throw ModelFileError("kcef: base measure sd " + number_text(p_.q0_sd));
  if (!p_.coefficients.allFinite() || !std::isfinite(p_.xi_weight) || !p_.basis_inputs.allFinite() ||
      !p_.basis_targets.allFinite())
    throw ModelFileError("kcef: non-finite basis points or coefficients");
}

FacetSet KcefModel::facets() const { return {Facet::ConditionalDensity, Facet::ConditionalScore}; }

Vector KcefModel::log_unnormalized(const Matrix&) const {
  throw ConfigError("model kcef is a conditional density p(y | x) and has no log density of whole rows");
}

// docs/math.md §17.4: with w = k_x(x_a, x) k_y(y_a, y), u = y_a − y, s = 1/σ_y² and
// P = −s c_a·u + e(s²‖u‖² − s d_y), the term of pair a is w P; derivatives in y are −∂/∂u:
//   ∂_(y_j) (wP) = −w (P_j − s u_j P),        P_j = −s c_aj + 2 e s² u_j,
//   ∂²_(y_j) (wP) = w (P_jj − s P − 2 s u_j P_j + s² u_j² P),   P_jj = 2 e s².
void KcefModel::evaluate(const Matrix& X, const Matrix& Y, Vector* value, Matrix* score,
                         Matrix* laplacian) const {
  check_conditional_inputs(*this, "kcef", X, &Y);
  const Index N = X.rows(), n = p_.basis_inputs.rows(), dy = target_dim();
  const double s = 1.0 / (p_.sigma_y * p_.sigma_y), e = p_.xi_weight, dyd = static_cast<double>(dy);
  const double v0 = 1.0 / (p_.q0_sd * p_.q0_sd);
  const double log_q0_const = -dyd * std::log(p_.q0_sd) - 0.5 * dyd * std::log(2.0 * std::numbers::pi);
  if (value) value->resize(N);
  if (score) score->resize(N, dy);
  if (laplacian) laplacian->resize(N, dy);
  const Matrix Kx = input_gram(X, p_.basis_inputs, p_.sigma_x);
  Vector u(dy), g(dy), l(dy), ky(n), uus(n);
  for (Index r = 0; r < N; ++r) {
    double f = 0.0;
    g.setZero();
    l.setZero();
    // k_y(y_a, y_r) for every basis pair at once: the exponentials are most of the cost.
    for (Index a = 0; a < n; ++a) {
      for (Index j = 0; j < dy; ++j) u[j] = p_.basis_targets(a, j) - Y(r, j);
      uus[a] = u.squaredNorm();
      ky[a] = -0.5 * s * uus[a];
    }
    exp_array(ky.data(), ky.data(), n);
    for (Index a = 0; a < n; ++a) {
      for (Index j = 0; j < dy; ++j) u[j] = p_.basis_targets(a, j) - Y(r, j);
      const double uu = uus[a];
      const double w = Kx(r, a) * ky[a];
      if (w == 0.0) continue;
      const double P = -s * p_.coefficients.row(a).dot(u) + e * (s * s * uu - s * dyd);
      f += w * P;
      if (!score && !laplacian) continue;
      for (Index j = 0; j < dy; ++j) {
        const double Pj = -s * p_.coefficients(a, j) + 2.0 * e * s * s * u[j];
        g[j] -= w * (Pj - s * u[j] * P);
        l[j] += w * (2.0 * e * s * s - s * P - 2.0 * s * u[j] * Pj + s * s * u[j] * u[j] * P);
      }
    }
    if (value) (*value)[r] = f - 0.5 * v0 * Y.row(r).squaredNorm() + log_q0_const;
    for (Index j = 0; j < dy; ++j) {
      if (score) (*score)(r, j) = g[j] - v0 * Y(r, j);
      if (laplacian) (*laplacian)(r, j) = l[j] - v0;
    }
  }
}

Vector KcefModel::log_unnormalized(const Matrix& X, const Matrix& Y) const {
  Vector v;
  evaluate(X, Y, &v, nullptr, nullptr);
  return v;
}

// Through the same call as score_and_laplacian, so both give bitwise the same score (one instruction
// sequence: the compiler may contract the two call shapes' arithmetic differently).
Matrix KcefModel::score(const Matrix& X, const Matrix& Y) const {
  Matrix s, l;
  evaluate(X, Y, nullptr, &s, &l);
  return s;
}

void KcefModel::score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score,
                                    Matrix& laplacian) const {
  evaluate(X, Y, nullptr, &score, &laplacian);
}

std::string KcefModel::describe() const {
  std::ostringstream out;
  out << "KCEF p(y | x): " << p_.basis_inputs.rows() << " basis pairs, σ_x = [";
  for (Index d = 0; d < p_.sigma_x.size(); ++d) out << (d ? ", " : "") << number_text(p_.sigma_x[d]);
  out << "], σ_y = " << number_text(p_.sigma_y) << ", q0 = N(0, " << number_text(p_.q0_sd) << "² I), x of "
      << input_dim() << " and y of " << target_dim() << " columns";
  return out.str();
}

void KcefModel::save(ModelWriter& w) const {
  w.manifest().set("dim", static_cast<std::int64_t>(dim()));
  w.write_array("basis_inputs", p_.basis_inputs);
  w.write_array("basis_targets", p_.basis_targets);
  w.write_array("coefficients", p_.coefficients);
  Vector scalars(3);
  scalars << p_.xi_weight, p_.sigma_y, p_.q0_sd;
  w.write_array("scalars", scalars);
  w.write_array("sigma_x", p_.sigma_x);
}

ModelPtr KcefModel::load(const ModelReader& r, Registry&) {
  KcefParameters p;
  p.basis_inputs = r.read_array("basis_inputs");
  p.basis_targets = r.read_array("basis_targets");
  p.coefficients = r.read_array("coefficients");
  const Matrix scalars = r.read_array("scalars"), sigma_x = r.read_array("sigma_x");
  if (scalars.size() != 3)
    throw ModelFileError(r.dir().string() + "/scalars.npy: expected 3 values (e, σ_y, σ0), got " +
                         std::to_string(scalars.size()));
  p.xi_weight = scalars.data()[0];
  p.sigma_y = scalars.data()[1];
  p.q0_sd = scalars.data()[2];
  p.sigma_x = Eigen::Map<const Vector>(sigma_x.data(), sigma_x.size());
  return std::make_shared<KcefModel>(std::move(p));
}

}  // namespace kef::kcef
