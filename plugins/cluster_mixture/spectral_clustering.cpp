#include "spectral_clustering.hpp"

#include <Spectra/MatOp/DenseSymMatProd.h>
#include <Spectra/SymEigsSolver.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "kef/error.hpp"
#include "kef/kmeans.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

// Below this size a dense eigendecomposition costs less than Lanczos' set-up (and Spectra needs
// nev < ncv <= n).
constexpr Index kDenseEigenBelow = 100;
// Rows per block of the embedding; fixed, so results do not depend on the thread count.
constexpr Index kEmbedBlock = 512;

TopEigenpairs dense_top(const Matrix& S, Index k) {
  Eigen::SelfAdjointEigenSolver<Matrix> es(S);  // reads the lower triangle
  if (es.info() != Eigen::Success) throw NumericalError("spectral clustering: the dense eigensolver failed");
  TopEigenpairs out;
  out.values = es.eigenvalues().tail(k).reverse();
  out.vectors = es.eigenvectors().rightCols(k).rowwise().reverse();
  out.used_dense = true;
  return out;
}

}  // namespace

TopEigenpairs top_eigenpairs(const Matrix& S, Index k, bool force_dense, int lanczos_max_iterations) {
  const Index n = S.rows();
  if (S.cols() != n || k < 1 || k > n)
    throw Error("top_eigenpairs: need a square matrix and 1 <= k <= n (got " + std::to_string(n) + " x " +
                std::to_string(S.cols()) + ", k = " + std::to_string(k) + ")");
  if (lanczos_max_iterations < 1)
    throw Error("top_eigenpairs: lanczos_max_iterations must be at least 1 (got " +
                std::to_string(lanczos_max_iterations) + ")");
  if (force_dense || n <= kDenseEigenBelow || k >= n - 1) return dense_top(S, k);
  Spectra::DenseSymMatProd<double> op(S);
  const Index ncv = std::min(n, std::max<Index>(2 * k + 1, 20));
  Spectra::SymEigsSolver<Spectra::DenseSymMatProd<double>> solver(op, k, ncv);
  solver.init();  // Spectra's fixed-seed starting vector: deterministic
  solver.compute(Spectra::SortRule::LargestAlge, lanczos_max_iterations, 1e-10,
                 Spectra::SortRule::LargestAlge);
  if (solver.info() != Spectra::CompInfo::Successful) {
    TopEigenpairs out = dense_top(S, k);
    out.fell_back = true;
    return out;
  }
  TopEigenpairs out;
  out.values = solver.eigenvalues();
  out.vectors = solver.eigenvectors();
  out.used_dense = false;
  return out;
}

