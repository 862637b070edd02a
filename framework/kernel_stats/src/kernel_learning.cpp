#include "kef/kernel_learning.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <sstream>

#include "bkl_parts.hpp"
#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/model.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"
#include "kef/vector_exp.hpp"
#include "lbfgs.hpp"

namespace kef {

namespace bkl_parts {

// Bad input, not a numerical failure: DataError (exit 2) naming the first non-finite cell.
void require_finite(const Matrix& A, const std::string& where) {
  if (A.allFinite()) return;
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < A.cols(); ++j)
      if (!std::isfinite(A(i, j)))
        throw DataError(where + ": non-finite value " + number_text(A(i, j)) + " at row " +
                        std::to_string(i) + ", column " + std::to_string(j) + " (expected finite numbers)");
}

void check_inputs(const Matrix& X, const Matrix& Z, const std::string& where) {
  if (X.rows() < 1 || X.cols() < 1) throw DataError(where + ": no data rows");
  if (Z.cols() != X.cols())
    throw DataError(where + ": landmarks have " + std::to_string(Z.cols()) + " columns, the data " +
                    std::to_string(X.cols()));
  if (Z.rows() < X.cols())
    throw DataError(
        where + ": " + std::to_string(Z.rows()) + " landmarks for " + std::to_string(X.cols()) +
        " dimensions (expected at least D; the Jacobian term needs an m x D Jacobian of full rank)");
  require_finite(X, where + ": data");
  require_finite(Z, where + ": landmarks");
}

bool cholesky_logdet(Matrix& Lf, Index D, double& logdet) {
  // Eigen's dynamic-size LLT costs more than the factorisation itself at this size; one log of the
  // product of the pivots unless it leaves the normal range.
  double prod = 1.0;
  for (Index j = 0; j < D; ++j) {
    double sjj = Lf(j, j);
    for (Index k = 0; k < j; ++k) sjj -= Lf(j, k) * Lf(j, k);
    if (!(sjj > 0.0) || !std::isfinite(sjj)) return false;
    const double ljj = std::sqrt(sjj), inv = 1.0 / ljj;
    Lf(j, j) = ljj;
    prod *= ljj;
    for (Index i2 = j + 1; i2 < D; ++i2) {
      double sij = Lf(i2, j);
      for (Index k = 0; k < j; ++k) sij -= Lf(i2, k) * Lf(j, k);
      Lf(i2, j) = sij * inv;
    }
  }
  if (std::isnormal(prod)) {
    logdet = 2.0 * std::log(prod);
  } else {
    logdet = 0.0;
    for (Index j = 0; j < D; ++j) logdet += 2.0 * std::log(Lf(j, j));
  }
  return true;
}

bool weighted_jacobian_logdet(const Matrix& Xt, Index i, const Matrix& Z, const Vector& w2, Matrix& U,
                              Matrix& W, Matrix& M, double& logdet) {
  const Index D = Xt.rows(), m = Z.rows();
  for (Index a = 0; a < D; ++a) {
    const double xa = Xt(a, i);
    const double* z = Z.col(a).data();
    double* u = U.col(a).data();
    double* wu = W.col(a).data();
    for (Index l = 0; l < m; ++l) {
      u[l] = xa - z[l];
      wu[l] = w2[l] * u[l];
    }
  }
  for (Index a = 0; a < D; ++a)
    for (Index b = 0; b <= a; ++b) M(a, b) = W.col(a).dot(U.col(b));
  return cholesky_logdet(M, D, logdet);
}

void inverse_quadratic(const Matrix& Lf, Matrix& U, Vector& q) {
  // Forward substitution over whole columns (contiguous over the landmarks), in place in U.
  const Index D = U.cols();
  q.setZero();
  for (Index a2 = 0; a2 < D; ++a2) {
    auto v = U.col(a2);
    for (Index b2 = 0; b2 < a2; ++b2) v -= Lf(a2, b2) * U.col(b2);
    v *= 1.0 / Lf(a2, a2);
    q.array() += v.array().square();
  }
}

MeanPart factor_mean_part(const Matrix& R, double nn, double t, const Vector& mu, bool inverse) {
  const Index m = R.rows();
  MeanPart out;
  Matrix A = nn * R;
  A.diagonal().array() += t;
  Eigen::LLT<Matrix> llt(A);
  bool ok = llt.info() == Eigen::Success;
  if (ok) {
    const Vector dg = llt.matrixLLT().diagonal();
    ok = (dg.array() > 0.0).all() && dg.allFinite();
    if (ok) {
      out.logdet = 2.0 * dg.array().log().sum();
      out.w = llt.solve(mu);
      if (inverse) out.inverse = llt.solve(Matrix::Identity(m, m));
    }
  }
  if (!ok) {
    Eigen::SelfAdjointEigenSolver<Matrix> eig(R);
    if (eig.info() != Eigen::Success) throw NumericalError("bkl: eigendecomposition of R_zz failed");
    const Vector e = (nn * eig.eigenvalues().cwiseMax(0.0)).array() + t;
    out.logdet = e.array().log().sum();
    const Matrix& Q = eig.eigenvectors();
    out.w = Q * ((Q.transpose() * mu).array() / e.array()).matrix();
    if (inverse) out.inverse = Q * e.cwiseInverse().asDiagonal() * Q.transpose();
  }
  return out;
}

void split_landmarks(const Matrix& X, Index landmarks, const Matrix& given, const std::string& c,
                     const Context& context, Matrix& data, Matrix& Z) {
  const Index D = X.cols();
  if (given.size() > 0) {
    if (given.cols() != D)
      throw ConfigError(c + ": landmark_points have " + std::to_string(given.cols()) + " columns, the data " +
                        std::to_string(D));
    if (given.rows() < D)
      throw ConfigError(c + ": landmarks = " + std::to_string(given.rows()) +
                        " given points for D = " + std::to_string(D) + " (expected at least D)");
    Z = given;
    data = X;
    return;
  }
  if (landmarks < D)
    throw ConfigError(c + ": landmarks must be at least D = " + std::to_string(D) + ", got " +
                      std::to_string(landmarks) +
                      " (the Jacobian term needs an m x D Jacobian of full rank)");
  if (X.rows() <= landmarks)
    throw DataError(c + ": " + std::to_string(X.rows()) +
                    " rows for landmarks = " + std::to_string(landmarks) +
                    " (expected more rows than landmarks: the landmarks are held out of the data); lower "
                    "`landmarks` or give more rows");
  Context lc = context.child("landmarks");
  const std::vector<Index> pick = sample_without_replacement(X.rows(), landmarks, lc.rng());
  std::vector<Index> rest;
  rest.reserve(static_cast<std::size_t>(X.rows() - landmarks));
  std::size_t j = 0;
  for (Index i = 0; i < X.rows(); ++i) {
    if (j < pick.size() && pick[j] == i)
      ++j;
    else
      rest.push_back(i);
  }
  Z = gather_rows(X, pick);
  data = gather_rows(X, rest);
}

}  // namespace bkl_parts

