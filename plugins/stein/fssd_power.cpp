#include "fssd_power.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fssd.hpp"
#include "kef/adam.hpp"
#include "kef/error.hpp"
#include "stein_common.hpp"

namespace kef::stein {

namespace {

void set_log_sigma(Kernel& kernel, double log_sigma) { kernel.set_parameters(Vector::Constant(1, log_sigma)); }

// Pass 1 of the criterion: Σ_n τ_n and Σ_n ‖τ_n‖² over the rows, in fixed chunks.
struct FeatureSums {
  FeatureWorkspace ws;
  Vector sum;
  double sum_sq = 0;
};

FeatureSums feature_sums(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                         const Context& context) {
  const Index N = X.rows(), P = X.cols() * V.rows();
  return ordered_reduce(
      chunk_count(N), context.threads(),
      [&] {
        FeatureSums f;
        f.sum = Vector::Zero(P);
        return f;
      },
      [&](Index c, FeatureSums& f) {
        const Index b = chunk_begin(c), n = chunk_size(c, N);
        fssd_features(kernel, V, X.middleRows(b, n), S.middleRows(b, n), f.ws.stacks, f.ws.T);
        f.sum += f.ws.T.colwise().sum().transpose();
        f.sum_sq += f.ws.T.squaredNorm();
      },
      [](FeatureSums& acc, const FeatureSums& f) {
        acc.sum += f.sum;
        acc.sum_sq += f.sum_sq;
      });
}

// Pass 2: with a_n = τ_n·μ, Σ a_n² and (for the gradient) Σ a_n τ_n.
struct ProjectionSums {
  FeatureWorkspace ws;
  double sum_a2 = 0;
  Vector sum_at;
};

ProjectionSums projection_sums(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                               const Vector& mu, bool need_grad, const Context& context) {
  const Index N = X.rows(), P = X.cols() * V.rows();
  return ordered_reduce(
      chunk_count(N), context.threads(),
      [&] {
        ProjectionSums s;
        if (need_grad) s.sum_at = Vector::Zero(P);
        return s;
      },
      [&](Index c, ProjectionSums& s) {
        const Index b = chunk_begin(c), n = chunk_size(c, N);
        fssd_features(kernel, V, X.middleRows(b, n), S.middleRows(b, n), s.ws.stacks, s.ws.T);
        const Vector a = s.ws.T * mu;
        s.sum_a2 += a.squaredNorm();
        if (need_grad) s.sum_at.noalias() += s.ws.T.transpose() * a;
      },
      [&](ProjectionSums& acc, const ProjectionSums& s) {
        acc.sum_a2 += s.sum_a2;
        if (need_grad) acc.sum_at += s.sum_at;
      });
}

// Pass 3: the adjoint of each τ_n (row n is common − cu τ_n + cw a_n μ) taken back through the
// kernel's stacks and its backward pass, summed into the gradients of the kernel parameter and of V.
struct CriterionAdjoint {
  FeatureWorkspace ws;
  KernelStacks adj;
  Vector params;
  Matrix V;
};

CriterionAdjoint criterion_adjoint(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                                   const Vector& mu, const Vector& common, double cu, double cw,
                                   const Context& context) {
  const Index N = X.rows(), D = X.cols(), J = V.rows();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D * J));
  return ordered_reduce(
      chunk_count(N), context.threads(),
      [&] {
        CriterionAdjoint g;
        g.params = Vector::Zero(1);
        g.V = Matrix::Zero(J, D);
        return g;
      },
      [&](Index c, CriterionAdjoint& g) {
        const Index b = chunk_begin(c), n = chunk_size(c, N);
        const Matrix Xc = X.middleRows(b, n), Sc = S.middleRows(b, n);
        fssd_features(kernel, V, Xc, Sc, g.ws.stacks, g.ws.T);
        const Vector a = g.ws.T * mu;
        // Adjoint of T (in place of T, which is not needed any more): row n is
        // common − cu τ_n + cw a_n μ.
        Matrix& adj_T = g.ws.T;
        adj_T *= -cu;
        adj_T.noalias() += cw * a * mu.transpose();
        adj_T.rowwise() += common.transpose();
        // τ[n, dJ + j] = (s_nd K[n, j] + d1[dN + n, j]) · scale
        KernelStacks& adj = g.adj;
        adj.value.setZero(n, J);
        adj.d1.resize(n * D, J);
        for (Index d = 0; d < D; ++d) {
          const auto block = adj_T.middleCols(d * J, J);
          adj.value.noalias() += scale * (Sc.col(d).asDiagonal() * block);
          adj.d1.middleRows(d * n, n) = scale * block;
        }
        kernel.backward(Xc, V, adj, &g.params, &g.V);  // accumulates
      },
      [](CriterionAdjoint& acc, const CriterionAdjoint& g) {
        acc.params += g.params;
        acc.V += g.V;
      });
}

}  // namespace