SpectralClustering SpectralClustering::fit(const Matrix& X, const SpectralClusteringOptions& opt,
                                           const RandomStream& rng, const Context& context) {
  const Index n = X.rows(), K = opt.clusters;
  if (K < 1) throw DataError("spectral clustering: the number of clusters must be at least 1");
  if (n < K)
    throw DataError("spectral clustering: " + std::to_string(K) + " clusters but only " + std::to_string(n) +
                    " rows");
  if (!X.allFinite()) throw DataError("spectral clustering: the points are not all finite");
  if (opt.lanczos_max_iterations < 1)
    throw Error("spectral clustering: lanczos_max_iterations = " +
                std::to_string(opt.lanczos_max_iterations) + " must be at least 1");
  if (opt.max_points < K)
    throw DataError("spectral clustering: max_points = " + std::to_string(opt.max_points) + " is below the " +
                    std::to_string(K) + " clusters");

  SpectralClustering sc;
  if (n <= opt.max_points) {
    sc.landmarks_ = X;
  } else {
    RandomStream pick = rng.derive("landmarks");
    sc.landmarks_ = random_rows(X, opt.max_points, pick);
  }
  const Matrix& Lm = sc.landmarks_;
  const Index m = Lm.rows();

  if (opt.bandwidth > 0) {
    sc.bandwidth_ = opt.bandwidth;
  } else {
    if (m < 2) throw DataError("spectral clustering: the median heuristic needs at least 2 rows");
    sc.bandwidth_ = median_pairwise_distance(Lm, m);
    if (!(sc.bandwidth_ > 0))
      throw DataError(
          "spectral clustering: the median pairwise distance of the rows is 0 (more than half of the "
          "pairs coincide); give the bandwidth explicitly");
  }
  const double inv_two_s2 = 1.0 / (2.0 * sc.bandwidth_ * sc.bandwidth_);

  // Affinity, symmetrised against GEMM rounding, with its diagonal exactly 1.
  Matrix A = (-squared_distances(Lm, Lm).array() * inv_two_s2).exp().matrix();
  A = (0.5 * (A + A.transpose())).eval();
  A.diagonal().setOnes();
  const Vector degree = A.rowwise().sum();  // >= 1: the diagonal
  const Vector inv_sqrt_degree = degree.array().rsqrt().matrix();
  Matrix L = inv_sqrt_degree.asDiagonal() * A * inv_sqrt_degree.asDiagonal();
  A.resize(0, 0);

  TopEigenpairs eig = top_eigenpairs(L, K, false, opt.lanczos_max_iterations);
  sc.used_dense_ = eig.used_dense;
  sc.fell_back_ = eig.fell_back;
  sc.eigenvalues_ = eig.values;
  // L is positive semi-definite (a Gaussian Gram matrix scaled on both sides), so its top
  // eigenvalues are >= 0; the Nyström extension divides by them.
  const double tiny = 1e-10 * std::max(eig.values[0], 1.0);
  if (!(eig.values[K - 1] > tiny)) {
    std::ostringstream os;
    os << "spectral clustering: eigenvalue " << K << " of the normalised affinity is " << eig.values[K - 1]
       << " (the largest is " << eig.values[0] << "), so the affinity with bandwidth " << sc.bandwidth_
       << " does not separate " << K << " clusters; use a smaller bandwidth or fewer clusters";
    throw NumericalError(os.str());
  }
  sc.extension_ = inv_sqrt_degree.asDiagonal() * eig.vectors * eig.values.cwiseInverse().asDiagonal();

  // k-means on the landmarks' embeddings (by the same rule as every other row).
  const Matrix E = sc.embed(Lm, context);
  KMeansOptions km;
  km.clusters = K;
  km.restarts = opt.kmeans_restarts;
  km.max_iterations = opt.kmeans_max_iterations;
  KMeansResult res = kmeans(E, km, rng.derive("kmeans"), context);
  sc.centres_ = res.centres;
  sc.inertia_ = res.inertia;

  // Every row's label, renumbered by first appearance.
  std::vector<Index> labels = sc.assign(X, context);
  std::vector<Index> order(static_cast<std::size_t>(K), -1);
  Index next = 0;
  for (Index l : labels)
    if (order[static_cast<std::size_t>(l)] < 0) order[static_cast<std::size_t>(l)] = next++;
  for (Index c = 0; c < K; ++c)  // clusters no row reached keep their relative order at the end
    if (order[static_cast<std::size_t>(c)] < 0) order[static_cast<std::size_t>(c)] = next++;
  Matrix centres(K, K);
  for (Index c = 0; c < K; ++c) centres.row(order[static_cast<std::size_t>(c)]) = sc.centres_.row(c);
  sc.centres_ = centres;
  for (Index& l : labels) l = order[static_cast<std::size_t>(l)];
  sc.labels_ = std::move(labels);
  return sc;
}

Matrix SpectralClustering::embed(const Matrix& X, const Context& context) const {
  if (X.cols() != landmarks_.cols())
    throw DataError("spectral clustering: rows of dimension " + std::to_string(X.cols()) +
                    ", the clustering has " + std::to_string(landmarks_.cols()));
  const Index n = X.rows(), K = extension_.cols();
  const double inv_two_s2 = 1.0 / (2.0 * bandwidth_ * bandwidth_);
  Matrix E(n, K);
  const Index blocks = (n + kEmbedBlock - 1) / kEmbedBlock;
  parallel_for(blocks, context.threads(), [&](Index b) {
    const Index begin = b * kEmbedBlock, len = std::min(kEmbedBlock, n - begin);
    Matrix S = squared_distances(X.middleRows(begin, len), landmarks_);
    const Vector nearest = S.rowwise().minCoeff();
    S = ((S.colwise() - nearest).array() * -inv_two_s2).exp().matrix();
    Matrix e = S * extension_;
    for (Index i = 0; i < len; ++i) {
      const double norm = e.row(i).norm();
      if (!(norm > 0) || !std::isfinite(norm))
        throw NumericalError("spectral clustering: the embedding of row " + std::to_string(begin + i) +
                             " has norm " + std::to_string(norm));
      e.row(i) /= norm;
    }
    E.middleRows(begin, len) = e;
  });
  return E;
}

std::vector<Index> SpectralClustering::assign(const Matrix& X, const Context& context) const {
  return nearest_centre(embed(X, context), centres_);
}

}  // namespace kef
