#include "gaussian_mixture_model.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "gaussian_algebra.hpp"
#include "kef/categorical.hpp"
#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"

namespace kef::baselines {

struct GaussianMixtureModel::Row {
  Vector terms, gamma, diff, z;
  RowMatrix scores;  // K x D: s_k
  Vector score;      // Σ_k γ_k s_k
  double lse = 0;
  Row(Index K, Index D) : terms(K), gamma(K), diff(D), z(D), scores(K, D), score(D) {}
};

GaussianMixtureModel::GaussianMixtureModel(std::string type, MixtureParameters parameters)
    : type_(std::move(type)), params_(std::move(parameters)) {
  const Index K = params_.components(), D = params_.dim();
  if (K < 1 || params_.means.rows() != K || static_cast<Index>(params_.covariances.size()) != K)
    throw Error(type_ + ": " + std::to_string(K) + " weights, " + std::to_string(params_.means.rows()) +
                " means and " + std::to_string(params_.covariances.size()) + " covariances");
  chol_.resize(static_cast<std::size_t>(K));
  precision_.resize(static_cast<std::size_t>(K));
  log_constant_.resize(K);
  for (Index k = 0; k < K; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    const Matrix& S = params_.covariances[kk];
    if (!(params_.weights[k] > 0) || !std::isfinite(params_.weights[k]))
      throw NumericalError(type_ + ": component " + std::to_string(k) + " has weight " +
                           number_text(params_.weights[k]));
    if (S.rows() != D || S.cols() != D || !S.allFinite() || !params_.means.row(k).allFinite())
      throw NumericalError(type_ + ": component " + std::to_string(k) +
                           " has a non-finite mean or covariance, or one of the wrong size");
    Eigen::LLT<Matrix> llt(S);
    if (llt.info() != Eigen::Success)
      throw NumericalError(type_ + ": the covariance of component " + std::to_string(k) +
                           " is not positive definite");
    chol_[kk] = llt.matrixL();
    // Σ⁻¹ column by column from the factor (needed for the Laplacian and Hessian only).
    Matrix P(D, D);
    Vector e(D), z(D), w(D);
    for (Index j = 0; j < D; ++j) {
      e.setZero();
      e[j] = 1.0;
      forward_solve(chol_[kk], e.data(), z.data());
      back_solve_transpose(chol_[kk], z.data(), w.data());
      P.col(j) = w;
    }
    precision_[kk] = 0.5 * (P + P.transpose());
    log_constant_[k] = std::log(params_.weights[k]) + standard_normal_log_constant(D) -
                       chol_[kk].diagonal().array().log().sum();
  }
}

void GaussianMixtureModel::check_input(const Matrix& X) const {
  if (X.cols() != dim())
    throw DataError(type_ + " model: rows of dimension " + std::to_string(X.cols()) + ", the model has " +
                    std::to_string(dim()));
  for (Index i = 0; i < X.rows(); ++i)
    if (!X.row(i).allFinite()) throw DataError(type_ + " model: row " + std::to_string(i) + " is not finite");
}

void GaussianMixtureModel::evaluate_row(const double* x, Row& row, bool scores, bool terms_only) const {
  const Index K = params_.components(), D = dim();
  for (Index k = 0; k < K; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    for (Index d = 0; d < D; ++d) row.diff[d] = x[d] - params_.means(k, d);
    forward_solve(chol_[kk], row.diff.data(), row.z.data());
    row.terms[k] = log_constant_[k] - 0.5 * row.z.squaredNorm();
    if (scores) {
      back_solve_transpose(chol_[kk], row.z.data(), row.diff.data());  // Σ⁻¹(x − μ)
      for (Index d = 0; d < D; ++d) row.scores(k, d) = -row.diff[d];
    }
  }
  if (terms_only) return;
  const double m = row.terms.maxCoeff();
  row.lse = m == -kInf ? -kInf : m + std::log((row.terms.array() - m).exp().sum());
  if (!scores) return;
  if (row.lse == -kInf)
    throw NumericalError(type_ +
                         ": every component has density 0 (underflow) at a point, so the score is "
                         "undefined there");
  row.gamma = (row.terms.array() - row.lse).exp();
  row.score.setZero();
  for (Index k = 0; k < K; ++k) row.score += row.gamma[k] * row.scores.row(k).transpose();
}

// Column-wise over the rows: for each component, forward substitution with L_k done one coordinate at a
// time on whole columns (z_a = (x_a − μ_a − Σ_{b<a} L_ab z_b)/L_aa for every row at once), so the
// loops run over contiguous rows and vectorise, and each row still sees exactly forward_solve's
// sequence of operations (no blocking that depends on how many rows the call holds). The per-row path
// (evaluate_row) stays for the score and Hessian; tests/plugins/baselines holds the two to 1e-14.
Matrix GaussianMixtureModel::log_terms(const Matrix& X) const {
  check_input(X);
  const Index N = X.rows(), D = dim(), K = params_.components();
  Matrix T(N, K), Z(N, D);
  Vector q(N);
  for (Index k = 0; k < K; ++k) {
    const Matrix& L = chol_[static_cast<std::size_t>(k)];
    q.setZero();
    for (Index a = 0; a < D; ++a) {
      double* z = Z.col(a).data();
      const double* x = X.col(a).data();
      const double mu = params_.means(k, a), inv = L(a, a);
      for (Index i = 0; i < N; ++i) z[i] = x[i] - mu;
      for (Index b = 0; b < a; ++b) {
        const double l = L(a, b);
        const double* zb = Z.col(b).data();
        for (Index i = 0; i < N; ++i) z[i] -= l * zb[i];
      }
      for (Index i = 0; i < N; ++i) {
        z[i] /= inv;
        q[i] += z[i] * z[i];
      }
    }
    T.col(k) = (log_constant_[k] - 0.5 * q.array()).matrix();
  }
  return T;
}

Vector GaussianMixtureModel::log_unnormalized(const Matrix& X) const {
  check_input(X);
  Row row(params_.components(), dim());
  Vector out(X.rows());
  const RowMatrix Xr = X;
  for (Index i = 0; i < X.rows(); ++i) {
    evaluate_row(Xr.row(i).data(), row, false);
    out[i] = row.lse;
  }
  return out;
}

Matrix GaussianMixtureModel::score(const Matrix& X) const {
  check_input(X);
  Row row(params_.components(), dim());
  Matrix S(X.rows(), dim());
  const RowMatrix Xr = X;
  for (Index i = 0; i < X.rows(); ++i) {
    evaluate_row(Xr.row(i).data(), row, true);
    S.row(i) = row.score.transpose();
  }
  return S;
}

void GaussianMixtureModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  check_input(X);
  const Index K = params_.components(), D = dim();
  Row row(K, D);
  score.resize(X.rows(), D);
  laplacian.resize(X.rows(), D);
  const RowMatrix Xr = X;
  for (Index i = 0; i < X.rows(); ++i) {
    evaluate_row(Xr.row(i).data(), row, true);
    score.row(i) = row.score.transpose();
    for (Index d = 0; d < D; ++d) {
      double h = 0.0;
      for (Index k = 0; k < K; ++k) {
        const double c = row.scores(k, d) - row.score[d];
        h += row.gamma[k] * (c * c - precision_[static_cast<std::size_t>(k)](d, d));
      }
      laplacian(i, d) = h;
    }
  }
}