namespace {

using bkl_parts::require_finite;

// Per row group sums of the O(n m D²) part (docs/math.md §9): Σ_i k_il, Σ_i k_il d_il, Σ k², Σ k² d,
// Σ_i log det M_i and Σ_i ∂(½ log det M_i)/∂log ℓ; `singular` when some M_i has no Cholesky factor.
struct RowSums {
  Vector k, kd;
  double k2 = 0.0, k2d = 0.0, logdet = 0.0, dlogdet = 0.0;
  bool singular = false;
  // workspace: U and W are m x D (column a holds u_la = x_ia − z_la, resp. e_l² u_la, contiguous in l)
  Vector d, e, w2, q, kv;
  Matrix U, W, M;
};

// What each row of the pseudolikelihood reads: the landmarks, the distances and ℓ.
struct BklRowInputs {
  const Matrix& Xt;   // D x n
  const Matrix& Z;    // m x D
  const Matrix& Dzx;  // m x n
  const Vector& c;    // n: nearest landmark's squared distance
  double half_inv_l2, inv_l2;
  Index m, D;
  bool grad;
};

// A row group's sums, zero, with its workspace allocated.
RowSums new_row_sums(const BklRowInputs& in) {
  const Index m = in.m, D = in.D;
  RowSums r;
  r.k = Vector::Zero(m);
  if (in.grad) r.kd = Vector::Zero(m);
  r.d.resize(m);
  r.e.resize(m);
  r.w2.resize(m);
  r.q.resize(m);
  r.kv.resize(m);
  r.U.resize(m, D);
  r.W.resize(m, D);
  r.M.setZero(D, D);
  return r;
}

// Adds row i's terms to the group's sums (sets `singular` when M_i has no Cholesky factor).
void add_row_sums(const BklRowInputs& in, Index i, RowSums& r) {
  if (r.singular) return;
  const Index m = in.m, D = in.D;
  const double half_inv_l2 = in.half_inv_l2, inv_l2 = in.inv_l2;
  const double ci = in.c[i];
  // e_l = exp(−(d_il − c_i)/(2ℓ²)): k_il = e_l·exp(−c_i/(2ℓ²)) and the Jacobian weight
  // exp(−(d_il − c_i)/ℓ²) = e_l², one exponential per entry.
  r.d = in.Dzx.col(i);
  r.e = (r.d.array() - ci) * (-half_inv_l2);
  exp_array(r.e.data(), r.e.data(), m);
  const double si = std::exp(-ci * half_inv_l2);
  // Whole-vector sums: a scalar loop accumulating into r's members is serialised through memory.
  r.kv = r.e * si;
  r.k += r.kv;
  r.k2 += r.kv.squaredNorm();
  if (in.grad) {
    r.kv.array() *= r.d.array();  // k_il d_il
    r.kd += r.kv;
    r.k2d += (r.kv.array() * r.e.array()).sum() * si;
  }
  // M~_i = Σ_l e_l² u_l u_lᵀ, u_l = x_i − z_l (its log det shifted by −D c_i/ℓ²): D(D+1)/2 dot
  // products of length m over contiguous columns (Eigen's GEMM costs more at 5 x 100 x 5).
  r.w2 = r.e.array().square();
  Matrix& Lf = r.M;  // its Cholesky factor once weighted_jacobian_logdet returns
  double logdet;
  if (!bkl_parts::weighted_jacobian_logdet(in.Xt, i, in.Z, r.w2, r.U, r.W, Lf, logdet)) {
    r.singular = true;
    return;
  }
  r.logdet += logdet - D * ci * inv_l2;
  if (in.grad) {
    // ∂(½ log det M_i)/∂log ℓ = Σ_l w_il (d_il/ℓ²) u_lᵀ M_i⁻¹ u_l (shift-invariant), with
    // ‖L⁻¹u_l‖² by forward substitution.
    bkl_parts::inverse_quadratic(Lf, r.U, r.q);
    r.dlogdet += (r.w2.array() * r.d.array() * r.q.array()).sum() * inv_l2;
  }
}

void merge_row_sums(RowSums& acc, RowSums& part, bool grad) {
  acc.singular = acc.singular || part.singular;
  acc.k += part.k;
  if (grad) acc.kd += part.kd;
  acc.k2 += part.k2;
  acc.k2d += part.k2d;
  acc.logdet += part.logdet;
  acc.dlogdet += part.dlogdet;
}

}  // namespace

