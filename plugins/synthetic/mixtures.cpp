// Gaussian mixtures (mog, grid, gaussian, mixture_1d), rings (ring, mor, rings) and two moons.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <utility>

#include "densities.hpp"
#include "kef/number_text.hpp"

namespace kef::synthetic {

namespace {

constexpr double kTwoPi = 2.0 * std::numbers::pi;

// log f and its first two derivatives for a 1-D mixture f(t) = Σ_j exp(c_j - ½((t - μ_j)/s)²),
// evaluated stably through the responsibilities π_j: (log f)' = Σ π_j d_j with d_j = -(t - μ_j)/s²,
// and (log f)'' = Σ π_j (d_j² - 1/s²) - ((log f)')².
struct LogMixture1d {
  double value, d1, d2;
};

LogMixture1d log_mixture_1d(double t, const std::vector<double>& centres,
                            const std::vector<double>& log_coefs, double s) {
  double top = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < centres.size(); ++j) {
    const double z = (t - centres[j]) / s;
    top = std::max(top, log_coefs[j] - 0.5 * z * z);
  }
  double total = 0.0, m1 = 0.0, m2 = 0.0;
  const double precision = 1.0 / (s * s);
  for (size_t j = 0; j < centres.size(); ++j) {
    const double z = (t - centres[j]) / s;
    const double w = std::exp(log_coefs[j] - 0.5 * z * z - top);
    const double d = -(t - centres[j]) * precision;
    total += w;
    m1 += w * d;
    m2 += w * (d * d - precision);
  }
  m1 /= total;
  m2 /= total;
  return {top + std::log(total), m1, m2 - m1 * m1};
}

// Gradient and Hessian of a function of ρ = ‖y‖ on the plane, given ℓ'(ρ) and ℓ''(ρ):
// ∇ = ℓ' u, H = ℓ'' u uᵀ + (ℓ'/ρ)(I - u uᵀ) with u = y/ρ. The origin (a measure-zero point the
// samplers never produce) gets zeros, as the direction u is undefined there.
void radial_derivatives(double y0, double y1, double l1, double l2, Vector& grad, Matrix* hessian) {
  const double rho = std::hypot(y0, y1);
  grad.setZero(2);
  if (hessian) hessian->setZero(2, 2);
  if (rho == 0.0) return;
  const double u[2] = {y0 / rho, y1 / rho};
  const double tangential = l1 / rho;
  for (int a = 0; a < 2; ++a) {
    grad[a] = l1 * u[a];
    if (!hessian) continue;
    for (int b = 0; b < 2; ++b)
      (*hessian)(a, b) = (l2 - tangential) * u[a] * u[b] + (a == b ? tangential : 0.0);
  }
}

Index pick_component(const std::vector<double>& cumulative, RandomStream& rng) {
  const double u = rng.uniform();
  const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
  return std::min<Index>(Index(it - cumulative.begin()), Index(cumulative.size()) - 1);
}

std::vector<double> cumulative_sum(const std::vector<double>& weights) {
  std::vector<double> c(weights.size());
  double total = 0.0;
  for (size_t k = 0; k < weights.size(); ++k) c[k] = total += weights[k];
  return c;
}

// Σ_k w_k N(x; μ_k, s_k² I).
class GaussianMixture final : public Density {
 public:
  GaussianMixture(std::vector<double> weights, Matrix means, std::vector<double> stds,
                  std::string description)
      : means_(std::move(means)), stds_(std::move(stds)), description_(std::move(description)) {
    double total = 0.0;
    for (double w : weights) total += w;
    for (double& w : weights) w /= total;
    cumulative_ = cumulative_sum(weights);
    const double d = double(means_.cols());
    for (size_t k = 0; k < weights.size(); ++k)
      log_coefs_.push_back(std::log(weights[k]) - d * std::log(stds_[k]) - 0.5 * d * kLogTwoPi);
  }

  Index dim() const override { return means_.cols(); }

  double log_density(const Vector& x) const override {
    Vector a = exponents(x);
    const double top = a.maxCoeff();
    return top + std::log((a.array() - top).exp().sum());
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    const Index d = dim();
    Vector a = exponents(x);
    Vector resp = (a.array() - a.maxCoeff()).exp();
    resp /= resp.sum();
    grad.setZero(d);
    if (hessian) hessian->setZero(d, d);
    for (Index k = 0; k < means_.rows(); ++k) {
      const double precision = 1.0 / (stds_[k] * stds_[k]);
      const Vector g = -precision * (x - means_.row(k).transpose());
      grad += resp[k] * g;
      if (hessian) {
        *hessian += resp[k] * (g * g.transpose());
        hessian->diagonal().array() -= resp[k] * precision;
      }
    }
    if (hessian) *hessian -= grad * grad.transpose();
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, dim());
    for (Index i = 0; i < n; ++i) {
      const Index k = pick_component(cumulative_, rng);
      for (Index j = 0; j < dim(); ++j) out(i, j) = means_(k, j) + stds_[k] * rng.normal();
    }
    return out;
  }

