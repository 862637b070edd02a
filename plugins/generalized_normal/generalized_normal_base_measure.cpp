#include "generalized_normal_base_measure.hpp"

#include <cmath>
#include <numbers>
#include <sstream>
#include <vector>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/vector_exp.hpp"

namespace kef::generalized_normal {

namespace {

constexpr const char* kWhere = "base_measure/generalized_normal";

// Everything one coordinate needs, from (μ, log σ, β). Derivatives of the pieces with respect to
// log σ (s) and β (p) are written out in backward(); docs/math.md §3 has the forward formulas.
struct Coord {
  double mu, s, p;
  double c;          // 1 / (2σ²)
  double log_alpha;  // log α = (log 2 + 2s) / β
  double alpha, r0;  // scale, and the radius of the smoothed cusp
  double log_norm;   // log(β / (2 α Γ(1/β)))
  double ea;         // ε^{β−2} / α², the curvature scale inside the cusp
  double k;          // 1 + β log ε + 2 log α, so that ∂(β·ea)/∂β = ea·k
  double eps_p;      // ε^β

  Coord(double mu_, double s_, double p_) : mu(mu_), s(s_), p(p_) {
    const double ln_eps = std::log(kCuspRadius);
    c = 0.5 * std::exp(-2.0 * s);
    log_alpha = (std::numbers::ln2 + 2.0 * s) / p;
    alpha = std::exp(log_alpha);
    r0 = kCuspRadius * alpha;
    log_norm = std::log(p) - std::numbers::ln2 - log_alpha - std::lgamma(1.0 / p);
    ea = std::exp((p - 2.0) * ln_eps - 2.0 * log_alpha);
    k = 1.0 + p * ln_eps + 2.0 * log_alpha;
    eps_p = std::exp(p * ln_eps);
  }
};

double sign_of(double u) { return u > 0.0 ? 1.0 : (u < 0.0 ? -1.0 : 0.0); }

}  // namespace

double digamma(double x) {
  if (!(x > 0.0) || !std::isfinite(x)) {
    std::ostringstream os;
    os << "digamma: argument out of range (expected a finite x > 0, got " << x << ")";
    throw NumericalError(os.str());
  }
  // ψ(x) = ψ(x + 1) − 1/x lifts x to ≥ 10, where the series truncated after x^{-14} is accurate to
  // about B_16 / (16 x^16) < 1e-16.
  double acc = 0.0;
  while (x < 10.0) {
    acc -= 1.0 / x;
    x += 1.0;
  }
  const double inv2 = 1.0 / (x * x);
  const double tail =
      inv2 * (1.0 / 12 -
              inv2 * (1.0 / 120 -
                      inv2 * (1.0 / 252 -
                              inv2 * (1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12))))));
  return acc + std::log(x) - 0.5 / x - tail;
}

const OptionsSpec<GeneralizedNormalOptions>& options() {
  using O = GeneralizedNormalOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.numbers("mean", &O::mean, "μ: one value for every coordinate, or one per coordinate",
              std::vector<double>{0.0});
    s.numbers("std", &O::std, "σ > 0 (β = 2 gives variance σ²): one value, or one per coordinate",
              std::vector<double>{1.0})
        .positive();
    KeySpec& beta = s.numbers(
        "beta", &O::beta, "shape β > 1: one value for every coordinate, or one per coordinate (2 = Gaussian)",
        std::vector<double>{2.0});
    beta.min = 1.0;
    beta.min_exclusive = true;
    s.boolean("learn", &O::learn, "whether estimators that learn q0 may change μ, σ and β", true);
    return s;
  }();
  return spec;
}

KeyList keys() { return options().keys(); }

GeneralizedNormalBaseMeasure::GeneralizedNormalBaseMeasure(const Config& cfg, const BuildContext& ctx)
    : sites_(cfg) {
  GeneralizedNormalOptions opt = options().read(cfg);
  mean_ = std::move(opt.mean);
  std_ = std::move(opt.std);
  beta_ = std::move(opt.beta);
  learn_ = opt.learn;
  const std::pair<const char*, const std::vector<double>*> lists[] = {
      {"mean", &mean_}, {"std", &std_}, {"beta", &beta_}};
  for (const auto& [key, values] : lists) {
    const auto n = static_cast<Index>(values->size());
    if (n == 0) sites_.fail(key, "is an empty list (give one value, or one per dimension)");
    if (n == 1) continue;
    if (dim_ > 0 && n != dim_)
      sites_.fail(key, "has " + std::to_string(n) + " values but `" + dim_key_ + "` has " +
                           std::to_string(dim_) + " (give one value, or one per dimension)");
    if (dim_ < 0) {
      dim_ = n;
      dim_key_ = key;
    }
  }
  if (dim_ > 0) {
    const Index known = dim_;
    dim_ = -1;
    fix_dimension(known);
  }
  if (ctx.dim > 0) check_dimension(ctx.dim);
}