BklPseudolikelihood::BklPseudolikelihood(const Matrix& X, const Matrix& Z, const std::string& where)
    : n_(X.rows()), m_(Z.rows()), d_(X.cols()) {
  bkl_parts::check_inputs(X, Z, where);
  Xt_ = X.transpose();
  Z_ = Z;
  Dzx_ = squared_distances(Z, X);
  Dzz_ = squared_distances(Z, Z);
  Dzz_.diagonal().setZero();
  c_ = Dzx_.colwise().minCoeff().transpose();
}

double BklPseudolikelihood::value(double a, double b, Vector* gradient, const Context& context) const {
  const Index n = n_, m = m_, D = d_;
  const double l2 = std::exp(2.0 * a), t = std::exp(b);
  const double half_inv_l2 = 0.5 / l2, inv_l2 = 1.0 / l2;
  const bool grad = gradient != nullptr;
  if (grad) gradient->setConstant(2, std::numeric_limits<double>::quiet_NaN());
  if (!std::isfinite(l2) || !std::isfinite(t) || !(l2 > 0.0) || !(t > 0.0)) return kNegInf;

  // Rows in 16 fixed groups (never a function of the thread count), summed in group order.
  const BklRowInputs rows{Xt_, Z_, Dzx_, c_, half_inv_l2, inv_l2, m, D, grad};
  RowSums s = ordered_reduce(
      n, context.threads(), [&] { return new_row_sums(rows); },
      [&](Index i, RowSums& r) { add_row_sums(rows, i, r); },
      [&](RowSums& acc, RowSums& part) { merge_row_sums(acc, part, grad); }, 16);
  if (s.singular) return kNegInf;

  // The m x m part, A = n R + τ² I: by Cholesky (m³/3 flops), or, when rounding has left R with
  // eigenvalues slightly below 0 and τ² is too small to cover them, through R's eigendecomposition with
  // those eigenvalues set to 0 (as the paper's code), so A is positive definite for every τ² > 0.
  const double nn = static_cast<double>(n);
  Matrix R = Dzz_ * (-0.25 * inv_l2);
  exp_array(R.data(), R.data(), R.size());
  const Vector mu = s.k / nn;
  const bkl_parts::MeanPart part = bkl_parts::factor_mean_part(R, nn, t, mu, grad);
  const Matrix& Ainv = part.inverse;  // only for the gradient
  const Vector& w = part.w;           // A⁻¹ μ̄
  const double logdetA = part.logdet;
  const double S = s.k2 - nn * mu.squaredNorm();
  const double md = static_cast<double>(m), Dd = static_cast<double>(D);
  const double val = -0.5 * (logdetA + md * (nn - 1.0) * b + md * nn * std::log(2.0 * std::numbers::pi) +
                             nn * mu.dot(w) + S / t) +
                     0.5 * s.logdet - 2.0 * Dd * nn * a;
  if (!grad) return val;

  // ∂/∂log τ²: t·tr(A⁻¹) + m(n − 1) − n t‖w‖² − S/t inside the bracket.
  const double gb = -0.5 * (t * Ainv.trace() + md * (nn - 1.0) - nn * t * w.squaredNorm() - S / t);
  // ∂/∂log ℓ: ∂R = R ⊙ D_zz/(2ℓ²), ∂k = k d/ℓ², ∂μ̄ = mean of ∂k; ∂ log det A = n tr(A⁻¹ ∂R),
  // ∂(n μ̄ᵀA⁻¹μ̄) = 2n wᵀ∂μ̄ − n² wᵀ∂R w, ∂S = 2⟨k, ∂k⟩ − 2n μ̄ᵀ∂μ̄.
  const Matrix dR = R.cwiseProduct(Dzz_) * (0.5 * inv_l2);
  const Vector dmu = s.kd * (inv_l2 / nn);
  const double ga = -0.5 * (nn * Ainv.cwiseProduct(dR).sum() + 2.0 * nn * w.dot(dmu) -
                            nn * nn * w.dot(dR * w) + (2.0 * s.k2d * inv_l2 - 2.0 * nn * mu.dot(dmu)) / t) +
                    s.dlogdet - 2.0 * Dd * nn;
  (*gradient)[0] = ga;
  (*gradient)[1] = gb;
  return val;
}