  std::string describe() const override { return description_; }

 private:
  Vector exponents(const Vector& x) const {
    Vector a(means_.rows());
    for (Index k = 0; k < means_.rows(); ++k)
      a[k] = log_coefs_[k] - 0.5 * (x - means_.row(k).transpose()).squaredNorm() / (stds_[k] * stds_[k]);
    return a;
  }

  Matrix means_;
  std::vector<double> stds_, log_coefs_, cumulative_;
  std::string description_;
};

// Planar rings: radius r ~ Σ_k w_k N(r_k, s²) and a uniform angle, x = (r sin θ, r cos θ). A
// negative draw of r lands at distance |r|, so the exact density of ρ = ‖x‖ is the folded mixture
// f(ρ) = Σ_k w_k (N(ρ; r_k, s²) + N(ρ; -r_k, s²)) on ρ > 0, and p(x) = f(ρ) / (2πρ) (polar
// Jacobian). The folded terms are negligible for the paper's settings but make the density exact
// for any.
class Rings final : public Density {
 public:
  Rings(std::vector<double> radii, std::vector<double> weights, double noise, std::string description)
      : radii_(std::move(radii)), noise_(noise), description_(std::move(description)) {
    double total = 0.0;
    for (double w : weights) total += w;
    for (double& w : weights) w /= total;
    cumulative_ = cumulative_sum(weights);
    for (size_t k = 0; k < radii_.size(); ++k) {
      const double c = std::log(weights[k]) - std::log(noise_) - 0.5 * kLogTwoPi;
      centres_.insert(centres_.end(), {radii_[k], -radii_[k]});
      log_coefs_.insert(log_coefs_.end(), {c, c});
    }
  }

  Index dim() const override { return 2; }

  double log_density(const Vector& x) const override {
    const double rho = std::hypot(x[0], x[1]);
    return log_mixture_1d(rho, centres_, log_coefs_, noise_).value - std::log(kTwoPi * rho);
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    const double rho = std::hypot(x[0], x[1]);
    const LogMixture1d f = log_mixture_1d(rho, centres_, log_coefs_, noise_);
    // ℓ(ρ) = log f(ρ) - log(2π) - log ρ: the -1/ρ is the Jacobian term the reference code drops.
    radial_derivatives(x[0], x[1], f.d1 - 1.0 / rho, f.d2 + 1.0 / (rho * rho), grad, hessian);
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, 2);
    for (Index i = 0; i < n; ++i) {
      const Index k = pick_component(cumulative_, rng);
      const double r = radii_[k] + noise_ * rng.normal();
      const double theta = kTwoPi * rng.uniform();
      out(i, 0) = r * std::sin(theta);
      out(i, 1) = r * std::cos(theta);
    }
    return out;
  }

  std::string describe() const override { return description_; }

 private:
  std::vector<double> radii_;
  double noise_;
  std::vector<double> centres_, log_coefs_, cumulative_;
  std::string description_;
};

// Rezende & Mohamed (2015): p(z) = exp(-U(z)) / Z with
//   U(z) = ½((‖z‖ - 2)/0.4)² - log(exp(-½((z0 - 2)/0.6)²) + exp(-½((z0 + 2)/0.6)²)).
constexpr double kMoonRadius = 2.0, kMoonWidth = 0.4, kBumpCentre = 2.0, kBumpWidth = 0.6;

// log B(z0), B = the sum of the two bumps (unit height, no normalising constant).
LogMixture1d log_bumps(double z0) {
  static const std::vector<double> centres{kBumpCentre, -kBumpCentre}, coefs{0.0, 0.0};
  return log_mixture_1d(z0, centres, coefs, kBumpWidth);
}

double log_radial(double rho) {
  const double t = (rho - kMoonRadius) / kMoonWidth;
  return -0.5 * t * t;
}

// log Z by quadrature in polar coordinates, Z = ∫_0^R ρ exp(-½((ρ-2)/0.4)²) ∫_0^{2π} B(ρ cos θ) dθ
// dρ. Angle: the trapezoid rule on a periodic entire integrand, with spacing 2π/1024 ≈ 0.006
// against an angular feature width ≥ 0.6/R ≈ 0.08; its error is below exp(-2π²(0.08/0.006)²)
// (negligible). Radius: 20-point Gauss-Legendre on panels of width 0.2 (half the radial width 0.4),
// relative error far below 1e-14; the integrand is a polynomial times an entire function, smooth
// down to ρ = 0. The cut at R = 2 + 14·0.4 drops less than exp(-98) of the mass. So log Z is exact
// to rounding (~1e-15).
double two_moons_log_normalizer() {
  static const double log_z = [] {
    std::vector<double> nodes, weights;
    gauss_legendre(20, nodes, weights);
    const double r_max = kMoonRadius + 14.0 * kMoonWidth, panel = 0.2;
    const int panels = int(std::lround(r_max / panel));
    const int angles = 1024;
    std::vector<double> cosines(angles);
    for (int m = 0; m < angles; ++m) cosines[m] = std::cos(kTwoPi * m / angles);
    double z = 0.0;
    for (int p = 0; p < panels; ++p) {
      for (size_t q = 0; q < nodes.size(); ++q) {
        const double rho = panel * (p + 0.5 * (nodes[q] + 1.0));
        double ring = 0.0;
        for (double c : cosines) ring += std::exp(log_bumps(rho * c).value);
        ring *= kTwoPi / angles;
        z += 0.5 * panel * weights[q] * rho * std::exp(log_radial(rho)) * ring;
      }
    }
    return std::log(z);
  }();
  return log_z;
}

