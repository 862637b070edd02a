#include "gaussian_estimation.hpp"

#include <algorithm>
#include <cmath>

#include "kef/error.hpp"
#include "kef/kmeans.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"
#include "kef/vector_exp.hpp"

namespace kef::baselines {

namespace {

// Rows per reduction item and the number of runs the items are cut into: both fixed, so the order of
// every sum depends on N only.
constexpr Index kBlockRows = 256;
constexpr Index kMaxGroups = 64;

Index blocks_of(Index n) { return (n + kBlockRows - 1) / kBlockRows; }

}  // namespace

FlooredCovariance floor_covariance(const Matrix& S, double floor, bool diagonal) {
  FlooredCovariance out;
  const Index D = S.rows();
  if (diagonal) {
    const Vector v = S.diagonal();
    out.min_eigenvalue = v.minCoeff();
    const double top = v.maxCoeff();
    out.covariance = Matrix::Zero(D, D);
    for (Index d = 0; d < D; ++d) {
      if (v[d] < floor) ++out.clipped;
      out.covariance(d, d) = std::max(v[d], floor);
    }
    out.singular = floor <= 0 && !(top > 0 && out.min_eigenvalue > kSingularRatio * top);
    return out;
  }
  const Matrix sym = 0.5 * (S + S.transpose());
  Eigen::SelfAdjointEigenSolver<Matrix> eig(sym);
  const Vector lambda = eig.eigenvalues();  // ascending
  out.min_eigenvalue = lambda[0];
  const double top = lambda[D - 1];
  if (floor <= 0) {
    out.singular = !(top > 0 && out.min_eigenvalue > kSingularRatio * top);
    out.covariance = sym;
    return out;
  }
  for (Index d = 0; d < D; ++d)
    if (lambda[d] < floor) ++out.clipped;
  if (out.clipped == 0) {
    out.covariance = sym;  // the unconstrained maximiser is feasible: keep it exactly
    return out;
  }
  const Vector clipped = lambda.cwiseMax(floor);
  const Matrix C = eig.eigenvectors() * clipped.asDiagonal() * eig.eigenvectors().transpose();
  out.covariance = 0.5 * (C + C.transpose());
  return out;
}

MixtureParameters weighted_gaussians(const Matrix& X, const Matrix& gamma, const GaussianFitOptions& options,
                                     const KeySites& sites, const std::string& where, const Context& context,
                                     Index* clipped) {
  const Index N = X.rows(), D = X.cols(), K = gamma.cols();
  if (clipped) *clipped = 0;
  const Index items = blocks_of(N);
  // Pass 1: masses and weighted sums.
  struct First {
    Vector mass;
    Matrix sum;  // K x D
  };
  First first = ordered_reduce(
      items, context.threads(),
      [&] {
        return First{Vector::Zero(K), Matrix::Zero(K, D)};
      },
      [&](Index b, First& acc) {
        // Column by column over the block's rows (contiguous, vectorised dot products).
        const Index r0 = b * kBlockRows, len = std::min(N, r0 + kBlockRows) - r0;
        for (Index k = 0; k < K; ++k) {
          const auto g = gamma.col(k).segment(r0, len);
          acc.mass[k] += g.sum();
          for (Index d = 0; d < D; ++d) acc.sum(k, d) += g.dot(X.col(d).segment(r0, len));
        }
      },
      [](First& a, const First& b) {
        a.mass += b.mass;
        a.sum += b.sum;
      },
      kMaxGroups);
  MixtureParameters p;
  p.diagonal = options.diagonal;
  p.weights = first.mass / static_cast<double>(N);
  p.means.resize(K, D);
  for (Index k = 0; k < K; ++k) {
    if (!(first.mass[k] > 0))
      throw NumericalError(
          where + ": component " + std::to_string(k) +
          " has no weight left (every responsibility underflowed to 0); use fewer components");
    p.means.row(k) = first.sum.row(k) / first.mass[k];
  }
  // Pass 2: scatter about the new means (two passes: no cancellation of E[xxᵀ] − μμᵀ).
  std::vector<Matrix> scatter = ordered_reduce(
      items, context.threads(),
      [&] { return std::vector<Matrix>(static_cast<std::size_t>(K), Matrix::Zero(D, D)); },
      [&](Index b, std::vector<Matrix>& acc) {
        // Per component, the block's centred columns and their γ-weighted copies, then one dot product
        // over the rows per entry of the lower triangle (contiguous, vectorised).
        const Index r0 = b * kBlockRows, len = std::min(N, r0 + kBlockRows) - r0;
        Matrix diff(len, D), weighted(len, D);
        for (Index k = 0; k < K; ++k) {
          const auto g = gamma.col(k).segment(r0, len).array();
          for (Index d = 0; d < D; ++d) {
            diff.col(d) = (X.col(d).segment(r0, len).array() - p.means(k, d)).matrix();
            weighted.col(d) = (g * diff.col(d).array()).matrix();
          }
          Matrix& S = acc[static_cast<std::size_t>(k)];
          for (Index c = 0; c < D; ++c)
            for (Index r = c; r < D; ++r) S(r, c) += weighted.col(c).dot(diff.col(r));
        }
      },
      [](std::vector<Matrix>& a, const std::vector<Matrix>& b) {
        for (std::size_t k = 0; k < a.size(); ++k) a[k] += b[k];
      },
      kMaxGroups);
  for (Index k = 0; k < K; ++k) {
    Matrix S = scatter[static_cast<std::size_t>(k)] / first.mass[k];
    for (Index c = 1; c < D; ++c)
      for (Index r = 0; r < c; ++r) S(r, c) = S(c, r);  // the lower triangle was accumulated
    const FlooredCovariance f = floor_covariance(S, options.floor, options.diagonal);
    if (f.singular)
      sites.fail("covariance_floor",
                 where + ": the covariance of component " + std::to_string(k) + " (weight " +
                     number_text(p.weights[k]) + ") is singular (smallest " +
                     (options.diagonal ? "variance " : "eigenvalue ") + number_text(f.min_eigenvalue) +
                     "), and covariance_floor = 0; set covariance_floor > 0, or remove constant or collinear "
                     "columns ([data] drop_correlated)");
    if (clipped) *clipped += f.clipped;
    p.covariances.push_back(f.covariance);
  }
  return p;
}

double responsibilities(const GaussianMixtureModel& model, const Matrix& X, Matrix& gamma,
                        const Context& context) {
  const Index N = X.rows(), K = model.parameters().components();
  gamma.resize(N, K);
  Vector ell(N);
  // Per block of rows: the N x K terms column-wise (log_terms), then the log-sum-exp of every row in
  // one pass with kef::exp_array over the whole block: m = max_k t_k, e_k = exp(t_k − m),
  // ℓ = m + log Σ e_k, γ_k = e_k / Σ e_k. Each row's result depends on that row only.
  parallel_for_chunks(N, kBlockRows, context.threads(), [&](Index begin, Index len) {
    Matrix T = model.log_terms(X.middleRows(begin, len));
    const Vector m = T.rowwise().maxCoeff();
    T.colwise() -= m;
    exp_array(T.data(), T.data(), T.size());
    const Vector sum = T.rowwise().sum();
    for (Index i = 0; i < len; ++i) ell[begin + i] = m[i] + std::log(sum[i]);
    gamma.middleRows(begin, len) = T.array().colwise() / sum.array();
  });
  double total = 0.0;
  for (Index i = 0; i < N; ++i) {
    if (!std::isfinite(ell[i]))
      throw NumericalError(model.type_name() + ": the log-likelihood of training row " + std::to_string(i) +
                           " is " + number_text(ell[i]));
    total += ell[i];
  }
  return total;
}

double total_log_likelihood(const Model& model, const Matrix& X, const Context& context) {
  const Index N = X.rows();
  Vector ell(N);
  parallel_for_chunks(N, kBlockRows, context.threads(), [&](Index begin, Index len) {
    ell.segment(begin, len) = model.log_unnormalized(X.middleRows(begin, len));
  });
  double total = 0.0;
  for (Index i = 0; i < N; ++i) {
    if (!std::isfinite(ell[i]))
      throw NumericalError(model.type_name() + ": the log density of row " + std::to_string(i) + " is " +
                           number_text(ell[i]));
    total += ell[i];
  }
  return total;
}

EmResult run_em(const Matrix& X, const EmOptions& options, const RandomStream& rng, const KeySites& sites,
                const std::string& where, const Context& context) {
  const Index N = X.rows(), K = options.components;
  Matrix gamma;
  if (K == 1) {
    gamma = Matrix::Ones(N, 1);
  } else {
    KMeansOptions ko;
    ko.clusters = K;
    ko.restarts = 1;
    ko.max_iterations = options.kmeans_max_iterations;
    const KMeansResult km = kmeans(X, ko, rng, context);
    gamma = Matrix::Zero(N, K);
    for (Index i = 0; i < N; ++i) gamma(i, km.labels[static_cast<std::size_t>(i)]) = 1.0;
  }
  EmResult r;
  r.parameters =
      weighted_gaussians(X, gamma, options.fit, sites, where + ", k-means start", context, &r.clipped);
  const double n = static_cast<double>(N);
  const std::string type = "gmm";
  double L = responsibilities(GaussianMixtureModel(type, r.parameters), X, gamma, context);
  r.trace.push_back(L / n);
  if (K == 1) {  // the start is the maximum-likelihood Gaussian: EM cannot move it
    r.converged = true;
    return r;
  }
  for (int it = 1; it <= options.max_iterations; ++it) {
    MixtureParameters next = weighted_gaussians(
        X, gamma, options.fit, sites, where + ", EM iteration " + std::to_string(it), context, &r.clipped);
    const double L_next = responsibilities(GaussianMixtureModel(type, next), X, gamma, context);
    r.parameters = std::move(next);
    r.trace.push_back(L_next / n);
    r.iterations = it;
    const double gain = (L_next - L) / n;
    L = L_next;
    if (gain < options.tolerance) {
      r.converged = true;
      break;
    }
  }
  return r;
}

double free_parameters(Index K, Index D, bool diagonal) {
  const double k = static_cast<double>(K), d = static_cast<double>(D);
  return (k - 1) + k * d + k * (diagonal ? d : d * (d + 1) / 2);
}

}  // namespace kef::baselines