namespace {

// The posterior of log ℓ (flat prior on [lo, hi], τ² fixed) as a one-dimensional Model for kef's HMC:
// log p~ = log L inside the box, NaN outside (HMC counts the step as a divergence and rejects it).
class LogLengthscalePosterior final : public Model {
 public:
  LogLengthscalePosterior(const BklPseudolikelihood& L, double log_tau2, double lo, double hi,
                          const Context& ctx)
      : L_(L), b_(log_tau2), lo_(lo), hi_(hi), ctx_(ctx) {}
  Index dim() const override { return 1; }
  std::string type_name() const override { return "bkl/log_lengthscale_posterior"; }
  FacetSet facets() const override { return {Facet::LogDensity, Facet::Score}; }
  Vector log_unnormalized(const Matrix& X) const override {
    Vector out(X.rows());
    for (Index i = 0; i < X.rows(); ++i) out[i] = eval(X(i, 0), nullptr);
    return out;
  }
  Matrix score(const Matrix& X) const override {
    Matrix out(X.rows(), 1);
    Vector g(2);
    for (Index i = 0; i < X.rows(); ++i) {
      eval(X(i, 0), &g);
      out(i, 0) = g[0];
    }
    return out;
  }
  std::string describe() const override { return "posterior of log lengthscale (Bayesian kernel learning)"; }

