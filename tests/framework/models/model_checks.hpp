#pragma once
// Checks the models suites share: a model's score and Hessian diagonal against central differences
// of its own log density and score, and the exact densities of the synthetic sources to build on.
#include <gtest/gtest.h>

#include <string>

#include "gradient_check.hpp"
#include "kef/data_source.hpp"
#include "kef/model.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef::model_checks {

// Steps: h = 1e-5 for first differences (truncation h²/6·|f'''| and rounding ε|f|/h, both ~1e-10 for
// the smooth, O(1)-scaled densities below) and h = 1e-4 for second differences of values (rounding
// 4ε|f|/h² ~ 1e-7 dominates).
constexpr double kStep = 1e-5;
constexpr double kStep2 = 1e-4;

inline Matrix as_row(const Vector& x) { return x.transpose(); }

inline double log_density_at(const Model& model, const Vector& x) { return model.log_unnormalized(as_row(x))[0]; }

// ∂_d (∂_d log p~) by central differences of the analytic score, for d < D.
inline Vector score_diagonal_differences(const Model& model, const Vector& x, double h = kStep) {
  Vector out(x.size());
  for (Index d = 0; d < x.size(); ++d) {
    Vector xp = x, xm = x;
    xp[d] += h;
    xm[d] -= h;
    out[d] = (model.score(as_row(xp))(0, d) - model.score(as_row(xm))(0, d)) / (2 * h);
  }
  return out;
}

// ∂²_d log p~ by second central differences of the log density itself.
inline Vector second_differences(const Model& model, const Vector& x, double h = kStep2) {
  const double f0 = log_density_at(model, x);
  Vector out(x.size());
  for (Index d = 0; d < x.size(); ++d) {
    Vector xp = x, xm = x;
    xp[d] += h;
    xm[d] -= h;
    out[d] = (log_density_at(model, xp) - 2 * f0 + log_density_at(model, xm)) / (h * h);
  }
  return out;
}

// The Jacobian of the analytic score (D x D, entry (i, j) = ∂_j s_i) by central differences.
inline Matrix score_jacobian_differences(const Model& model, const Vector& x, double h = kStep) {
  const Index D = x.size();
  Matrix J(D, D);
  for (Index j = 0; j < D; ++j) {
    Vector xp = x, xm = x;
    xp[j] += h;
    xm[j] -= h;
    J.col(j) = ((model.score(as_row(xp)) - model.score(as_row(xm))) / (2 * h)).transpose();
  }
  return J;
}

// At every row of X: score() against central differences of log_unnormalized; score_and_laplacian's
// score equal to score() to rounding (a model may compute the two along different paths); its Hessian
// diagonal against differences of the score (tolerance tol) and second differences of the log density
// (tol2).
inline ::testing::AssertionResult derivatives_match_differences(const Model& model, const Matrix& X, double tol,
                                                                double tol2) {
  Matrix S, L;
  model.score_and_laplacian(X, S, L);
  const Matrix S_only = model.score(X);
  for (Index n = 0; n < X.rows(); ++n) {
    const Vector x = X.row(n).transpose();
    const auto f = [&](const Vector& v) { return log_density_at(model, v); };
    if (auto r = test::gradients_agree(S_only.row(n).transpose(), test::numerical_gradient(f, x, kStep), tol); !r)
      return r << " (score, row " << n << ")";
    if (auto r = test::gradients_agree(S.row(n).transpose(), S_only.row(n).transpose(), 1e-13); !r)
      return r << " (score_and_laplacian's score against score(), row " << n << ")";
    if (auto r = test::gradients_agree(L.row(n).transpose(), score_diagonal_differences(model, x), tol); !r)
      return r << " (Hessian diagonal against the score's differences, row " << n << ")";
    if (auto r = test::gradients_agree(L.row(n).transpose(), second_differences(model, x), tol2); !r)
      return r << " (Hessian diagonal against second differences, row " << n << ")";
  }
  return ::testing::AssertionSuccess();
}

// The exact density of a synthetic source given by its [data] table (normalised; exact score, Hessian
// and sampler: plugins/synthetic/README.md).
inline ModelPtr synthetic_truth(const std::string& toml) {
  BuildContext ctx;
  ctx.registry = &test::plugin_registry();
  DataSourcePtr source = test::plugin_registry().make_data_source(test::config_from(toml), ctx);
  RandomStream rng(5, "models-test-source");
  return source->load(rng).truth;
}

}  // namespace kef::model_checks