PowerCriterion fssd_power_criterion(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                                    double gamma, const Context& context, Matrix* grad_V,
                                    double* grad_log_sigma) {
  const Index N = X.rows();
  if (N < 2) throw DataError("fssd power criterion: needs at least 2 rows, got " + std::to_string(N));
  const double Nd = static_cast<double>(N);

  // Pass 1: μ and the statistic.
  const FeatureSums one = feature_sums(kernel, V, X, S, context);
  const Vector mu = one.sum / Nd;
  const double mu2 = mu.squaredNorm();
  const double U = (one.sum.squaredNorm() - one.sum_sq) / (Nd * (Nd - 1.0));

  // Pass 2: a_n = τ_n·μ; W = 4 mean(a²) − 4‖μ‖⁴ = 4 Var(a) ≥ 0, and r = mean(a_n τ_n) for the gradient.
  const bool need_grad = grad_V || grad_log_sigma;
  const ProjectionSums two = projection_sums(kernel, V, X, S, mu, need_grad, context);
  PowerCriterion pc;
  pc.fssd2 = U;
  pc.variance = 4.0 * two.sum_a2 / Nd - 4.0 * mu2 * mu2;
  const double denom = pc.variance + gamma;
  if (!(denom > 0.0) || !std::isfinite(U))
    throw NumericalError("fssd power criterion: not finite (FSSD² " + std::to_string(U) + ", variance " +
                         std::to_string(pc.variance) + ")");
  pc.value = U / std::sqrt(denom);
  if (!need_grad) return pc;

  // Pass 3: adjoint of τ_n, then of the kernel stacks, through the kernel's backward pass.
  //   ∂U/∂τ_n = 2(Σ τ − τ_n)/(N(N − 1))
  //   ∂W/∂τ_n = (8/N)[a_n μ + r − 2‖μ‖² μ],  r = (1/N) Σ_m a_m τ_m
  //   ∂c/∂τ_n = g_U ∂U/∂τ_n + g_W ∂W/∂τ_n,   g_U = (W + γ)^(−1/2), g_W = −U (W + γ)^(−3/2) / 2
  const double g_U = 1.0 / std::sqrt(denom), g_W = -0.5 * U / (denom * std::sqrt(denom));
  const double cu = 2.0 * g_U / (Nd * (Nd - 1.0)), cw = 8.0 * g_W / Nd;
  const Vector r = two.sum_at / Nd;
  // Row-independent part of ∂c/∂τ_n.
  const Vector common = cu * one.sum + cw * (r - 2.0 * mu2 * mu);
  const CriterionAdjoint total = criterion_adjoint(kernel, V, X, S, mu, common, cu, cw, context);
  if (grad_V) *grad_V = total.V;
  if (grad_log_sigma) *grad_log_sigma = total.params[0];
  return pc;
}