 private:
  double eval(double a, Vector* g) const {
    if (!(a >= lo_ && a <= hi_)) {
      if (g) g->setConstant(2, std::numeric_limits<double>::quiet_NaN());
      return std::numeric_limits<double>::quiet_NaN();
    }
    const double v = L_.value(a, b_, g, ctx_);
    return std::isfinite(v) ? v : std::numeric_limits<double>::quiet_NaN();
  }
  const BklPseudolikelihood& L_;
  double b_, lo_, hi_;
  const Context& ctx_;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(pos));
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1.0 - f) + v[i + 1] * f : v[i];
}

void check_bkl_options(const Matrix& X, const BklOptions& o) {
  const std::string& c = o.context;
  if (X.rows() < 1 || X.cols() < 1) throw DataError(c + ": no data rows");
  require_finite(X, c + ": data");
  if (!(o.tau2 > 0.0) || !std::isfinite(o.tau2))
    throw ConfigError(c + ": tau2 must be a positive number (the fixed noise variance τ²), got " +
                      number_text(o.tau2));
  if (o.profile_points < 5)
    throw ConfigError(c + ": profile_points must be >= 5, got " + std::to_string(o.profile_points));
  if (o.lower < 0.0 || o.upper < 0.0 || !std::isfinite(o.lower) || !std::isfinite(o.upper) ||
      (o.lower > 0.0 && o.upper > 0.0 && !(o.lower < o.upper)))
    throw ConfigError(c +
                      ": lower and upper (the box of ℓ) must be positive with lower < upper, or 0 for "
                      "automatic; got lower = " +
                      number_text(o.lower) + ", upper = " + number_text(o.upper));
}

// log L at log ℓ = a (its gradient in (log ℓ, log τ²) when g is not null), counting evaluations.
using LogPseudolikelihood = std::function<double(double a, Vector* g)>;

// The box of ℓ: as given, or up to 10² times the median pairwise distance and down from 10^-3 times
// it to the smallest ℓ (in steps of 1.25) at which log L is finite.
void bkl_box(const Matrix& data, const BklOptions& o, const LogPseudolikelihood& logL, BklResult& r) {
  const std::string& c = o.context;
  r.median_lengthscale = data.rows() >= 2 ? median_pairwise_distance(data, 1000) : 0.0;
  const double lmed = r.median_lengthscale;
  if ((o.lower == 0.0 || o.upper == 0.0) && !(lmed > 0.0))
    throw DataError(c + ": the data rows' median pairwise distance is " + number_text(lmed) +
                    " (repeated rows), so the automatic bounds of ℓ are undefined; give lower and upper");
  r.upper = o.upper > 0.0 ? o.upper : 1e2 * lmed;
  if (o.lower > 0.0) {
    r.lower = o.lower;
  } else {
    r.lower = 1e-3 * lmed;
    while (r.lower < r.upper && !std::isfinite(logL(std::log(r.lower), nullptr))) r.lower *= 1.25;
    if (!(r.lower < r.upper))
      throw DataError(c + ": the pseudolikelihood is not finite for any ℓ below the upper bound " +
                      number_text(r.upper) +
                      " (the landmarks' offsets from some row span fewer than D directions)");
  }
  if (!(r.lower < r.upper))
    throw ConfigError(c + ": lower = " + number_text(r.lower) +
                      " is not below upper = " + number_text(r.upper));
}