Matrix GaussianMixtureModel::hessian(const Vector& x) const {
  const Index K = params_.components(), D = dim();
  check_input(x.transpose());
  Row row(K, D);
  evaluate_row(x.data(), row, true);
  Matrix H = Matrix::Zero(D, D);
  for (Index k = 0; k < K; ++k) {
    const Vector c = row.scores.row(k).transpose() - row.score;
    H += row.gamma[k] * (c * c.transpose() - precision_[static_cast<std::size_t>(k)]);
  }
  return H;
}

Matrix GaussianMixtureModel::sample(Index n, RandomStream& rng) const {
  const Index K = params_.components(), D = dim();
  Matrix out(n, D);
  Vector z(D);
  for (Index i = 0; i < n; ++i) {
    const Index k = draw_categorical({params_.weights.data(), static_cast<std::size_t>(K)}, rng);
    for (Index d = 0; d < D; ++d) z[d] = rng.normal();
    out.row(i) = params_.means.row(k) + (chol_[static_cast<std::size_t>(k)] * z).transpose();
  }
  return out;
}

std::string GaussianMixtureModel::describe() const {
  std::ostringstream os;
  const Index K = params_.components();
  if (type_ == "gaussian_fit")
    os << "gaussian_fit: maximum-likelihood Gaussian in " << dim() << " dimensions";
  else
    os << "gmm: " << K << " Gaussian component" << (K == 1 ? "" : "s") << " with "
       << (params_.diagonal ? "diagonal" : "full") << " covariances in " << dim() << " dimensions";
  os << " (exact log density, score, Hessian and sampler)";
  if (type_ != "gaussian_fit")
    for (Index k = 0; k < K; ++k) os << "; weight " << k << ": " << number_text(params_.weights[k]);
  return os.str();
}

