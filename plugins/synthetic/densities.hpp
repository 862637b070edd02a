#pragma once
// Exact densities of the synthetic data sets, one point at a time. Each density is normalised (log
// p includes the constant) and gives the exact gradient and Hessian of log p; TruthModel turns one
// into a batched kef::Model and applies the optional rotation, so no density carries batch loops.
#include <memory>
#include <string>
#include <vector>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::synthetic {

// log(2π), rounded once, for the normal densities of both source files.
inline constexpr double kLogTwoPi = 1.8378770664093454836;

class Density {
 public:
  virtual ~Density() = default;

  virtual Index dim() const = 0;
  // Normalised log p(x); -infinity outside the support.
  virtual double log_density(const Vector& x) const = 0;
  // grad = ∇ log p(x) and, when hessian is not null, the full Hessian of log p. Outside a bounded
  // support both are zero (the density is locally constant there), so callers never see NaN.
  virtual void derivatives(const Vector& x, Vector& grad, Matrix* hessian) const = 0;
  // n exact, independent draws (rows).
  virtual Matrix sample(Index n, RandomStream& rng) const = 0;

  virtual bool bounded_support() const { return false; }
  virtual bool in_support(const Vector& /*x*/) const { return true; }
  virtual std::string describe() const = 0;
};

using DensityPtr = std::shared_ptr<const Density>;

// DKEF funnel: x0 ~ N(0, std²), x_{1:} ~ N(0, v I) with variance v = min(exp(-x0), max_variance).
DensityPtr make_funnel(Index dim, double std, double max_variance);
// DKEF banana: x0 ~ N(0, std²), x1 ~ N(b (x0² - std²), 1), x_{2:} ~ N(0, I).
DensityPtr make_banana(Index dim, double std, double bananicity);
// Uniform on the cube [-half_width, half_width]^dim.
DensityPtr make_square(Index dim, double half_width);
// DKEF cosine: x0 ~ U(-half_width, half_width), x1 ~ N(A cos(ω x0), noise²), x_{2:} ~ N(0, I).
DensityPtr make_cosine(Index dim, double half_width, double amplitude, double frequency, double noise);

// Mixture of isotropic Gaussians N(means.row(k), stds[k]² I) with weights (normalised here).
DensityPtr make_gaussian_mixture(std::vector<double> weights, Matrix means, std::vector<double> stds,
                                 std::string description);
// Rings in the (x0, x1) plane: ring k chosen with probability weights[k], radius r ~ N(radii[k],
// noise²), uniform angle; x_{2:} ~ N(0, noise² I).
DensityPtr make_rings(Index dim, std::vector<double> radii, std::vector<double> weights, double noise,
                      std::string description);
// Rezende & Mohamed's two moons exp(-U(z)), normalised by quadrature; x_{2:} ~ N(0, I).
DensityPtr make_two_moons(Index dim);

// Adds independent N(0, extra_std²) coordinates after the coordinates of `core`.
DensityPtr with_gaussian_extras(DensityPtr core, Index dim, double extra_std);

// Nodes and weights of the n-point Gauss-Legendre rule on [-1, 1].
void gauss_legendre(int n, std::vector<double>& nodes, std::vector<double>& weights);

// log N(x; mean, std²) for a scalar.
double log_normal(double x, double mean, double std);

}  // namespace kef::synthetic