// The profile in ℓ (τ² fixed), which is also the mode finder's multistart: the objective is
// multimodal (the paper's figure), so L-BFGS starts from the best grid point, bracketed by its
// neighbours. Returns that point's index.
Index bkl_profile(const BklOptions& o, const LogPseudolikelihood& logL, BklResult& r) {
  const double alo = std::log(r.lower), ahi = std::log(r.upper);
  const Index P = o.profile_points;
  Index best = -1;
  for (Index k = 0; k < P; ++k) {
    const double a = alo + (ahi - alo) * static_cast<double>(k) / static_cast<double>(P - 1);
    const double v = logL(a, nullptr);
    r.profile.lengthscale.push_back(std::exp(a));
    r.profile.log_likelihood.push_back(std::isfinite(v) ? v : kNegInf);
    if (std::isfinite(v) && (best < 0 || v > r.profile.log_likelihood[static_cast<std::size_t>(best)]))
      best = k;
  }
  if (r.median_lengthscale > 0.0) r.median_log_likelihood = logL(std::log(r.median_lengthscale), nullptr);
  if (best < 0)
    throw DataError(o.context + ": the pseudolikelihood is not finite anywhere on ℓ in [" +
                    number_text(r.lower) + ", " + number_text(r.upper) + "]; widen the bounds");
  return best;
}

// A maximum on the box's edge chooses no length scale.
[[noreturn]] void refuse_bound(const BklOptions& o, const BklResult& r, bool upper, double at) {
  const std::string where_tau = " (τ² fixed at " + number_text(o.tau2) + ", ℓ in [" + number_text(r.lower) +
                                ", " + number_text(r.upper) + "])";
  throw DataError(o.context + ": the pseudolikelihood's maximum over ℓ is on the " + (upper ? "upper" : "lower") +
                  " bound ℓ = " + number_text(at) + where_tau +
                  ": no interior optimum, so no length scale is chosen; set tau2 to another value, widen "
                  "`lower`/`upper`, or give the bandwidth as a number (the profile of log L in ℓ shows the "
                  "shape)");
}

// The mode of log ℓ by L-BFGS inside the bracket of the profile's best point; returns its log ℓ.
double bkl_mode(const BklOptions& o, const LogPseudolikelihood& logL, Index best, BklResult& r) {
  const Index P = o.profile_points;
  if (best == 0) refuse_bound(o, r, false, r.lower);
  if (best == P - 1) refuse_bound(o, r, true, r.upper);
  LbfgsOptions lo;
  lo.context = o.context + " (mode of log ℓ)";
  lo.lower = Vector::Constant(1, std::log(r.profile.lengthscale[static_cast<std::size_t>(best - 1)]));
  lo.upper = Vector::Constant(1, std::log(r.profile.lengthscale[static_cast<std::size_t>(best + 1)]));
  const LbfgsResult opt = minimize_lbfgs(
      [&](const Vector& x, Vector* g) {
        Vector g2(2);
        const double v = logL(x[0], g ? &g2 : nullptr);
        if (g) (*g)[0] = -g2[0];
        return -v;
      },
      Vector::Constant(1, std::log(r.profile.lengthscale[static_cast<std::size_t>(best)])), lo);
  r.mode = std::exp(opt.x[0]);
  r.log_likelihood = -opt.value;
  r.iterations = opt.iterations;
  // The bracket's ends are the outer bounds only next to the box's edge.
  if (opt.at_lower[0] && best - 1 == 0) refuse_bound(o, r, false, r.lower);
  if (opt.at_upper[0] && best + 1 == P - 1) refuse_bound(o, r, true, r.upper);
  r.sigma = r.mode;
  r.method = "mode";
  return opt.x[0];
}