void GeneralizedNormalBaseMeasure::fix_dimension(Index dim) const {
  auto at = [](const std::vector<double>& v, Index d) {
    return v.size() == 1 ? v[0] : v[static_cast<std::size_t>(d)];
  };
  dim_ = dim;
  theta_.resize(3 * dim);
  for (Index d = 0; d < dim; ++d) {
    theta_[d] = at(mean_, d);
    theta_[dim + d] = std::log(at(std_, d));
    theta_[2 * dim + d] = std::log(at(beta_, d) - 1.0);
  }
}

void GeneralizedNormalBaseMeasure::check_dimension(Index dim) const {
  if (dim < 1) throw DataError(std::string(kWhere) + ": data dimension must be at least 1");
  if (dim_ < 0) {
    fix_dimension(dim);
    return;
  }
  if (dim == dim_) return;
  if (!dim_key_.empty()) {
    const auto n = (dim_key_ == "mean" ? mean_ : dim_key_ == "std" ? std_ : beta_).size();
    sites_.fail(dim_key_, "has " + std::to_string(n) + " values but the data has dimension " +
                              std::to_string(dim) + " (give one value, or one per dimension)");
  }
  sites_.fail("", "the base measure was fixed to dimension " + std::to_string(dim_) +
                      " (by its model or its parameters) but the data has dimension " + std::to_string(dim));
}

void GeneralizedNormalBaseMeasure::set_parameters(const Vector& theta) {
  if (dim_ > 0 && theta.size() != 3 * dim_)
    throw Error(std::string(kWhere) + ": set_parameters expected " + std::to_string(3 * dim_) +
                " values (μ, log σ, b for " + std::to_string(dim_) + " coordinates), got " +
                std::to_string(theta.size()));
  if (dim_ < 0 && (theta.size() == 0 || theta.size() % 3 != 0))
    throw Error(std::string(kWhere) + ": set_parameters expected 3·D values (μ, log σ, b per coordinate), got " +
                std::to_string(theta.size()));
  const Index D = theta.size() / 3;
  const auto names = [&] {
    // parameter_names() needs dim_; build the names for D without touching the state yet.
    std::vector<std::string> n;
    for (const char* g : {"mean_", "log_std_", "log_beta_minus_one_"})
      for (Index d = 0; d < D; ++d) n.push_back(g + std::to_string(d));
    return n;
  }();
  for (Index i = 0; i < theta.size(); ++i) {
    // σ = e^s and β = 1 + e^b must stay finite and σ positive, or every density value is garbage.
    const bool ok = std::isfinite(theta[i]) && (i < D || std::isfinite(std::exp(theta[i]))) &&
                    (i < D || i >= 2 * D || std::exp(theta[i]) > 0.0);
    if (!ok) {
      std::ostringstream os;
      os << kWhere << ": parameter " << i << " (" << names[static_cast<std::size_t>(i)]
         << ") is out of range (got " << theta[i] << ")";
      throw NumericalError(os.str());
    }
  }
  if (dim_ < 0) {
    dim_ = D;
    dim_key_.clear();
  }
  theta_ = theta;
}

std::vector<std::string> GeneralizedNormalBaseMeasure::parameter_names() const {
  std::vector<std::string> names;
  for (const char* g : {"mean_", "log_std_", "log_beta_minus_one_"})
    for (Index d = 0; d < dim_; ++d) names.push_back(g + std::to_string(d));
  return names;
}

