#pragma once
// Limited-memory BFGS minimisation of a smooth function of a few parameters, with optional box bounds.
// The line search and the L-BFGS updates are Ceres Solver's (GradientProblemSolver); Ceres stays
// private to libkef behind this wrapper, itself private to libkef (Bayesian kernel learning uses it).
//
// Why a wrapper checks so much: Ceres reports several misuses by a failed CHECK, which aborts the
// process. Everything that could reach one (sizes, a non-finite start, bounds, options) is checked
// here first and reported as a kef::ConfigError / NumericalError naming `context`.
//
// Bounds: a point outside [lower, upper] is reported to Ceres as an infeasible evaluation, so its
// line search backs off; the result never leaves the box. Whether the minimum found sits on a bound
// is reported (at_lower / at_upper) for the caller to judge.
#include <functional>
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

// f(x) and, when `gradient` is non-null, ∇f(x) (resized by the caller to x.size()). Returning a
// non-finite value means "not defined here" (the line search backs off); a kef::Error thrown by the
// objective stops the minimisation and is rethrown by minimize_lbfgs.
using LbfgsObjective = std::function<double(const Vector& x, Vector* gradient)>;

struct LbfgsOptions {
  Index max_iterations = 200;          // > 0
  double gradient_tolerance = 1e-10;   // Ceres: max |projected gradient| relative to the start; > 0
  double function_tolerance = 1e-12;   // relative decrease of f; > 0
  double parameter_tolerance = 1e-10;  // relative step size; > 0
  Index memory = 10;                   // L-BFGS history length, in [1, 100]
  Vector lower, upper;                 // empty: unbounded; else size of x, lower < upper, may be ±inf
  // Relative distance (to the box width, or absolute for an infinite side) within which the result
  // counts as on a bound.
  double bound_tolerance = 1e-6;
  std::string context = "L-BFGS";  // names the caller in errors
};

struct LbfgsResult {
  Vector x;
  double value = 0.0;
  Index iterations = 0;
  Index evaluations = 0;                 // objective calls (value or value and gradient)
  bool converged = false;                // Ceres reported convergence (a tolerance met)
  std::vector<bool> at_lower, at_upper;  // per coordinate, within bound_tolerance of the bound
  std::string message;                   // Ceres's termination message
};

// Throws ConfigError (naming options.context and the option) for invalid options or bounds, and
// NumericalError when x0 is not finite, lies outside the box, or f(x0) or its gradient is not finite.
LbfgsResult minimize_lbfgs(const LbfgsObjective& f, const Vector& x0, const LbfgsOptions& options);

}  // namespace kef
