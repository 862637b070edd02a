#include "lbfgs.hpp"

#include <ceres/gradient_problem.h>
#include <ceres/gradient_problem_solver.h>

#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include "kef/error.hpp"
#include "kef/number_text.hpp"

namespace kef {
namespace {

bool inside(const Vector& x, const LbfgsOptions& o) {
  if (o.lower.size() == 0) return true;
  for (Index i = 0; i < x.size(); ++i)
    if (!(x[i] >= o.lower[i] && x[i] <= o.upper[i])) return false;
  return true;
}

// Ceres's view of the objective: infeasible (false) outside the box or where f is not finite; a
// kef::Error (or anything else) thrown by f is kept, every later call fails, and the wrapper rethrows
// it once Ceres returns (exceptions never unwind through Ceres's frames).
class Function final : public ceres::FirstOrderFunction {
 public:
  Function(const LbfgsObjective& f, const LbfgsOptions& o, Index n, Index* evaluations,
           std::exception_ptr* error)
      : f_(f), o_(o), n_(n), evaluations_(evaluations), error_(error) {}
  bool Evaluate(const double* parameters, double* cost, double* gradient) const override {
    if (*error_) return false;
    const Vector x = Eigen::Map<const Vector>(parameters, n_);
    if (!x.allFinite() || !inside(x, o_)) return false;
    try {
      ++*evaluations_;
      Vector g;
      if (gradient) g.setZero(n_);
      const double v = f_(x, gradient ? &g : nullptr);
      if (!std::isfinite(v) || (gradient && !g.allFinite())) return false;
      *cost = v;
      if (gradient) Eigen::Map<Vector>(gradient, n_) = g;
      return true;
    } catch (...) {
      *error_ = std::current_exception();
      return false;
    }
  }
  int NumParameters() const override { return static_cast<int>(n_); }

 private:
  const LbfgsObjective& f_;
  const LbfgsOptions& o_;
  Index n_;
  Index* evaluations_;
  std::exception_ptr* error_;
};

void check_options(const LbfgsOptions& o, Index n) {
  const std::string& c = o.context;
  auto positive = [&](double v, const char* name) {
    if (!(v > 0.0) || !std::isfinite(v))
      throw ConfigError(c + ": L-BFGS option " + name + " must be a positive number, got " + number_text(v));
  };
  if (n < 1) throw ConfigError(c + ": L-BFGS needs at least one parameter, got 0");
  if (o.max_iterations < 1)
    throw ConfigError(c + ": L-BFGS option max_iterations must be >= 1, got " +
                      std::to_string(o.max_iterations));
  if (o.memory < 1 || o.memory > 100)
    throw ConfigError(c + ": L-BFGS option memory must be in [1, 100], got " + std::to_string(o.memory));
  positive(o.gradient_tolerance, "gradient_tolerance");
  positive(o.function_tolerance, "function_tolerance");
  positive(o.parameter_tolerance, "parameter_tolerance");
  positive(o.bound_tolerance, "bound_tolerance");
  if (o.lower.size() == 0 && o.upper.size() == 0) return;
  if (o.lower.size() != n || o.upper.size() != n)
    throw ConfigError(c + ": L-BFGS bounds have sizes " + std::to_string(o.lower.size()) + " and " +
                      std::to_string(o.upper.size()) + " for " + std::to_string(n) + " parameters");
  for (Index i = 0; i < n; ++i)
    if (std::isnan(o.lower[i]) || std::isnan(o.upper[i]) || !(o.lower[i] < o.upper[i]))
      throw ConfigError(c + ": L-BFGS bounds of parameter " + std::to_string(i) + " are [" + number_text(o.lower[i]) +
                        ", " + number_text(o.upper[i]) + "] (expected lower < upper)");
}

}  // namespace

LbfgsResult minimize_lbfgs(const LbfgsObjective& f, const Vector& x0, const LbfgsOptions& options) {
  const Index n = x0.size();
  check_options(options, n);
  const std::string& c = options.context;
  if (!x0.allFinite()) throw NumericalError(c + ": L-BFGS start is not finite");
  if (!inside(x0, options)) throw NumericalError(c + ": L-BFGS start lies outside the bounds");
  {
    Vector g = Vector::Zero(n);
    const double v0 = f(x0, &g);
    if (!std::isfinite(v0) || !g.allFinite())
      throw NumericalError(c + ": the objective or its gradient is not finite at the start (value " +
                           number_text(v0) + ")");
  }

  ceres::GradientProblemSolver::Options so;
  so.line_search_direction_type = ceres::LBFGS;
  so.max_lbfgs_rank = static_cast<int>(options.memory);
  so.max_num_iterations = static_cast<int>(options.max_iterations);
  so.gradient_tolerance = options.gradient_tolerance;
  so.function_tolerance = options.function_tolerance;
  so.parameter_tolerance = options.parameter_tolerance;
  so.logging_type = ceres::SILENT;
  so.minimizer_progress_to_stdout = false;
  std::string invalid;
  if (!so.IsValid(&invalid)) throw ConfigError(c + ": L-BFGS options rejected: " + invalid);

  LbfgsResult r;
  std::exception_ptr error;
  ceres::GradientProblem problem(new Function(f, options, n, &r.evaluations, &error));
  ceres::GradientProblemSolver::Summary summary;
  r.x = x0;
  ceres::Solve(so, problem, r.x.data(), &summary);
  if (error) std::rethrow_exception(error);
  // On FAILURE (e.g. a line search that found no feasible decrease) Ceres leaves the parameters at
  // the last point it could use; the caller sees converged = false and the message.
  r.value = summary.termination_type == ceres::FAILURE ? f(r.x, nullptr) : summary.final_cost;
  r.iterations = static_cast<Index>(summary.iterations.size()) - 1;
  r.converged = summary.termination_type == ceres::CONVERGENCE;
  r.message = summary.message;
  r.at_lower.assign(static_cast<std::size_t>(n), false);
  r.at_upper.assign(static_cast<std::size_t>(n), false);
  if (options.lower.size() == n) {
    for (Index i = 0; i < n; ++i) {
      const double lo = options.lower[i], hi = options.upper[i];
      const double scale = std::isfinite(lo) && std::isfinite(hi) ? hi - lo : 1.0;
      const double tol = options.bound_tolerance * scale;
      r.at_lower[static_cast<std::size_t>(i)] = std::isfinite(lo) && r.x[i] - lo <= tol;
      r.at_upper[static_cast<std::size_t>(i)] = std::isfinite(hi) && hi - r.x[i] <= tol;
    }
  }
  return r;
}

}  // namespace kef
