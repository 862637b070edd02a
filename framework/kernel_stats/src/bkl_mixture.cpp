#include "bkl_mixture.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>

#include "bkl_parts.hpp"
#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"
#include "kef/vector_exp.hpp"
#include "lbfgs.hpp"

namespace kef {
namespace {


// log ρ = v − logsumexp(v): the softmax without overflow.
Vector log_softmax(const Vector& v) {
  const double top = v.maxCoeff();
  const double lse = top + std::log((v.array() - top).exp().sum());
  return v.array() - lse;
}

// β_rs of r_θ (docs/math.md §9.6), R x R symmetric, summing to 1 over all (r, s): from
// log g_rs = log ρ_r + log ρ_s + (D/2) log(2σ_r²σ_s²/(σ_r² + σ_s²)), normalised in log space.
Matrix pair_weights(const Vector& log_rho, const Vector& s2, double D) {
  const Index R = s2.size();
  Matrix lg(R, R);
  for (Index r = 0; r < R; ++r)
    for (Index s = 0; s < R; ++s)
      lg(r, s) = log_rho[r] + log_rho[s] + 0.5 * D * std::log(2.0 * s2[r] * s2[s] / (s2[r] + s2[s]));
  const double top = lg.maxCoeff();
  const Matrix e = (lg.array() - top).exp().matrix();
  return e / e.sum();
}

// exp(−Dsq/(2(σ_r² + σ_s²))), elementwise.
Matrix pair_term(const Matrix& Dsq, double s2r, double s2s) {
  Matrix E = Dsq * (-0.5 / (s2r + s2s));
  exp_array(E.data(), E.data(), E.size());
  return E;
}

// Per row group sums of the O(nm(D² + R)) part: Σ_i k_i·, ‖Φ‖², Σ_i log det M_i, and for the gradient
// Σ_i κ_ri·, Σ_i κ_ri· ⊙ d_i· (m x R, κ_r the r-th term of k), ⟨k, κ_r⟩, ⟨k, κ_r ⊙ d⟩ and the
// Jacobian term's derivatives (R each).
struct MixRows {
  Vector k, kk, kkd, js, jv;
  Matrix Kr, KDr;
  double k2 = 0.0, logdet = 0.0;
  bool singular = false;
  // workspace: A (m x R) the shifted terms of h, U and W (m x D) as in the Gaussian case
  Vector d, h, kv, q, w2, t1, t2, sc;
  Matrix A, U, W, M;
};


// What each row of the pseudolikelihood reads: the landmarks, the distances and the parameters.
struct MixRowInputs {
  const Matrix& Xt;   // D x n
  const Matrix& Z;    // m x D
  const Matrix& Dzx;  // m x n
  const Vector& c;    // n: nearest landmark's squared distance
  const Vector& s2;
  const Vector& half_inv;
  const Vector& coef;
  double half_inv_max, Dd;
  Index m, D, R;
  bool grad;
};

// A row group's sums, zero, with its workspace allocated.
MixRows new_mix_rows(const MixRowInputs& in) {
  const Index m = in.m, D = in.D, R = in.R;
  MixRows r;
  r.k = Vector::Zero(m);
  if (in.grad) {
    r.Kr = Matrix::Zero(m, R);
    r.KDr = Matrix::Zero(m, R);
    r.kk = r.kkd = r.js = r.jv = Vector::Zero(R);
  }
  r.d.resize(m);
  r.h.resize(m);
  r.kv.resize(m);
  r.q.resize(m);
  r.w2.resize(m);
  r.t1.resize(m);
  r.t2.resize(m);
  r.sc.resize(R);
  r.A.resize(m, R);
  r.U.resize(m, D);
  r.W.resize(m, D);
  r.M.setZero(D, D);
  return r;
}

// Adds row i's terms to the group's sums (sets `singular` when M_i cannot be factored).
void add_mix_row(const MixRowInputs& in, Index i, MixRows& r) {
  if (r.singular) return;
  const Index m = in.m, R = in.R;
  const Vector& s2 = in.s2;
  // A_lr = (ρ_r/σ_r²) exp(−d_il/(2σ_r²) + c_i/(2σ_max²)) ≤ ρ_r/σ_r²: the terms of the Jacobian's
  // weight h_il = Σ_r (ρ_r/σ_r²) exp(−d_il/(2σ_r²)) shifted by exp(c_i/(2σ_max²)), so that the
  // nearest landmark's weight never underflows (docs/math.md §9.6); one exponential per entry.
  const double shift = in.c[i] * in.half_inv_max;
  r.d = in.Dzx.col(i);
  const double* dd = r.d.data();
  for (Index c = 0; c < R; ++c) {
    double* a = r.A.col(c).data();
    const double hc = in.half_inv[c];
    for (Index l = 0; l < m; ++l) a[l] = shift - dd[l] * hc;
    exp_array(a, a, m);
    r.A.col(c) *= in.coef[c];
  }
  const double si = std::exp(-shift);
  r.h = r.A.rowwise().sum();
  r.sc = s2 * si;  // κ_r = A_r σ_r² e^{−shift}: the r-th term of k
  r.kv.noalias() = r.A * r.sc;
  r.k += r.kv;
  r.k2 += r.kv.squaredNorm();
  if (in.grad) {
    for (Index c = 0; c < R; ++c) {
      r.t1 = r.A.col(c) * r.sc[c];
      r.Kr.col(c) += r.t1;
      r.kk[c] += r.kv.dot(r.t1);
      r.t1.array() *= r.d.array();
      r.KDr.col(c) += r.t1;
      r.kkd[c] += r.kv.dot(r.t1);
    }
  }
  // M~_i = Σ_l h~_il² u_l u_lᵀ (J_i = −diag(h_i) U_i, so J_iᵀJ_i = M_i).
  r.w2 = r.h.array().square();
  double logdet;
  if (!bkl_parts::weighted_jacobian_logdet(in.Xt, i, in.Z, r.w2, r.U, r.W, r.M, logdet)) {
    r.singular = true;
    return;
  }
  r.logdet += logdet - 2.0 * in.Dd * shift;
  if (in.grad) {
    // ∂(½ log det M_i) = Σ_l h_il ∂h_il q_il, q_il = u_lᵀ M_i⁻¹ u_l (shift-invariant), with
    // ∂h/∂v_p = A_p − ρ_p h and ∂h/∂log σ_r = A_r (d/σ_r² − 2); Σ_l h_l² q_l = D.
    bkl_parts::inverse_quadratic(r.M, r.U, r.q);
    r.t1 = r.h.cwiseProduct(r.q);
    r.t2 = r.t1.cwiseProduct(r.d);
    for (Index c = 0; c < R; ++c) {
      const double u = r.t1.dot(r.A.col(c)), ud = r.t2.dot(r.A.col(c));
      r.jv[c] += u;
      r.js[c] += ud / s2[c] - 2.0 * u;
    }
  }
}

void merge_mix_rows(MixRows& acc, MixRows& part, bool grad) {
  acc.singular = acc.singular || part.singular;
  acc.k += part.k;
  acc.k2 += part.k2;
  acc.logdet += part.logdet;
  if (grad) {
    acc.Kr += part.Kr;
    acc.KDr += part.KDr;
    acc.kk += part.kk;
    acc.kkd += part.kkd;
    acc.js += part.js;
    acc.jv += part.jv;
  }
}

// What the gradient of the pseudolikelihood reads beyond the row sums.
struct MixGradientInputs {
  const bkl_parts::MeanPart& part;
  const std::vector<Matrix>& E;  // E_rq for r <= q, in row order
  const Matrix& Dzz;
  const Matrix& beta;
  const Vector& rho;
  const Vector& s2;
  const Vector& mu;
  double t, S, nn, md, Dd;
  Index R;
};

// The gradient in (v, log σ, b): g has 2R + 1 entries.
void mixture_gradient(const MixRows& s, const MixGradientInputs& in, Vector& g) {
  const Index R = in.R;
  const double t = in.t, S = in.S, nn = in.nn, md = in.md, Dd = in.Dd;
  const Vector& w = in.part.w;
  const Vector& rho = in.rho;
  const Vector& s2 = in.s2;
  const Vector& mu = in.mu;
  const Matrix& beta = in.beta;
  g[2 * R] = -0.5 * (t * in.part.inverse.trace() + md * (nn - 1.0) - nn * t * w.squaredNorm() - S / t);
  // ⟨P, ∂R⟩ with P = n A⁻¹ − n² w wᵀ gives n tr(A⁻¹∂R) − n² wᵀ∂R w; ∂R = Σ_rs β_rs (∂log β_rs E_rs +
  // ∂γ_rs E_rs ⊙ D_zz), γ_rs = −1/(2(σ_r² + σ_s²)), so two contractions per pair suffice.
  const Matrix P = nn * in.part.inverse - (nn * nn) * (w * w.transpose());
  Matrix e(R, R), f(R, R);
  {
    std::size_t k = 0;
    for (Index r = 0; r < R; ++r)
      for (Index q = r; q < R; ++q, ++k) {
        const Matrix PE = P.cwiseProduct(in.E[k]);
        e(r, q) = e(q, r) = PE.sum();
        f(r, q) = f(q, r) = PE.cwiseProduct(in.Dzz).sum();
      }
  }
  const Index npar = 2 * R;
  for (Index p = 0; p < npar; ++p) {
    const bool is_v = p < R;
    const Index j = is_v ? p : p - R;
    // ∂ log g_rs and ∂γ_rs in parameter p.
    auto dlogg = [&](Index r, Index q) {
      if (is_v) return (r == j ? 1.0 : 0.0) + (q == j ? 1.0 : 0.0) - 2.0 * rho[j];
      const double num = (r == j ? s2[r] : 0.0) + (q == j ? s2[q] : 0.0);
      return Dd * ((r == j ? 1.0 : 0.0) + (q == j ? 1.0 : 0.0)) - Dd * num / (s2[r] + s2[q]);
    };
    auto dgamma = [&](Index r, Index q) {
      if (is_v) return 0.0;
      const double sum = s2[r] + s2[q];
      return ((r == j ? s2[r] : 0.0) + (q == j ? s2[q] : 0.0)) / (sum * sum);
    };
    double avg = 0.0;
    for (Index r = 0; r < R; ++r)
      for (Index q = 0; q < R; ++q) avg += beta(r, q) * dlogg(r, q);
    double dR = 0.0;
    for (Index r = 0; r < R; ++r)
      for (Index q = 0; q < R; ++q)
        dR += beta(r, q) * ((dlogg(r, q) - avg) * e(r, q) + dgamma(r, q) * f(r, q));
    // ∂μ̄, ⟨Φ, ∂Φ⟩ and the Jacobian term.
    Vector dmu;
    double pp, jac;
    if (is_v) {
      dmu = (s.Kr.col(j) - rho[j] * s.k) / nn;
      pp = s.kk[j] - rho[j] * s.k2;
      jac = s.jv[j] - nn * Dd * rho[j];
    } else {
      dmu = s.KDr.col(j) / (nn * s2[j]);
      pp = s.kkd[j] / s2[j];
      jac = s.js[j];
    }
    g[p] = -0.5 * (dR + 2.0 * nn * w.dot(dmu) + (2.0 * pp - 2.0 * nn * mu.dot(dmu)) / t) + jac;
  }
}

}  // namespace

Matrix bkl_mixture_covariance(const Matrix& A, const Matrix& B, const Vector& sigma, const Vector& weights) {
  const Index R = sigma.size();
  if (R < 1 || weights.size() != R)
    throw ConfigError("bkl mixture covariance: " + std::to_string(sigma.size()) + " length scales and " +
                      std::to_string(weights.size()) + " weights (expected R >= 1 of each)");
  for (Index r = 0; r < R; ++r)
    if (!(sigma[r] > 0.0) || !std::isfinite(sigma[r]) || !(weights[r] > 0.0) || !std::isfinite(weights[r]))
      throw ConfigError("bkl mixture covariance: component " + std::to_string(r + 1) +
                        " has σ = " + number_text(sigma[r]) + ", weight " + number_text(weights[r]) +
                        " (expected positive finite numbers)");
  if (A.cols() != B.cols())
    throw DataError("bkl mixture covariance: " + std::to_string(A.cols()) + " and " +
                    std::to_string(B.cols()) + " columns");
  const Vector s2 = sigma.array().square();
  const Vector log_rho = weights.array().log() - std::log(weights.sum());
  const Matrix beta = pair_weights(log_rho, s2, static_cast<double>(A.cols()));
  const Matrix Dsq = squared_distances(A, B).cwiseMax(0.0);
  Matrix out = Matrix::Zero(A.rows(), B.rows());
  for (Index r = 0; r < R; ++r)
    for (Index s = r; s < R; ++s) out += (r == s ? 1.0 : 2.0) * beta(r, s) * pair_term(Dsq, s2[r], s2[s]);
  return out;
}

BklMixturePseudolikelihood::BklMixturePseudolikelihood(const Matrix& X, const Matrix& Z, Index components,
                                                       const std::string& where)
    : n_(X.rows()), m_(Z.rows()), d_(X.cols()), components_(components) {
  if (components < 1)
    throw ConfigError(where + ": a Gaussian mixture needs at least 1 component, got " +
                      std::to_string(components));
  bkl_parts::check_inputs(X, Z, where);
  Xt_ = X.transpose();
  Z_ = Z;
  Dzx_ = squared_distances(Z, X);
  Dzz_ = squared_distances(Z, Z);
  Dzz_.diagonal().setZero();
  c_ = Dzx_.colwise().minCoeff().transpose();
}

double BklMixturePseudolikelihood::value(const Vector& theta, double b, Vector* gradient,
                                         const Context& context) const {
  const Index n = n_, m = m_, D = d_, R = components_;
  if (theta.size() != 2 * R)
    throw Error("bkl mixture: " + std::to_string(theta.size()) + " parameters for " + std::to_string(R) +
                " components (expected 2R: the logits, then the log length scales)");
  const bool grad = gradient != nullptr;
  if (grad) gradient->setConstant(2 * R + 1, kNaN);
  const double t = std::exp(b);
  if (!theta.allFinite() || !std::isfinite(t) || !(t > 0.0)) return kNegInf;
  const Vector log_rho = log_softmax(theta.head(R));
  const Vector rho = log_rho.array().exp();
  const Vector s2 = (2.0 * theta.tail(R)).array().exp();
  if (!s2.allFinite() || !(s2.minCoeff() > 0.0)) return kNegInf;
  const double Dd = static_cast<double>(D), nn = static_cast<double>(n), md = static_cast<double>(m);
  const Vector half_inv = 0.5 * s2.cwiseInverse();
  const Vector coef = rho.cwiseQuotient(s2);  // ρ_r/σ_r²
  const double half_inv_max = 0.5 / s2.maxCoeff();

  // Rows in 16 fixed groups (never a function of the thread count), summed in group order.
  const MixRowInputs rows{Xt_, Z_, Dzx_, c_, s2, half_inv, coef, half_inv_max, Dd, m, D, R, grad};
  MixRows s = ordered_reduce(
      n, context.threads(), [&] { return new_mix_rows(rows); },
      [&](Index i, MixRows& r) { add_mix_row(rows, i, r); },
      [&](MixRows& acc, MixRows& part) { merge_mix_rows(acc, part, grad); }, 16);
  if (s.singular) return kNegInf;

  // The m x m part: R_zz = Σ_{r,s} β_rs E_rs, E_rs = exp(−D_zz/(2(σ_r² + σ_s²))).
  const Matrix beta = pair_weights(log_rho, s2, Dd);
  std::vector<Matrix> E;
  Matrix Rzz = Matrix::Zero(m, m);
  for (Index r = 0; r < R; ++r)
    for (Index q = r; q < R; ++q) {
      Matrix Erq = pair_term(Dzz_, s2[r], s2[q]);
      Rzz += (r == q ? 1.0 : 2.0) * beta(r, q) * Erq;
      if (grad) E.push_back(std::move(Erq));
    }
  const Vector mu = s.k / nn;
  const bkl_parts::MeanPart part = bkl_parts::factor_mean_part(Rzz, nn, t, mu, grad);
  const Vector& w = part.w;
  const double S = s.k2 - nn * mu.squaredNorm();
  const double val = -0.5 * (part.logdet + md * (nn - 1.0) * b + md * nn * std::log(2.0 * std::numbers::pi) +
                             nn * mu.dot(w) + S / t) +
                     0.5 * s.logdet;
  if (!grad) return val;
  mixture_gradient(s, {part, E, Dzz_, beta, rho, s2, mu, t, S, nn, md, Dd, R}, *gradient);
  return val;
}

namespace {

BklMixtureResult fit_mixture(const Matrix& data, const Matrix& Z, const BklMixtureOptions& o,
                             const Context& context);

// The box of every σ_r: as given, or 10^-2 and 10^2 times the rows' median pairwise distance.
void mixture_box(const Matrix& data, const BklMixtureOptions& o, BklMixtureResult& res) {
  const std::string& c = o.context;
  res.median_lengthscale = data.rows() >= 2 ? median_pairwise_distance(data, 1000) : 0.0;
  const double lmed = res.median_lengthscale;
  if ((o.lower == 0.0 || o.upper == 0.0) && !(lmed > 0.0))
    throw DataError(c + ": the data rows' median pairwise distance is " + number_text(lmed) +
                    " (repeated rows), so the automatic bounds of σ are undefined; give lower and upper");
  res.lower = o.lower > 0.0 ? o.lower : 1e-2 * lmed;
  res.upper = o.upper > 0.0 ? o.upper : 1e2 * lmed;
  if (!(res.lower < res.upper))
    throw ConfigError(c + ": lower = " + number_text(res.lower) +
                      " is not below upper = " + number_text(res.upper));
}

// θ = (v, s) with v_R = 0 (softmax is invariant to a common shift of the logits, so only R − 1 of
// them are free); the free coordinates are the learned ones, optimised in the prior's box.
struct MixtureCoordinates {
  Vector theta0;
  std::vector<Index> free;
  std::vector<std::string> names;
  LbfgsOptions lbfgs;
  Vector x0;

