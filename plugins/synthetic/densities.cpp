// Funnel, banana, square and cosine, the extra-coordinates wrapper and small numerical helpers.
// Mixtures, rings and two moons live in mixtures.cpp.
#include "densities.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <utility>

#include "kef/constants.hpp"
#include "kef/number_text.hpp"

namespace kef::synthetic {

namespace {

// x0 ~ N(0, s²); x_{1:} ~ N(0, v I), v = min(exp(-x0), v_max). The clip makes log p non-smooth at
// x0 = -log v_max; we put that point on the clipped side (v = v_max, derivative of v is zero) and
// use the same predicate in every function so that log p, its gradient and its Hessian agree.
class Funnel final : public Density {
 public:
  Funnel(Index dim, double std, double max_variance)
      : dim_(dim), std_(std), max_variance_(max_variance), kink_(-std::log(max_variance)) {}

  Index dim() const override { return dim_; }

  double log_density(const Vector& x) const override {
    const double x0 = x[0];
    const double squares = x.tail(dim_ - 1).squaredNorm();
    const bool clipped = x0 <= kink_;
    const double log_v = clipped ? std::log(max_variance_) : -x0;
    // 1/v computed directly: exp(-x0) underflows long before exp(x0) overflows matters.
    const double inv_v = clipped ? 1.0 / max_variance_ : std::exp(x0);
    return log_normal(x0, 0.0, std_) - 0.5 * double(dim_ - 1) * (kLogTwoPi + log_v) - 0.5 * squares * inv_v;
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    const double x0 = x[0];
    const bool clipped = x0 <= kink_;
    const double inv_v = clipped ? 1.0 / max_variance_ : std::exp(x0);
    const double squares = x.tail(dim_ - 1).squaredNorm();
    grad.resize(dim_);
    grad[0] = -x0 / (std_ * std_);
    if (!clipped) grad[0] += 0.5 * double(dim_ - 1) - 0.5 * squares * inv_v;
    grad.tail(dim_ - 1) = -inv_v * x.tail(dim_ - 1);
    if (!hessian) return;
    Matrix& h = *hessian;
    h.setZero(dim_, dim_);
    h(0, 0) = -1.0 / (std_ * std_);
    if (!clipped) {
      h(0, 0) -= 0.5 * squares * inv_v;
      h.col(0).tail(dim_ - 1) = -inv_v * x.tail(dim_ - 1);
      h.row(0).tail(dim_ - 1) = h.col(0).tail(dim_ - 1).transpose();
    }
    h.diagonal().tail(dim_ - 1).setConstant(-inv_v);
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, dim_);
    for (Index i = 0; i < n; ++i) {
      const double x0 = std_ * rng.normal();
      const double v = x0 <= kink_ ? max_variance_ : std::exp(-x0);
      out(i, 0) = x0;
      for (Index j = 1; j < dim_; ++j) out(i, j) = std::sqrt(v) * rng.normal();
    }
    return out;
  }

  std::string describe() const override {
    return "funnel: x0 ~ N(0, " + number_text(std_) +
           "^2), x_{1:} ~ N(0, v I) with variance v = "
           "min(exp(-x0), " +
           number_text(max_variance_) + ")";
  }

 private:
  Index dim_;
  double std_, max_variance_, kink_;
};

// Two-dimensional core; extra coordinates come from with_gaussian_extras.
class Banana final : public Density {
 public:
  Banana(double std, double bananicity) : std_(std), b_(bananicity) {}

  Index dim() const override { return 2; }

  double log_density(const Vector& x) const override {
    return log_normal(x[0], 0.0, std_) + log_normal(x[1], mean1(x[0]), 1.0);
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    const double q = x[1] - mean1(x[0]);  // ∂q/∂x0 = -2 b x0
    grad.resize(2);
    grad[0] = -x[0] / (std_ * std_) + 2.0 * b_ * x[0] * q;
    grad[1] = -q;
    if (!hessian) return;
    Matrix& h = *hessian;
    h.resize(2, 2);
    h(0, 0) = -1.0 / (std_ * std_) + 2.0 * b_ * q - 4.0 * b_ * b_ * x[0] * x[0];
    h(0, 1) = h(1, 0) = 2.0 * b_ * x[0];
    h(1, 1) = -1.0;
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, 2);
    for (Index i = 0; i < n; ++i) {
      out(i, 0) = std_ * rng.normal();
      out(i, 1) = mean1(out(i, 0)) + rng.normal();
    }
    return out;
  }

