#include "kde_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "gaussian_algebra.hpp"
#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"
#include "kef/vector_exp.hpp"

namespace kef::baselines {

// ------------------------------------------------------------------------------------------------
// KdeGeometry

KdeGeometry::KdeGeometry(Matrix centres, Matrix covariance)
    : centres_(std::move(centres)), covariance_(std::move(covariance)) {
  const Index n = centres_.rows(), D = centres_.cols();
  if (n < 1 || covariance_.rows() != D || covariance_.cols() != D)
    throw Error("kde: " + std::to_string(n) + " centres of dimension " + std::to_string(D) + " and a " +
                std::to_string(covariance_.rows()) + " x " + std::to_string(covariance_.cols()) +
                " covariance");
  if (!centres_.allFinite() || !covariance_.allFinite())
    throw NumericalError("kde: non-finite centres or covariance");
  Eigen::LLT<Matrix> llt(covariance_);
  if (llt.info() != Eigen::Success) throw NumericalError("kde: the covariance is not positive definite");
  chol_ = llt.matrixL();
  log_det_chol_ = chol_.diagonal().array().log().sum();
  precision_.resize(D, D);
  Vector e(D), z(D), w(D);
  for (Index j = 0; j < D; ++j) {
    e.setZero();
    e[j] = 1.0;
    forward_solve(chol_, e.data(), z.data());
    back_solve_transpose(chol_, z.data(), w.data());
    precision_.col(j) = w;
  }
  precision_ = (0.5 * (precision_ + precision_.transpose())).eval();
  whitened_.resize(n, D);
  mapped_.resize(n, D);
  const RowMatrix C = centres_;
  for (Index m = 0; m < n; ++m) {
    forward_solve(chol_, C.row(m).data(), whitened_.row(m).data());
    back_solve_transpose(chol_, whitened_.row(m).data(), mapped_.row(m).data());
  }
}

void KdeGeometry::whiten(const double* x, double* y) const { forward_solve(chol_, x, y); }

double KdeGeometry::log_constant(double h) const {
  const double D = static_cast<double>(dim());
  return -std::log(static_cast<double>(rows())) + standard_normal_log_constant(dim()) - D * std::log(h) -
         log_det_chol_;
}

double KdeGeometry::log_kernel_sum(const double* y, double h, double* ybar,
                                   std::vector<double>& buffer) const {
  const Index n = rows(), D = dim();
  const double c = -0.5 / (h * h);
  buffer.resize(static_cast<std::size_t>(kCentreBlock));
  double* t = buffer.data();
  double M = -kInf, S = 0.0;
  if (ybar) std::fill(ybar, ybar + D, 0.0);
  for (Index b0 = 0; b0 < n; b0 += kCentreBlock) {
    const Index len = std::min(kCentreBlock, n - b0);
    double bmax = -kInf;
    for (Index j = 0; j < len; ++j) {
      const double* ym = whitened_.row(b0 + j).data();
      double d2 = 0.0;
      for (Index d = 0; d < D; ++d) {
        const double u = y[d] - ym[d];
        d2 += u * u;
      }
      t[j] = c * d2;
      bmax = std::max(bmax, t[j]);
    }
    if (bmax == -kInf) continue;  // every kernel of the block underflows entirely
    if (bmax > M) {               // rescale what has been summed to the new maximum
      const double scale = M == -kInf ? 0.0 : std::exp(M - bmax);
      S *= scale;
      if (ybar)
        for (Index d = 0; d < D; ++d) ybar[d] *= scale;
      M = bmax;
    }
    for (Index j = 0; j < len; ++j) t[j] -= M;
    exp_array(t, t, len);
    for (Index j = 0; j < len; ++j) {
      S += t[j];
      if (ybar) {
        const double* ym = whitened_.row(b0 + j).data();
        for (Index d = 0; d < D; ++d) ybar[d] += t[j] * ym[d];
      }
    }
  }
  if (M == -kInf) return -kInf;
  if (ybar)
    for (Index d = 0; d < D; ++d) ybar[d] /= S;
  return M + std::log(S);
}

Matrix KdeGeometry::spread(const double* y, double h, double lse, const Vector& gbar, bool diagonal_only,
                           std::vector<double>& buffer) const {
  const Index n = rows(), D = dim();
  const double c = -0.5 / (h * h);
  buffer.resize(static_cast<std::size_t>(kCentreBlock));
  double* t = buffer.data();
  Matrix acc = Matrix::Zero(D, D);
  Vector u(D);
  for (Index b0 = 0; b0 < n; b0 += kCentreBlock) {
    const Index len = std::min(kCentreBlock, n - b0);
    for (Index j = 0; j < len; ++j) {
      const double* ym = whitened_.row(b0 + j).data();
      double d2 = 0.0;
      for (Index d = 0; d < D; ++d) {
        const double v = y[d] - ym[d];
        d2 += v * v;
      }
      t[j] = c * d2 - lse;
    }
    exp_array(t, t, len);
    for (Index j = 0; j < len; ++j) {
      if (t[j] == 0.0) continue;
      const double* gm = mapped_.row(b0 + j).data();
      for (Index d = 0; d < D; ++d) u[d] = gm[d] - gbar[d];
      if (diagonal_only) {
        for (Index d = 0; d < D; ++d) acc(d, d) += t[j] * u[d] * u[d];
      } else {
        for (Index a = 0; a < D; ++a)
          for (Index b = 0; b <= a; ++b) acc(a, b) += t[j] * u[a] * u[b];
      }
    }
  }
  if (!diagonal_only)
    for (Index b = 1; b < D; ++b)
      for (Index a = 0; a < b; ++a) acc(a, b) = acc(b, a);  // the lower triangle was accumulated
  return acc;
}

Matrix KdeGeometry::log_density_grid(const Matrix& X, const std::vector<double>& bandwidths) const {
  const Index n = rows(), D = dim(), G = static_cast<Index>(bandwidths.size());
  Matrix out(X.rows(), G);
  std::vector<double> d2(static_cast<std::size_t>(kCentreBlock)), t(static_cast<std::size_t>(kCentreBlock));
  Vector M(G), S(G), y(D);
  const RowMatrix Xr = X;
  for (Index i = 0; i < X.rows(); ++i) {
    whiten(Xr.row(i).data(), y.data());
    M.setConstant(-kInf);
    S.setZero();
    for (Index b0 = 0; b0 < n; b0 += kCentreBlock) {
      const Index len = std::min(kCentreBlock, n - b0);
      for (Index j = 0; j < len; ++j) {
        const double* ym = whitened_.row(b0 + j).data();
        double s = 0.0;
        for (Index d = 0; d < D; ++d) {
          const double u = y[d] - ym[d];
          s += u * u;
        }
        d2[static_cast<std::size_t>(j)] = s;
      }
      for (Index g = 0; g < G; ++g) {
        const double c =
            -0.5 / (bandwidths[static_cast<std::size_t>(g)] * bandwidths[static_cast<std::size_t>(g)]);
        double bmax = -kInf;
        for (Index j = 0; j < len; ++j)
          bmax = std::max(bmax, t[static_cast<std::size_t>(j)] = c * d2[static_cast<std::size_t>(j)]);
        if (bmax == -kInf) continue;
        if (bmax > M[g]) {
          S[g] *= M[g] == -kInf ? 0.0 : std::exp(M[g] - bmax);
          M[g] = bmax;
        }
        for (Index j = 0; j < len; ++j) t[static_cast<std::size_t>(j)] -= M[g];
        exp_array(t.data(), t.data(), len);
        for (Index j = 0; j < len; ++j) S[g] += t[static_cast<std::size_t>(j)];
      }
    }
    for (Index g = 0; g < G; ++g)
      out(i, g) = (M[g] == -kInf ? -kInf : M[g] + std::log(S[g])) +
                  log_constant(bandwidths[static_cast<std::size_t>(g)]);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// KdeModel

KdeModel::KdeModel(Matrix centres, Matrix covariance, double bandwidth, std::string rule)
    : geometry_(std::move(centres), std::move(covariance)), bandwidth_(bandwidth), rule_(std::move(rule)) {
  if (!(bandwidth_ > 0) || !std::isfinite(bandwidth_))
    throw NumericalError("kde: the bandwidth must be positive and finite (got " + number_text(bandwidth_) +
                         ")");
}

void KdeModel::check_input(const Matrix& X) const {
  if (X.cols() != dim())
    throw DataError("kde model: rows of dimension " + std::to_string(X.cols()) + ", the model has " +
                    std::to_string(dim()));
  for (Index i = 0; i < X.rows(); ++i)
    if (!X.row(i).allFinite()) throw DataError("kde model: row " + std::to_string(i) + " is not finite");
}

Vector KdeModel::log_unnormalized(const Matrix& X) const {
  check_input(X);
  const RowMatrix Xr = X;
  Vector out(X.rows()), y(dim());
  std::vector<double> buffer;
  const double constant = geometry_.log_constant(bandwidth_);
  for (Index i = 0; i < X.rows(); ++i) {
    geometry_.whiten(Xr.row(i).data(), y.data());
    out[i] = geometry_.log_kernel_sum(y.data(), bandwidth_, nullptr, buffer) + constant;
  }
  return out;
}

double KdeModel::row_score(const double* x, double* y, double* s, Vector* gbar,
                           std::vector<double>& buffer) const {
  const Index D = dim();
  geometry_.whiten(x, y);
  Vector ybar(D), diff(D);
  const double lse = geometry_.log_kernel_sum(y, bandwidth_, ybar.data(), buffer);
  if (lse == -kInf)
    throw NumericalError("kde: every kernel underflows to 0 at a point, so the score is undefined there");
  const double inv_h2 = 1.0 / (bandwidth_ * bandwidth_);
  for (Index d = 0; d < D; ++d) diff[d] = (ybar[d] - y[d]) * inv_h2;
  back_solve_transpose(geometry_.chol(), diff.data(), s);
  if (gbar) {
    gbar->resize(D);
    back_solve_transpose(geometry_.chol(), ybar.data(), gbar->data());
  }
  return lse;
}

Matrix KdeModel::score(const Matrix& X) const {
  check_input(X);
  const Index D = dim();
  const RowMatrix Xr = X;
  RowMatrix S(X.rows(), D);
  Vector y(D);
  std::vector<double> buffer;
  for (Index i = 0; i < X.rows(); ++i)
    row_score(Xr.row(i).data(), y.data(), S.row(i).data(), nullptr, buffer);
  return S;
}

void KdeModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  check_input(X);
  const Index D = dim();
  const RowMatrix Xr = X;
  RowMatrix S(X.rows(), D);
  laplacian.resize(X.rows(), D);
  Vector y(D), gbar;
  std::vector<double> buffer;
  const double h2 = bandwidth_ * bandwidth_;
  for (Index i = 0; i < X.rows(); ++i) {
    const double lse = row_score(Xr.row(i).data(), y.data(), S.row(i).data(), &gbar, buffer);
    const Matrix acc = geometry_.spread(y.data(), bandwidth_, lse, gbar, true, buffer);
    for (Index d = 0; d < D; ++d) laplacian(i, d) = -geometry_.precision()(d, d) / h2 + acc(d, d) / (h2 * h2);
  }
  score = S;
}

Matrix KdeModel::hessian(const Vector& x) const {
  check_input(x.transpose());
  const Index D = dim();
  Vector y(D), s(D), gbar;
  std::vector<double> buffer;
  const double lse = row_score(x.data(), y.data(), s.data(), &gbar, buffer);
  const double h2 = bandwidth_ * bandwidth_;
  return -geometry_.precision() / h2 +
         geometry_.spread(y.data(), bandwidth_, lse, gbar, false, buffer) / (h2 * h2);
}

Matrix KdeModel::sample(Index n, RandomStream& rng) const {
  const Index D = dim();
  Matrix out(n, D);
  Vector z(D);
  for (Index i = 0; i < n; ++i) {
    const auto m = static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(geometry_.rows())));
    for (Index d = 0; d < D; ++d) z[d] = rng.normal();
    out.row(i) = geometry_.centres().row(m) + bandwidth_ * (geometry_.chol() * z).transpose();
  }
  return out;
}