  Index count() const { return static_cast<Index>(free.size()); }
  // θ with the free coordinates set to x.
  Vector full(const Vector& x) const {
    Vector th = theta0;
    for (Index k = 0; k < count(); ++k) th[free[static_cast<std::size_t>(k)]] = x[k];
    return th;
  }
};

MixtureCoordinates mixture_coordinates(const BklMixtureOptions& o, bool learn_weights, const BklMixtureResult& res) {
  const std::string& c = o.context;
  const Index R = static_cast<Index>(o.sigma.size());
  MixtureCoordinates mc;
  mc.theta0.resize(2 * R);
  for (Index r = 0; r < R; ++r) {
    mc.theta0[r] = std::log(o.weights[static_cast<std::size_t>(r)]) - std::log(o.weights.back());
    mc.theta0[R + r] = std::log(o.sigma[static_cast<std::size_t>(r)]);
  }
  if (learn_weights)
    for (Index r = 0; r + 1 < R; ++r) {
      mc.free.push_back(r);
      mc.names.push_back("log(ρ_" + std::to_string(r + 1) + "/ρ_" + std::to_string(R) + ")");
    }
  if (o.learn_sigma)
    for (Index r = 0; r < R; ++r) {
      mc.free.push_back(R + r);
      mc.names.push_back("σ_" + std::to_string(r + 1));
    }
  const Index F = mc.count();
  LbfgsOptions& lo = mc.lbfgs;
  lo.context = c + " (mode of the mixture's parameters)";
  lo.lower.resize(F);
  lo.upper.resize(F);
  mc.x0.resize(F);
  for (Index k = 0; k < F; ++k) {
    const Index p = mc.free[static_cast<std::size_t>(k)];
    const bool is_v = p < R;
    lo.lower[k] = is_v ? -o.logit_bound : std::log(res.lower);
    lo.upper[k] = is_v ? o.logit_bound : std::log(res.upper);
    mc.x0[k] = mc.theta0[p];
    if (!(mc.x0[k] >= lo.lower[k] && mc.x0[k] <= lo.upper[k]))
      throw ConfigError(c + ": the start of " + mc.names[static_cast<std::size_t>(k)] + " is " +
                        number_text(is_v ? mc.x0[k] : std::exp(mc.x0[k])) + ", outside the prior's box [" +
                        number_text(is_v ? lo.lower[k] : res.lower) + ", " +
                        number_text(is_v ? lo.upper[k] : res.upper) + "]");
  }
  return mc;
}

// When the mode puts a weight on the edge of the logits' box, the fit again without those
// components (its evaluations counted with these); otherwise nothing.
std::optional<BklMixtureResult> refit_without_unused(const Matrix& data, const Matrix& Z, const BklMixtureOptions& o,
                                                     const Vector& th, Index evaluations, const Context& context) {
  const Index R = static_cast<Index>(o.sigma.size());
  const Vector lr = log_softmax(th.head(R));
  const double top = lr.maxCoeff();
  std::vector<std::size_t> keep;
  std::string dropped;
  for (Index r = 0; r < R; ++r) {
    if (lr[r] - top > -o.logit_bound + 1e-2) {
      keep.push_back(static_cast<std::size_t>(r));
    } else {
      dropped += (dropped.empty() ? "" : ", ") + number_text(o.sigma[static_cast<std::size_t>(r)]);
    }
  }
  if (keep.size() == static_cast<std::size_t>(R)) return std::nullopt;
  BklMixtureOptions fewer = o;
  fewer.sigma.clear();
  fewer.weights.clear();
  for (std::size_t r : keep) {
    fewer.sigma.push_back(o.sigma[r]);
    fewer.weights.push_back(o.weights[r]);
  }
  BklMixtureResult r2 = fit_mixture(data, Z, fewer, context);
  r2.evaluations += evaluations;
  for (Index r = 0; r < R; ++r)
    if (std::find(keep.begin(), keep.end(), static_cast<std::size_t>(r)) == keep.end())
      r2.dropped_sigma.push_back(o.sigma[static_cast<std::size_t>(r)]);
  r2.provenance += "; dropped the component(s) of starting σ = " + dropped +
                   ": their weights went to the edge e^{-" + number_text(o.logit_bound) +
                   "} of the heaviest (the data do not use them)";
  return r2;
}

// A mode on the prior's box, or an interior stop without convergence, is an error, never a mode.
void require_interior_mode(const LbfgsResult& opt, const MixtureCoordinates& mc, const BklMixtureOptions& o) {
  const std::string& c = o.context;
  const Index R = static_cast<Index>(o.sigma.size());
  const Index F = mc.count();
  for (Index k = 0; k < F; ++k) {
    const Index p = mc.free[static_cast<std::size_t>(k)];
    const bool lower = opt.at_lower[static_cast<std::size_t>(k)],
               upper = opt.at_upper[static_cast<std::size_t>(k)];
    if (!lower && !upper) continue;
    const bool is_v = p < R;
    const double at = is_v ? opt.x[k] : std::exp(opt.x[k]);
    throw DataError(c + ": the pseudolikelihood's maximum has " + mc.names[static_cast<std::size_t>(k)] +
                    " on the " + (lower ? "lower" : "upper") + " bound " + number_text(at) +
                    " of the prior's box (τ² fixed at " + number_text(o.tau2) +
                    "): no interior optimum, so no kernel is chosen; " +
                    (is_v ? "the data do not want that component (fix the weights, or drop the component)"
                          : "widen `lower`/`upper`, start elsewhere, or fix the length scales"));
  }
  // Ceres's line search also stops at a bound (steps beyond it are infeasible), so the bounds are
  // judged first; an interior stop without convergence is an error, never a mode.
  if (F > 0 && !opt.converged)
    throw NumericalError(c + ": L-BFGS did not converge to the mixture's mode (" + opt.message +
                         "); start from other length scales or weights");
}

// The profile along the common scale: c·σ̂ for c geometric over the factors that keep every σ_r in
// the box; returns the evaluations it took.
Index mixture_profile(const BklMixturePseudolikelihood& L, const Vector& th, double b, const BklMixtureOptions& o,
                      BklMixtureResult& res, const Context& context) {
  const Index R = static_cast<Index>(o.sigma.size());
  Index evaluations = 0;
  const double smin = *std::min_element(res.sigma.begin(), res.sigma.end());
  const double smax = *std::max_element(res.sigma.begin(), res.sigma.end());
  const double clo = std::log(res.lower / smin), chi = std::log(res.upper / smax);
  for (Index k = 0; k < o.profile_points; ++k) {
    const double a = clo + (chi - clo) * static_cast<double>(k) / static_cast<double>(o.profile_points - 1);
    Vector tk = th;
    tk.tail(R).array() += a;
    const double v = L.value(tk, b, nullptr, context);
    ++evaluations;
    res.profile.lengthscale.push_back(std::exp(a));
    res.profile.log_likelihood.push_back(std::isfinite(v) ? v : kNegInf);
  }
  return evaluations;
}

std::string mixture_provenance(const BklMixtureResult& res, const BklMixtureOptions& o, bool learn_weights) {
  const Index R = static_cast<Index>(o.sigma.size());
  std::ostringstream how;
  how << "Bayesian kernel learning of a " << R << "-component Gaussian mixture kernel (Flaxman et al. 2016; "
      << "docs/math.md §9.6): posterior mode by L-BFGS (Ceres) of "
      << (o.learn_sigma && learn_weights
              ? "the length scales and weights"
              : (o.learn_sigma ? "the length scales (weights fixed)" : "the weights (length scales fixed)"))
      << "; σ = [";
  for (Index r = 0; r < R; ++r) how << (r ? ", " : "") << number_text(res.sigma[static_cast<std::size_t>(r)]);
  how << "], ρ = [";
  for (Index r = 0; r < R; ++r)
    how << (r ? ", " : "") << number_text(res.weights[static_cast<std::size_t>(r)]);
  how << "]; flat prior on log σ_r over [" << number_text(res.lower) << ", " << number_text(res.upper)
      << "] and on log(ρ_r/ρ_R) over [" << number_text(-o.logit_bound) << ", " << number_text(o.logit_bound)
      << "], τ² fixed at " << number_text(o.tau2)
      << ", prior covariance the self-convolution of k of amplitude 1; " << res.landmarks << " landmarks "
      << (o.landmark_points.size() > 0 ? "given" : "drawn from the rows and held out") << ", " << res.rows
      << " data rows; log L = " << number_text(res.log_likelihood)
      << " (at the start: " << number_text(res.start_log_likelihood) << ")";
  return how.str();
}

// The mode for fixed data and landmarks (bkl_mixture_kernel after its checks). A weight that ends on
// the edge of the logits' box (ρ_r ≤ e^{−logit_bound} ρ_max: the data do not use the component) drops
// that component and the rest are learned again: the weights live on the simplex, where an optimum
// on a face is an answer (fewer components), not a run-away like a length scale on its bound.
BklMixtureResult fit_mixture(const Matrix& data, const Matrix& Z, const BklMixtureOptions& o,
                             const Context& context) {
  const std::string& c = o.context;
  const Index R = static_cast<Index>(o.sigma.size());
  const bool learn_weights = o.learn_weights && R >= 2;
  const BklMixturePseudolikelihood L(data, Z, R, c);
  const double b = std::log(o.tau2);

  BklMixtureResult res;
  res.tau2 = o.tau2;
  res.rows = L.rows();
  res.landmarks = L.landmarks();
  res.logit_bound = o.logit_bound;
  mixture_box(data, o, res);
  const MixtureCoordinates mc = mixture_coordinates(o, learn_weights, res);
  const Index F = mc.count();

  Index evaluations = 0;
  Vector gfull(2 * R + 1);
  res.start_log_likelihood = L.value(mc.theta0, b, nullptr, context);
  ++evaluations;
  if (!std::isfinite(res.start_log_likelihood))
    throw DataError(
        c +
        ": the pseudolikelihood is not finite at the start (the smallest length scales are too small "
        "for the landmarks: some row has fewer than D landmarks with non-negligible weight); start "
        "from larger sigma");
  LbfgsResult opt;
  if (F > 0) {
    opt = minimize_lbfgs(
        [&](const Vector& x, Vector* g) {
          ++evaluations;
          const double v = L.value(mc.full(x), b, g ? &gfull : nullptr, context);
          if (g)
            for (Index k = 0; k < F; ++k) (*g)[k] = -gfull[mc.free[static_cast<std::size_t>(k)]];
          return -v;
        },
        mc.x0, mc.lbfgs);
  } else {  // one component left with its length scale fixed: nothing to optimise
    opt.x = mc.x0;
    opt.value = -res.start_log_likelihood;
  }
  if (learn_weights)
    if (auto fewer = refit_without_unused(data, Z, o, mc.full(opt.x), evaluations, context)) return *fewer;
  require_interior_mode(opt, mc, o);
  const Vector th = mc.full(opt.x);
  const Vector rho = log_softmax(th.head(R)).array().exp();
  for (Index r = 0; r < R; ++r) {
    // Fixed scales are reported as given, not through exp(log σ).
    res.sigma.push_back(o.learn_sigma ? std::exp(th[R + r]) : o.sigma[static_cast<std::size_t>(r)]);
    res.weights.push_back(rho[r]);
  }
  res.log_likelihood = -opt.value;
  res.iterations = opt.iterations;
  evaluations += mixture_profile(L, th, b, o, res, context);
  res.evaluations = evaluations;
  res.provenance = mixture_provenance(res, o, learn_weights);
  return res;
}

}  // namespace

BklMixtureResult bkl_mixture_kernel(const Matrix& X, const BklMixtureOptions& o, const Context& context) {
  const std::string& c = o.context;
  if (X.rows() < 1 || X.cols() < 1) throw DataError(c + ": no data rows");
  bkl_parts::require_finite(X, c + ": data");
  const Index R = static_cast<Index>(o.sigma.size());
  if (R < 1)
    throw ConfigError(c +
                      ": sigma: give the R length scales of the mixture (the start when they are learned)");
  for (Index r = 0; r < R; ++r)
    if (!(o.sigma[static_cast<std::size_t>(r)] > 0.0) || !std::isfinite(o.sigma[static_cast<std::size_t>(r)]))
      throw ConfigError(c + ": sigma[" + std::to_string(r) + "] = " +
                        number_text(o.sigma[static_cast<std::size_t>(r)]) + " (expected positive numbers)");
  std::vector<double> weights = o.weights.empty() ? std::vector<double>(o.sigma.size(), 1.0) : o.weights;
  if (static_cast<Index>(weights.size()) != R)
    throw ConfigError(c + ": weights has " + std::to_string(weights.size()) + " values for " +
                      std::to_string(R) + " length scales (one per component)");
  for (std::size_t r = 0; r < weights.size(); ++r)
    if (!(weights[r] > 0.0) || !std::isfinite(weights[r]))
      throw ConfigError(c + ": weights[" + std::to_string(r) + "] = " + number_text(weights[r]) +
                        " (expected positive numbers)");
  if (!(o.tau2 > 0.0) || !std::isfinite(o.tau2))
    throw ConfigError(c + ": tau2 must be a positive number (the fixed noise variance τ²), got " +
                      number_text(o.tau2));
  if (o.profile_points < 5)
    throw ConfigError(c + ": profile_points must be >= 5, got " + std::to_string(o.profile_points));
  if (!(o.logit_bound > 0.0) || !std::isfinite(o.logit_bound))
    throw ConfigError(c + ": logit_bound must be a positive number, got " + number_text(o.logit_bound));
  if (o.lower < 0.0 || o.upper < 0.0 || !std::isfinite(o.lower) || !std::isfinite(o.upper) ||
      (o.lower > 0.0 && o.upper > 0.0 && !(o.lower < o.upper)))
    throw ConfigError(
        c +
        ": lower and upper (the box of every σ_r) must be positive with lower < upper, or 0 for "
        "automatic; got lower = " +
        number_text(o.lower) + ", upper = " + number_text(o.upper));
  const bool learn_weights = o.learn_weights && R >= 2;
  if (!learn_weights && !o.learn_sigma)
    throw ConfigError(c + ": nothing to learn (learn_sigma is off, and the weights are fixed or R = 1)");

  Matrix data, Z;
  bkl_parts::split_landmarks(X, o.landmarks, o.landmark_points, c, context, data, Z);
  BklMixtureOptions given = o;
  given.weights = weights;
  return fit_mixture(data, Z, given, context);
}

}  // namespace kef