OptimizedLocations optimize_fssd_locations(Kernel& kernel, const Matrix& V0, double sigma0, const Matrix& X,
                                           const Matrix& S, const PowerOptions& opt, const Context& context,
                                           Progress* progress) {
  const Index J = V0.rows(), D = V0.cols();
  // kgof's bounds: σ² ∈ [0.01 σ0², 500 σ0²]; locations within [min − ½ std, max + ½ std] per coordinate.
  const double log_lo = std::log(sigma0) + 0.5 * std::log(0.01), log_hi = std::log(sigma0) + 0.5 * std::log(500.0);
  const Eigen::RowVectorXd mean = X.colwise().mean();
  const Eigen::RowVectorXd sd = ((X.rowwise() - mean).colwise().squaredNorm() / static_cast<double>(X.rows())).cwiseSqrt();
  const Eigen::RowVectorXd lo = X.colwise().minCoeff() - 0.5 * sd, hi = X.colwise().maxCoeff() + 0.5 * sd;
  auto project = [&](Matrix& V, double& log_sigma) {
    for (Index j = 0; j < J; ++j) V.row(j) = V.row(j).cwiseMax(lo).cwiseMin(hi);
    log_sigma = std::clamp(log_sigma, log_lo, log_hi);
  };

  OptimizedLocations best;
  best.V = V0;
  double log_sigma = std::log(sigma0), best_log_sigma = log_sigma;
  {
    // Width grid at the initial locations (kgof: σ² = σ0² · 2^{−3, −1.5, 0, 1.5, 3}).
    double best_value = -std::numeric_limits<double>::infinity();
    for (double e : {-3.0, -1.5, 0.0, 1.5, 3.0}) {
      const double ls = std::log(sigma0) + 0.5 * e * std::log(2.0);
      set_log_sigma(kernel, ls);
      const double v = fssd_power_criterion(kernel, V0, X, S, opt.gamma, context).value;
      if (v > best_value) {
        best_value = v;
        log_sigma = ls;
      }
    }
    best.initial_criterion = best.final_criterion = best_value;
    best_log_sigma = log_sigma;
  }

  // kef::Adam (minimising −c) on θ = (V/σ0, log σ): locations move in units of the initial
  // bandwidth, so one learning rate fits both blocks whatever the data's scale.
  Adam adam(AdamOptions{opt.learning_rate}, "fssd: optimized locations");
  const Index P = J * D;
  Vector theta(P + 1), grad(P + 1);
  Eigen::Map<Matrix>(theta.data(), J, D) = V0 / sigma0;
  theta[P] = log_sigma;
  Matrix V = V0;
  for (Index t = 1; t <= opt.steps; ++t) {
    set_log_sigma(kernel, log_sigma);
    Matrix gV;
    double gs = 0.0;
    const double value = fssd_power_criterion(kernel, V, X, S, opt.gamma, context, &gV, &gs).value;
    if (value > best.final_criterion) {
      best.final_criterion = value;
      best.V = V;
      best_log_sigma = log_sigma;
    }
    Eigen::Map<Matrix>(grad.data(), J, D) = -sigma0 * gV;
    grad[P] = -gs;
    theta = adam.step(theta, grad);
    V = sigma0 * Eigen::Map<const Matrix>(theta.data(), J, D);
    log_sigma = theta[P];
    project(V, log_sigma);
    Eigen::Map<Matrix>(theta.data(), J, D) = V / sigma0;
    theta[P] = log_sigma;
    if (progress)
      progress->update("fssd locations", static_cast<double>(t) / static_cast<double>(opt.steps),
                       "power criterion " + std::to_string(best.final_criterion));
  }
  set_log_sigma(kernel, log_sigma);
  const double last = fssd_power_criterion(kernel, V, X, S, opt.gamma, context).value;
  if (last > best.final_criterion) {
    best.final_criterion = last;
    best.V = V;
    best_log_sigma = log_sigma;
  }
  set_log_sigma(kernel, best_log_sigma);
  best.bandwidth = std::exp(best_log_sigma);
  return best;
}

}  // namespace kef::stein