// The posterior of ℓ by HMC over log ℓ, started from four points around the mode: its draws,
// summaries and median (the chosen ℓ); the provenance says how.
void bkl_hmc(const BklPseudolikelihood& L, const BklOptions& o, double log_mode, const Context& context,
             BklResult& r, std::ostringstream& how) {
  const double b = std::log(o.tau2);
  const double alo = std::log(r.lower), ahi = std::log(r.upper);
  HmcOptions h = o.hmc;
  h.init = HmcInit::Points;
  const double step = (ahi - alo) / static_cast<double>(o.profile_points - 1);
  h.init_points.resize(4, 1);
  for (Index k = 0; k < 4; ++k)
    h.init_points(k, 0) = std::clamp(log_mode + step * (static_cast<double>(k) - 1.5) / 3.0, alo, ahi);
  h.context = o.context + " (HMC over log ℓ)";
  h.progress = &context.progress();
  h.progress_task = "bkl hmc";
  LogLengthscalePosterior post(L, b, alo, ahi, context);
  Context hc = context.child("hmc");
  HmcDiagnostics diag;
  const Matrix draws = run_hmc(post, hc.rng(), h, context, &diag);
  r.draws = draws.col(0);
  std::vector<double> ell(static_cast<std::size_t>(r.draws.size()));
  for (Index i = 0; i < r.draws.size(); ++i) ell[static_cast<std::size_t>(i)] = std::exp(r.draws[i]);
  const Vector ev = Eigen::Map<const Vector>(ell.data(), static_cast<Index>(ell.size()));
  r.posterior_mean = ev.mean();
  r.posterior_sd =
      std::sqrt((ev.array() - r.posterior_mean).square().sum() / std::max<double>(1.0, ev.size() - 1.0));
  r.posterior_q05 = quantile(ell, 0.05);
  r.posterior_q95 = quantile(ell, 0.95);
  r.sigma = quantile(ell, 0.5);
  r.log_likelihood = L.value(std::log(r.sigma), b, nullptr, context);
  r.hmc_summary = diag.summary();
  r.method = "hmc";
  how << "posterior median of ℓ by HMC over log ℓ (" << h.chains << " chains x " << h.samples
      << " draws after " << h.warmup << " warm-up; mode " << number_text(r.mode) << ", 90% interval ["
      << number_text(r.posterior_q05) << ", " << number_text(r.posterior_q95) << "])";
}

}  // namespace

BklResult bkl_bandwidth(const Matrix& X, const BklOptions& o, const Context& context) {
  const std::string& c = o.context;
  check_bkl_options(X, o);

  // Landmarks: given, or m rows drawn by the context's stream and held out of the data.
  Matrix data, Z;
  bkl_parts::split_landmarks(X, o.landmarks, o.landmark_points, c, context, data, Z);
  const BklPseudolikelihood L(data, Z, c);
  const double b = std::log(o.tau2);
  Index evaluations = 0;
  const LogPseudolikelihood logL = [&](double a, Vector* g) {
    ++evaluations;
    return L.value(a, b, g, context);
  };

  BklResult r;
  r.tau2 = o.tau2;
  r.rows = L.rows();
  r.landmarks = L.landmarks();
  bkl_box(data, o, logL, r);
  const Index best = bkl_profile(o, logL, r);
  const double log_mode = bkl_mode(o, logL, best, r);

  std::ostringstream how;
  how << "Bayesian kernel learning (Flaxman et al. 2016; docs/math.md §9): ";
  if (o.method == BklMethod::Hmc)
    bkl_hmc(L, o, log_mode, context, r, how);
  else
    how << "posterior mode of log ℓ by L-BFGS (Ceres) from the best of " << o.profile_points << " profile points";
  r.evaluations = evaluations;
  how << "; flat prior on log ℓ over [" << number_text(r.lower) << ", " << number_text(r.upper)
      << "], τ² fixed at " << number_text(o.tau2) << ", prior covariance exp(−‖x−x'‖²/(4ℓ²)) of amplitude 1; "
      << r.landmarks << " landmarks "
      << (o.landmark_points.size() > 0 ? "given" : "drawn from the rows and held out") << ", " << r.rows
      << " data rows; log L = " << number_text(r.log_likelihood)
      << " (median heuristic ℓ = " << number_text(r.median_lengthscale)
      << ": log L = " << number_text(r.median_log_likelihood) << ")";
  r.provenance = how.str();
  return r;
}

}  // namespace kef