  std::string describe() const override {
    return "banana: x0 ~ N(0, " + number_text(std_) + "^2), x1 ~ N(" + number_text(b_) + " (x0^2 - " +
           number_text(std_ * std_) + "), 1)";
  }

 private:
  double mean1(double x0) const { return b_ * (x0 * x0 - std_ * std_); }
  double std_, b_;
};

// Uniform on [-a, a]^D. The density is constant where positive and zero elsewhere, so the score and
// Hessian of log p are zero everywhere they are defined; we report zero outside the support as
// well.
class Square final : public Density {
 public:
  Square(Index dim, double half_width) : dim_(dim), half_width_(half_width) {}

  Index dim() const override { return dim_; }

  double log_density(const Vector& x) const override {
    return in_support(x) ? -double(dim_) * std::log(2.0 * half_width_) : -kInf;
  }

  void derivatives(const Vector& /*x*/, Vector& grad, Matrix* hessian) const override {
    grad.setZero(dim_);
    if (hessian) hessian->setZero(dim_, dim_);
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, dim_);
    for (Index i = 0; i < n; ++i)
      for (Index j = 0; j < dim_; ++j) out(i, j) = half_width_ * (2.0 * rng.uniform() - 1.0);
    return out;
  }

  bool bounded_support() const override { return true; }
  bool in_support(const Vector& x) const override { return x.cwiseAbs().maxCoeff() <= half_width_; }

  std::string describe() const override {
    return "square: uniform on [-" + number_text(half_width_) + ", " + number_text(half_width_) + "]^" +
           std::to_string(dim_);
  }

 private:
  Index dim_;
  double half_width_;
};

// Two-dimensional core: x0 ~ U(-a, a), x1 ~ N(A cos(ω x0), σ²). Zero density for |x0| > a, where
// the score and Hessian are reported as zero.
class Cosine final : public Density {
 public:
  Cosine(double half_width, double amplitude, double frequency, double noise)
      : a_(half_width), amplitude_(amplitude), omega_(frequency), noise_(noise) {}

  Index dim() const override { return 2; }

  double log_density(const Vector& x) const override {
    if (!in_support(x)) return -kInf;
    return -std::log(2.0 * a_) + log_normal(x[1], amplitude_ * std::cos(omega_ * x[0]), noise_);
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    grad.setZero(2);
    if (hessian) hessian->setZero(2, 2);
    if (!in_support(x)) return;
    const double var = noise_ * noise_;
    const double m = amplitude_ * std::cos(omega_ * x[0]);
    const double dm = -amplitude_ * omega_ * std::sin(omega_ * x[0]);
    const double ddm = -omega_ * omega_ * m;
    const double q = x[1] - m;
    grad[0] = q * dm / var;
    grad[1] = -q / var;
    if (!hessian) return;
    Matrix& h = *hessian;
    h(0, 0) = (q * ddm - dm * dm) / var;
    h(0, 1) = h(1, 0) = dm / var;
    h(1, 1) = -1.0 / var;
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, 2);
    for (Index i = 0; i < n; ++i) {
      out(i, 0) = a_ * (2.0 * rng.uniform() - 1.0);
      out(i, 1) = amplitude_ * std::cos(omega_ * out(i, 0)) + noise_ * rng.normal();
    }
    return out;
  }

  bool bounded_support() const override { return true; }
  bool in_support(const Vector& x) const override { return std::abs(x[0]) <= a_; }

  std::string describe() const override {
    return "cosine: x0 ~ U(-" + number_text(a_) + ", " + number_text(a_) + "), x1 ~ N(" +
           number_text(amplitude_) + " cos(" + number_text(omega_) + " x0), " + number_text(noise_) + "^2)";
  }

 private:
  double a_, amplitude_, omega_, noise_;
};