GeneralizedNormalBaseMeasure::Coordinates GeneralizedNormalBaseMeasure::coordinates(Index dim) const {
  Coordinates c;
  if (dim_ > 0) {
    if (dim != dim_) check_dimension(dim);  // throws
    c.mu = theta_.head(dim);
    c.log_sigma = theta_.segment(dim, dim);
    c.beta = (theta_.tail(dim).array().exp() + 1.0).matrix();
  } else {
    // Only scalar keys leave D unknown: broadcast them without fixing D (this function is const
    // and may run on several threads).
    c.mu = Vector::Constant(dim, mean_[0]);
    c.log_sigma = Vector::Constant(dim, std::log(std_[0]));
    c.beta = Vector::Constant(dim, beta_[0]);
  }
  return c;
}

// Column by column, |u|^β = e^{β log|u|} with the exponentials vectorised: importance sampling
// evaluates q0 at every proposal, and std::pow per coordinate was the largest single cost.
Vector GeneralizedNormalBaseMeasure::log_density(const Matrix& X) const {
  const Coordinates cs = coordinates(X.cols());
  Vector out = Vector::Zero(X.rows());
  Eigen::ArrayXd u(X.rows()), power(X.rows());
  for (Index d = 0; d < X.cols(); ++d) {
    const Coord q(cs.mu[d], cs.log_sigma[d], cs.beta[d]);
    u = X.col(d).array() - q.mu;
    // std::log per value (vectorised logs round differently in a packet and in the tail, which would
    // make a row's density depend on its position); −inf at u = 0 goes to the cusp branch below.
    for (Index n = 0; n < X.rows(); ++n) power[n] = q.p * std::log(std::abs(u[n]));
    exp_array(power.data(), power.data(), power.size());
    for (Index n = 0; n < X.rows(); ++n) {
      const double r = std::abs(u[n]);
      const double v = r > 0.0 && r >= q.r0 ? -q.c * power[n]
                                            : -(1.0 - 0.5 * q.p) * q.eps_p - 0.5 * q.p * q.ea * u[n] * u[n];
      out[n] += v + q.log_norm;
    }
  }
  check_finite(out, std::string(kWhere) + ": log density");
  return out;
}

void GeneralizedNormalBaseMeasure::derivatives(const Matrix& X, Matrix& d1, Matrix& d2) const {
  const Coordinates cs = coordinates(X.cols());
  d1.resize(X.rows(), X.cols());
  d2.resize(X.rows(), X.cols());
  for (Index d = 0; d < X.cols(); ++d) {
    const Coord q(cs.mu[d], cs.log_sigma[d], cs.beta[d]);
    for (Index n = 0; n < X.rows(); ++n) {
      const double u = X(n, d) - q.mu, r = std::abs(u);
      if (r > 0.0 && r >= q.r0) {
        // |u|^{β−1} and |u|^{β−2} with the sign kept apart: pow of a negative base is NaN for
        // non-integer β (the bug in DKEF's reference code).
        d1(n, d) = -q.c * q.p * sign_of(u) * std::pow(r, q.p - 1.0);
        d2(n, d) = -q.c * q.p * (q.p - 1.0) * std::pow(r, q.p - 2.0);
      } else {
        d1(n, d) = -q.p * q.ea * u;
        d2(n, d) = -q.p * q.ea;
      }
    }
  }
  check_finite(d1, std::string(kWhere) + ": first derivatives");
  check_finite(d2, std::string(kWhere) + ": second derivatives");
}

// |x − μ| = α G^{1/β} with G ~ Gamma(1/β). For shape a = 1/β < 1, RandomStream::gamma draws
// G = G₁ W^{1/a} with G₁ ~ Gamma(a + 1) and W uniform on (0, 1]; then G^{1/β} = G₁^{1/β} W (a·β = 1), so
// the same stream (G₁, W, then the sign) gives the same draws without the two powers per coordinate,
// and G₁^{1/β} = e^{log G₁ / β} is computed for the whole column at once.
Matrix GeneralizedNormalBaseMeasure::sample(Index n, Index dim, RandomStream& rng) const {
  const Coordinates cs = coordinates(dim);
  std::vector<Coord> qs;
  for (Index d = 0; d < dim; ++d) qs.emplace_back(cs.mu[d], cs.log_sigma[d], cs.beta[d]);
  Matrix G(n, dim), scale(n, dim);  // G₁, then ± W
  // Row by row, so the first rows of a larger sample are the same as a smaller sample's.
  for (Index i = 0; i < n; ++i) {
    for (Index d = 0; d < dim; ++d) {
      const Coord& q = qs[static_cast<std::size_t>(d)];
      G(i, d) = rng.gamma(1.0 / q.p + 1.0);
      const double w = 1.0 - rng.uniform();
      scale(i, d) = rng.uniform() < 0.5 ? -w : w;
    }
  }
  Matrix S(n, dim);
  for (Index d = 0; d < dim; ++d) {
    const Coord& q = qs[static_cast<std::size_t>(d)];
    for (Index i = 0; i < n; ++i) S(i, d) = std::log(G(i, d)) / q.p;  // scalar: see log_density
    exp_array(S.col(d).data(), S.col(d).data(), n);
    S.col(d) = (q.mu + q.alpha * scale.col(d).array() * S.col(d).array()).matrix();
  }
  return S;
}