void GaussianMixtureModel::save(ModelWriter& writer) const {
  const Index K = params_.components(), D = dim();
  writer.manifest().set("dim", static_cast<std::int64_t>(D));
  writer.manifest().set("components", static_cast<std::int64_t>(K));
  writer.manifest().set("covariance", std::string(params_.diagonal ? "diagonal" : "full"));
  writer.write_array("weights", params_.weights);
  writer.write_array("means", params_.means);
  Matrix stacked(K * D, D);  // component k in rows [kD, (k + 1)D)
  for (Index k = 0; k < K; ++k)
    stacked.middleRows(k * D, D) = params_.covariances[static_cast<std::size_t>(k)];
  writer.write_array("covariances", stacked);
}

ModelPtr GaussianMixtureModel::load(const ModelReader& reader, Registry& /*registry*/) {
  const Config& m = reader.manifest();
  if (!m.has("components") || !m.holds_integer("components") || m.integer("components") < 1)
    reader.fail("`components` must be a positive integer");
  const Index K = m.integer("components");
  MixtureParameters p;
  p.diagonal = m.has("covariance") && m.string("covariance") == "diagonal";
  const Matrix w = reader.read_array("weights");
  p.means = reader.read_array("means");
  const Matrix stacked = reader.read_array("covariances");
  const Index D = p.means.cols();
  if (w.cols() != 1 || w.rows() != K) reader.fail("weights.npy must hold " + std::to_string(K) + " values");
  if (p.means.rows() != K)
    reader.fail("means.npy must have " + std::to_string(K) + " rows (one per component)");
  if (reader.dim() >= 0 && D != reader.dim())
    reader.fail("means.npy has " + std::to_string(D) + " columns, `dim` is " + std::to_string(reader.dim()));
  if (stacked.rows() != K * D || stacked.cols() != D)
    reader.fail("covariances.npy must be " + std::to_string(K * D) + " x " + std::to_string(D));
  if (!w.allFinite() || !p.means.allFinite() || !stacked.allFinite()) reader.fail("non-finite parameters");
  p.weights = w.col(0);
  if ((p.weights.array() <= 0).any() || std::abs(p.weights.sum() - 1.0) > 1e-9)
    reader.fail("weights.npy must be positive and sum to 1");
  for (Index k = 0; k < K; ++k) p.covariances.push_back(stacked.middleRows(k * D, D));
  try {
    return std::make_shared<GaussianMixtureModel>(reader.model_type(), std::move(p));
  } catch (const NumericalError& e) {
    reader.fail(e.what());
  }
}

}  // namespace kef::baselines
