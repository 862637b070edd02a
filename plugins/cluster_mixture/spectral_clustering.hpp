#pragma once
// Spectral clustering (Ng, Jordan & Weiss 2002) on a subsample of landmarks, with every row, of the
// training data or not, assigned by the Nyström extension of the landmarks' eigenvectors.
//
//   1. Landmarks: all rows when N <= max_points, else a seeded random subset of max_points rows.
//   2. Affinity A_ij = exp(−‖l_i − l_j‖² / (2σ²)) on the landmarks, with A_ii = 1 (not NJW's 0: with
//      the diagonal kept, the Nyström extension below reproduces a landmark's own eigenvector row,
//      so one assignment rule serves landmarks and all other rows). σ is given, or the median
//      pairwise distance of the landmarks.
//   3. The top-K eigenpairs (λ_k, u_k) of the normalised affinity L = D^{-1/2} A D^{-1/2},
//      d_i = Σ_j A_ij: Spectra's implicitly restarted Lanczos, or a dense solver for small problems.
//   4. Embedding of any point x: e_k(x) = Σ_j a_j(x) u_jk / (sqrt(d_j) λ_k), a_j(x) its affinity to
//      landmark j, then scaled to unit length (NJW's row normalisation). This is the Nyström
//      extension of u_k (λ u = L u solved for a new row) up to the factor 1/sqrt(d(x)), which the row
//      normalisation removes; so is any common factor of a(x), and the affinities are computed
//      relative to the nearest landmark, exp(−(‖x − l_j‖² − min_j' ‖x − l_j'‖²)/(2σ²)): a point far
//      from every landmark still gets a finite embedding (that of its nearest landmarks) instead of
//      0/0.
//   5. k-means++ with restarts on the landmarks' embeddings; every row's label is its nearest centre.
//   6. Labels are renumbered in order of first appearance in the rows clustered (row 0 is in cluster
//      0), so the numbering depends on the data and the seed only.
//
// Cost: O(m² D) for the affinity and O(m²) per Lanczos step with m = min(N, max_points) landmarks,
// O(N m (D + K)) for the assignment; memory m² doubles. Deterministic for a seed and independent of
// the thread count (row blocks of fixed size, k-means restarts reduced in order).
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

// Default restarts of the Lanczos solver: far more than a normalised affinity with a spectral gap
// needs (a few); each costs up to ncv − k products with the m x m matrix (ncv = max(2k + 1, 20)),
// which bounds the time spent before a matrix without a gap falls back to the dense solver.
inline constexpr int kLanczosMaxIterations = 1000;

struct SpectralClusteringOptions {
  Index clusters = 2;
  double bandwidth = 0.0;   // σ of the affinity; <= 0: median pairwise distance of the landmarks
  Index max_points = 2000;  // landmarks for the eigenproblem
  int kmeans_restarts = 10;
  int kmeans_max_iterations = 300;
  // Restarts of the implicitly restarted Lanczos solver (>= 1; kef::Error otherwise). Should it not
  // converge within them, the dense solver takes over (eigensolver_fell_back() says so).
  int lanczos_max_iterations = kLanczosMaxIterations;
};

// The top-k eigenpairs (largest algebraic eigenvalues, in decreasing order) of a symmetric matrix,
// read from its lower triangle. Spectra's Lanczos solver (at most lanczos_max_iterations restarts,
// >= 1), unless the matrix is small (n <= 100, or k >= n − 1) or force_dense is set (the brute-force
// twin in the tests); should Lanczos not converge, the dense solver is used and `fell_back` says so.
struct TopEigenpairs {
  Vector values;   // k, decreasing
  Matrix vectors;  // n x k, orthonormal columns
  bool used_dense = false;
  bool fell_back = false;  // Lanczos ran and did not converge (so used_dense)
};
TopEigenpairs top_eigenpairs(const Matrix& symmetric, Index k, bool force_dense = false,
                             int lanczos_max_iterations = kLanczosMaxIterations);

class SpectralClustering {
 public:
  // Clusters the rows of X (DataError: fewer rows than clusters, or fewer than 2 landmarks for the
  // median heuristic; NumericalError when the K-th eigenvalue is not positive, i.e. the affinity
  // does not have K directions, e.g. σ far larger than the data).
  static SpectralClustering fit(const Matrix& X, const SpectralClusteringOptions& options,
                                const RandomStream& rng, const Context& context);

  Index clusters() const { return centres_.rows(); }
  double bandwidth() const { return bandwidth_; }
  const std::vector<Index>& labels() const { return labels_; }  // of the rows fitted
  const Matrix& landmarks() const { return landmarks_; }
  const Vector& eigenvalues() const { return eigenvalues_; }
  const Matrix& centres() const { return centres_; }  // K x K, in the embedding
  double kmeans_inertia() const { return inertia_; }
  bool used_dense_eigensolver() const { return used_dense_; }
  bool eigensolver_fell_back() const { return fell_back_; }  // Lanczos did not converge

  // Unit-length Nyström embedding (N x K) and nearest-centre labels of any rows (the same for any
  // thread count).
  Matrix embed(const Matrix& X, const Context& context) const;
  std::vector<Index> assign(const Matrix& X, const Context& context) const;

 private:
  Matrix landmarks_;
  Vector eigenvalues_;
  Matrix extension_;  // m x K: u_jk / (sqrt(d_j) λ_k)
  Matrix centres_;
  double bandwidth_ = 0.0;
  double inertia_ = 0.0;
  bool used_dense_ = false;
  bool fell_back_ = false;
  std::vector<Index> labels_;
};

}  // namespace kef