std::string KdeModel::describe() const {
  std::ostringstream os;
  os << "kde: Gaussian kernel density estimate on " << geometry_.rows() << " rows in " << dim()
     << " dimensions, kernel covariance h² Σ̂ with h = " << number_text(bandwidth_) << " (" << rule_
     << "), exact log density, score, Hessian and sampler";
  return os.str();
}

void KdeModel::save(ModelWriter& writer) const {
  writer.manifest().set("dim", static_cast<std::int64_t>(dim()));
  writer.manifest().set("rows", static_cast<std::int64_t>(geometry_.rows()));
  writer.manifest().set("rule", rule_);
  writer.write_array("centres", geometry_.centres());
  writer.write_array("covariance", geometry_.covariance());
  Vector h(1);
  h[0] = bandwidth_;
  writer.write_array("bandwidth", h);
}

ModelPtr KdeModel::load(const ModelReader& reader, Registry& /*registry*/) {
  const Matrix centres = reader.read_array("centres");
  const Matrix covariance = reader.read_array("covariance");
  const Matrix h = reader.read_array("bandwidth");
  const Index D = centres.cols();
  if (reader.dim() >= 0 && D != reader.dim())
    reader.fail("centres.npy has " + std::to_string(D) + " columns, `dim` is " +
                std::to_string(reader.dim()));
  if (centres.rows() < 1) reader.fail("centres.npy has no rows");
  if (covariance.rows() != D || covariance.cols() != D)
    reader.fail("covariance.npy must be " + std::to_string(D) + " x " + std::to_string(D));
  if (h.size() != 1 || !(h(0, 0) > 0) || !std::isfinite(h(0, 0)))
    reader.fail("bandwidth.npy must hold one positive finite number");
  const Config& m = reader.manifest();
  const std::string rule = m.has("rule") ? m.string("rule") : std::string("saved");
  try {
    return std::make_shared<KdeModel>(centres, covariance, h(0, 0), rule);
  } catch (const NumericalError& e) {
    reader.fail(e.what());
  }
}

}  // namespace kef::baselines