// p(x) = p_core(x_{:k}) Π_{j≥k} N(x_j; 0, τ²): gradient and Hessian are block diagonal.
class WithGaussianExtras final : public Density {
 public:
  WithGaussianExtras(DensityPtr core, Index dim, double extra_std)
      : core_(std::move(core)), dim_(dim), k_(core_->dim()), extra_std_(extra_std) {}

  Index dim() const override { return dim_; }

  double log_density(const Vector& x) const override {
    double value = core_->log_density(x.head(k_));
    for (Index j = k_; j < dim_; ++j) value += log_normal(x[j], 0.0, extra_std_);
    return value;
  }

  void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const override {
    Vector core_grad;
    Matrix core_hessian;
    core_->derivatives(x.head(k_), core_grad, hessian ? &core_hessian : nullptr);
    const double precision = 1.0 / (extra_std_ * extra_std_);
    grad.resize(dim_);
    grad.head(k_) = core_grad;
    grad.tail(dim_ - k_) = -precision * x.tail(dim_ - k_);
    if (!hessian) return;
    hessian->setZero(dim_, dim_);
    hessian->topLeftCorner(k_, k_) = core_hessian;
    hessian->diagonal().tail(dim_ - k_).setConstant(-precision);
  }

  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix out(n, dim_);
    out.leftCols(k_) = core_->sample(n, rng);
    for (Index i = 0; i < n; ++i)
      for (Index j = k_; j < dim_; ++j) out(i, j) = extra_std_ * rng.normal();
    return out;
  }

  bool bounded_support() const override { return core_->bounded_support(); }
  bool in_support(const Vector& x) const override { return core_->in_support(x.head(k_)); }

  std::string describe() const override {
    return core_->describe() + "; x_{" + std::to_string(k_) + ":" + std::to_string(dim_ - 1) + "} ~ N(0, " +
           number_text(extra_std_) + "^2 I)";
  }

 private:
  DensityPtr core_;
  Index dim_, k_;
  double extra_std_;
};

}  // namespace

double log_normal(double x, double mean, double std) {
  const double z = (x - mean) / std;
  return -0.5 * z * z - std::log(std) - 0.5 * kLogTwoPi;
}

void gauss_legendre(int n, std::vector<double>& nodes, std::vector<double>& weights) {
  // Newton's method on P_n from the Chebyshev-like initial guesses; converges to machine precision
  // in a handful of steps for every n we use (≤ 64).
  nodes.assign(n, 0.0);
  weights.assign(n, 0.0);
  for (int i = 0; i < (n + 1) / 2; ++i) {
    double x = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    double dp = 0.0;
    for (int iter = 0; iter < 100; ++iter) {
      double p0 = 1.0, p1 = 0.0;
      for (int k = 1; k <= n; ++k) {
        const double p2 = p1;
        p1 = p0;
        p0 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p2) / k;
      }
      dp = n * (x * p0 - p1) / (x * x - 1.0);
      const double step = p0 / dp;
      x -= step;
      if (std::abs(step) < 1e-15) break;
    }
    nodes[i] = -x;
    nodes[n - 1 - i] = x;
    weights[i] = weights[n - 1 - i] = 2.0 / ((1.0 - x * x) * dp * dp);
  }
}

DensityPtr with_gaussian_extras(DensityPtr core, Index dim, double extra_std) {
  if (dim == core->dim()) return core;
  return std::make_shared<WithGaussianExtras>(std::move(core), dim, extra_std);
}

DensityPtr make_funnel(Index dim, double std, double max_variance) {
  return std::make_shared<Funnel>(dim, std, max_variance);
}

DensityPtr make_banana(Index dim, double std, double bananicity) {
  return with_gaussian_extras(std::make_shared<Banana>(std, bananicity), dim, 1.0);
}

DensityPtr make_square(Index dim, double half_width) { return std::make_shared<Square>(dim, half_width); }

DensityPtr make_cosine(Index dim, double half_width, double amplitude, double frequency, double noise) {
  return with_gaussian_extras(std::make_shared<Cosine>(half_width, amplitude, frequency, noise), dim, 1.0);
}

}  // namespace kef::synthetic