class TwoMoons final : public Density {
 public:
  TwoMoons() : log_z_(two_moons_log_normalizer()) {}

  Index dim() const override { return 2; }

  double log_density(const Vector& x) const override {
    return log_radial(std::hypot(x[0], x[1])) + log_bumps(x[0]).value - log_z_;
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    const double rho = std::hypot(x[0], x[1]);
    const double w2 = kMoonWidth * kMoonWidth;
    radial_derivatives(x[0], x[1], -(rho - kMoonRadius) / w2, -1.0 / w2, grad, hessian);
    const LogMixture1d b = log_bumps(x[0]);
    grad[0] += b.d1;
    if (hessian) (*hessian)(0, 0) += b.d2;
  }

  // Exact rejection sampling in two stages.
  // (1) Proposal g(z) ∝ exp(-½((‖z‖-μ)/s)²), μ = 2, s = 0.4: a uniform angle and a radius with
  //     density h(ρ) ∝ ρ exp(-½((ρ-μ)/s)²) on ρ > 0. With ρ = μ + s t, h ∝ (μ + s t) φ(t) on
  //     t > -μ/s, and since s t ≤ s max(t, 0), h is dominated by E(t) = μ φ(t) + s max(t, 0) φ(t),
  //     a positive mixture of N(0, 1) (mass μ) and the Rayleigh law t exp(-t²/2) on t > 0 (mass
  //     s/√(2π)). Accepting t ~ E with probability (μ + s t)/(μ + s max(t, 0)) (zero when
  //     t ≤ -μ/s) gives exactly h.
  // (2) The target over the proposal is f/g ∝ B(z0) = exp(-½((z0-2)/0.6)²) + exp(-½((z0+2)/0.6)²).
  //     If z0 ≥ 0 then |z0 + 2| ≥ 2, so the second bump is ≤ exp(-½(2/0.6)²) and the first ≤ 1
  //     (symmetrically for z0 < 0): B ≤ B_max = 1 + exp(-½(2/0.6)²), and accepting with
  //     probability B(z0)/B_max gives exactly p.
  Matrix sample(Index n, RandomStream& rng) const override {
    const double mu = kMoonRadius, s = kMoonWidth;
    const double normal_share = mu / (mu + s / std::sqrt(kTwoPi));
    const double z = kBumpCentre / kBumpWidth;
    const double log_b_max = std::log1p(std::exp(-0.5 * z * z));
    Matrix out(n, 2);
    for (Index i = 0; i < n;) {
      const double t =
          rng.uniform() < normal_share ? rng.normal() : std::sqrt(-2.0 * std::log1p(-rng.uniform()));
      const double accept_radius = (mu + s * t) / (mu + s * std::max(t, 0.0));
      if (accept_radius <= 0.0 || rng.uniform() >= accept_radius) continue;
      const double rho = mu + s * t;
      const double theta = kTwoPi * rng.uniform();
      const double z0 = rho * std::cos(theta), z1 = rho * std::sin(theta);
      if (rng.uniform() >= std::exp(log_bumps(z0).value - log_b_max)) continue;
      out(i, 0) = z0;
      out(i, 1) = z1;
      ++i;
    }
    return out;
  }

  std::string describe() const override {
    return "two moons (Rezende & Mohamed 2015): exp(-U(z)) with U(z) = ((|z| - 2)/0.4)^2 / 2 - "
           "log(exp(-((z0 - 2)/0.6)^2 / 2) + exp(-((z0 + 2)/0.6)^2 / 2)), log Z = " +
           number_text(log_z_) + " (polar quadrature)";
  }

 private:
  double log_z_;
};

}  // namespace

DensityPtr make_gaussian_mixture(std::vector<double> weights, Matrix means, std::vector<double> stds,
                                 std::string description) {
  return std::make_shared<GaussianMixture>(std::move(weights), std::move(means), std::move(stds),
                                           std::move(description));
}

DensityPtr make_rings(Index dim, std::vector<double> radii, std::vector<double> weights, double noise,
                      std::string description) {
  auto core = std::make_shared<Rings>(std::move(radii), std::move(weights), noise, std::move(description));
  return with_gaussian_extras(std::move(core), dim, noise);
}

DensityPtr make_two_moons(Index dim) { return with_gaussian_extras(std::make_shared<TwoMoons>(), dim, 1.0); }

}  // namespace kef::synthetic