void GeneralizedNormalBaseMeasure::backward(const Matrix& X, const Vector& adj_log, const Matrix& adj_d1,
                                            const Matrix& adj_d2, Vector& grad_params) const {
  const Index N = X.rows(), D = X.cols();
  const bool has_log = adj_log.size() != 0, has_d1 = adj_d1.size() != 0, has_d2 = adj_d2.size() != 0;
  if ((has_log && adj_log.size() != N) || (has_d1 && (adj_d1.rows() != N || adj_d1.cols() != D)) ||
      (has_d2 && (adj_d2.rows() != N || adj_d2.cols() != D)))
    throw Error(std::string(kWhere) + ": backward adjoints do not match the " + std::to_string(N) + " x " +
                std::to_string(D) + " input");
  const Coordinates cs = coordinates(D);
  grad_params = Vector::Zero(3 * D);
  for (Index d = 0; d < D; ++d) {
    const Coord q(cs.mu[d], cs.log_sigma[d], cs.beta[d]);
    const double p = q.p, c = q.c, ln_eps = std::log(kCuspRadius);
    // ∂ log normaliser / ∂ log σ and / ∂ β; ψ enters through Γ(1/β).
    const double ls = -2.0 / p;
    const double lp = 1.0 / p + q.log_alpha / p + digamma(1.0 / p) / (p * p);
    double g_mu = 0.0, g_s = 0.0, g_p = 0.0;
    for (Index n = 0; n < N; ++n) {
      const double al = has_log ? adj_log[n] : 0.0;
      const double a1 = has_d1 ? adj_d1(n, d) : 0.0;
      const double a2 = has_d2 ? adj_d2(n, d) : 0.0;
      const double u = X(n, d) - q.mu, r = std::abs(u);
      if (r > 0.0 && r >= q.r0) {
        const double sg = sign_of(u), lr = std::log(r);
        const double rp2 = std::pow(r, p - 2.0), rp1 = rp2 * r, rp = rp1 * r, rp3 = rp2 / r;
        g_mu += al * c * p * sg * rp1 + a1 * c * p * (p - 1.0) * rp2 +
                a2 * c * p * (p - 1.0) * (p - 2.0) * sg * rp3;
        g_s += al * (2.0 * c * rp + ls) + a1 * 2.0 * c * p * sg * rp1 + a2 * 2.0 * c * p * (p - 1.0) * rp2;
        g_p += al * (-c * rp * lr + lp) - a1 * c * sg * rp1 * (1.0 + p * lr) -
               a2 * c * rp2 * ((2.0 * p - 1.0) + p * (p - 1.0) * lr);
      } else {
        // Inside the cusp: ℓ = −(1 − β/2) ε^β − (β/2) ea u², d1 = −β ea u, d2 = −β ea, with
        // ∂ log ea / ∂s = −4/β and ∂(β ea)/∂β = ea·k.
        const double ea = q.ea, k = q.k;
        g_mu += al * p * ea * u + a1 * p * ea;
        g_s += al * (2.0 * ea * u * u + ls) + a1 * 4.0 * ea * u + a2 * 4.0 * ea;
        g_p += al * (0.5 * q.eps_p - (1.0 - 0.5 * p) * q.eps_p * ln_eps - 0.5 * ea * u * u * k + lp) -
               a1 * ea * u * k - a2 * ea * k;
      }
    }
    grad_params[d] = g_mu;
    grad_params[D + d] = g_s;
    grad_params[2 * D + d] = g_p * (p - 1.0);  // β = 1 + e^b
  }
  check_finite(grad_params, std::string(kWhere) + ": parameter gradient");
}

}  // namespace kef::generalized_normal
