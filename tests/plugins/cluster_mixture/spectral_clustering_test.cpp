// Spectral clustering and k-means (framework building blocks): recovery of well-separated groups,
// determinism across thread counts, the Nyström assignment against clustering every row, Spectra's
// Lanczos against a dense eigensolver and a known spectrum, the dense fallback when Lanczos does not
// converge, and the error paths.
#include "spectral_clustering.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "kef/error.hpp"
#include "kef/kmeans.hpp"
#include "kef/linalg.hpp"

namespace kef {
namespace {

struct Labelled {
  Matrix X;
  std::vector<Index> truth;
};

// Isotropic Gaussian blobs, rows interleaved (row i in blob i mod K) so no order gives the answer.
Labelled blobs(const Matrix& centres, double std, Index n, std::uint64_t seed) {
  RandomStream rng(seed, "blobs");
  Labelled out{Matrix(n, centres.cols()), std::vector<Index>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    const Index k = i % centres.rows();
    out.truth[static_cast<std::size_t>(i)] = k;
    for (Index d = 0; d < centres.cols(); ++d) out.X(i, d) = centres(k, d) + std * rng.normal();
  }
  return out;
}

// Concentric rings of the given radii, radial noise `noise`, uniform angle.
Labelled rings(const std::vector<double>& radii, double noise, Index n, std::uint64_t seed) {
  RandomStream rng(seed, "rings");
  Labelled out{Matrix(n, 2), std::vector<Index>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i % static_cast<Index>(radii.size()));
    const double r = radii[k] + noise * rng.normal(), t = 2 * M_PI * rng.uniform();
    out.X(i, 0) = r * std::cos(t);
    out.X(i, 1) = r * std::sin(t);
    out.truth[static_cast<std::size_t>(i)] = static_cast<Index>(k);
  }
  return out;
}

// Fraction of rows on which two labelings disagree after the best matching of found labels to true
// labels (each found label maps to its most frequent true label; the map must be a bijection for
// an exact recovery).
double disagreement(const std::vector<Index>& found, const std::vector<Index>& truth, Index K,
                    bool* bijective) {
  std::vector<std::map<Index, Index>> votes(static_cast<std::size_t>(K));
  for (std::size_t i = 0; i < found.size(); ++i) ++votes[static_cast<std::size_t>(found[i])][truth[i]];
  std::vector<Index> map(static_cast<std::size_t>(K), -1);
  std::vector<int> used(static_cast<std::size_t>(K), 0);
  for (Index k = 0; k < K; ++k) {
    Index best = -1, count = -1;
    for (const auto& [t, c] : votes[static_cast<std::size_t>(k)])
      if (c > count) best = t, count = c;
    map[static_cast<std::size_t>(k)] = best;
    if (best >= 0) ++used[static_cast<std::size_t>(best)];
  }
  *bijective = std::all_of(used.begin(), used.end(), [](int u) { return u == 1; });
  Index wrong = 0;
  for (std::size_t i = 0; i < found.size(); ++i)
    if (map[static_cast<std::size_t>(found[i])] != truth[i]) ++wrong;
  return static_cast<double>(wrong) / static_cast<double>(found.size());
}

Matrix three_centres() {
  Matrix C(3, 2);
  C << 0, 0, 8, 0, 0, 8;
  return C;
}

TEST(KMeans, RecoversSeparatedBlobsAndIsThreadIndependent) {
  const Labelled data = blobs(three_centres(), 0.5, 600, 1);
  KMeansOptions opt;
  opt.clusters = 3;
  opt.restarts = 5;
  const RandomStream rng(7, "kmeans");
  const KMeansResult a = kmeans(data.X, opt, rng, Context(1, 1));
  bool bij = false;
  EXPECT_EQ(disagreement(a.labels, data.truth, 3, &bij), 0.0);
  EXPECT_TRUE(bij);
  EXPECT_TRUE(a.converged);
  // Labels are the nearest centres of the returned centres, and the inertia is their distance sum.
  EXPECT_EQ(nearest_centre(data.X, a.centres), a.labels);
  double inertia = 0;
  for (Index i = 0; i < data.X.rows(); ++i)
    inertia += (data.X.row(i) - a.centres.row(a.labels[static_cast<std::size_t>(i)])).squaredNorm();
  EXPECT_NEAR(a.inertia, inertia, 1e-9 * inertia);
  for (int threads : {2, 3}) {
    const KMeansResult b = kmeans(data.X, opt, rng, Context(1, threads));
    EXPECT_EQ(b.labels, a.labels) << threads;
    EXPECT_EQ(b.centres, a.centres) << threads;  // bitwise
    EXPECT_EQ(b.restart, a.restart);
  }
}

TEST(KMeans, DuplicateRowsAndBadInput) {
  // Two distinct rows, three clusters: seeding falls back to uniform picks, nothing is NaN.
  Matrix X(6, 1);
  X << 0, 0, 0, 1, 1, 1;
  KMeansOptions opt;
  opt.clusters = 3;
  const KMeansResult r = kmeans(X, opt, RandomStream(1, "dup"), Context(1, 1));
  EXPECT_TRUE(r.centres.allFinite());
  EXPECT_EQ(r.inertia, 0.0);
  opt.clusters = 7;
  EXPECT_THROW(kmeans(X, opt, RandomStream(1, "dup"), Context(1, 1)), DataError);
}

TEST(SpectralClustering, RecoversSeparatedBlobsExactlyForAnyThreadCount) {
  const Labelled data = blobs(three_centres(), 0.6, 900, 2);
  SpectralClusteringOptions opt;
  opt.clusters = 3;
  const RandomStream rng(11, "sc");
  const SpectralClustering a = SpectralClustering::fit(data.X, opt, rng, Context(1, 1));
  bool bij = false;
  EXPECT_EQ(disagreement(a.labels(), data.truth, 3, &bij), 0.0);
  EXPECT_TRUE(bij);
  EXPECT_EQ(a.labels()[0], 0);               // numbered by first appearance
  EXPECT_FALSE(a.used_dense_eigensolver());  // 900 landmarks: the Lanczos path
  const Matrix Ea = a.embed(data.X, Context(1, 1));
  for (int threads : {2, 3, 8}) {
    const SpectralClustering b = SpectralClustering::fit(data.X, opt, rng, Context(1, threads));
    EXPECT_EQ(b.labels(), a.labels()) << threads;
    EXPECT_EQ(b.centres(), a.centres()) << threads;
    EXPECT_EQ(b.embed(data.X, Context(1, threads)), Ea) << threads;  // bitwise
  }
  // New rows near a centre go to that blob's cluster.
  Matrix probe(3, 2);
  probe << 0.1, -0.2, 8.2, 0.1, -0.1, 7.9;
  const std::vector<Index> p = a.assign(probe, Context(1, 1));
  for (Index k = 0; k < 3; ++k) {
    // The cluster of the first training row of blob k.
    EXPECT_EQ(p[static_cast<std::size_t>(k)], a.labels()[static_cast<std::size_t>(k)]);
  }
}

TEST(SpectralClustering, SeparatesConcentricRingsWhereKMeansCannot) {
  const Labelled data = rings({1.0, 3.0}, 0.1, 800, 3);
  SpectralClusteringOptions opt;
  opt.clusters = 2;
  opt.bandwidth = 0.3;  // below the ring gap (about 2 − 4·0.1), above the spacing of neighbours
  const SpectralClustering sc = SpectralClustering::fit(data.X, opt, RandomStream(1, "rings"), Context(1, 1));
  bool bij = false;
  EXPECT_EQ(disagreement(sc.labels(), data.truth, 2, &bij), 0.0);
  EXPECT_TRUE(bij);
  // k-means in the input space cuts the rings by a line: the embedding is what makes this work.
  KMeansOptions km;
  km.clusters = 2;
  const KMeansResult plain = kmeans(data.X, km, RandomStream(1, "plain"), Context(1, 1));
  EXPECT_GT(disagreement(plain.labels, data.truth, 2, &bij), 0.2);
}

// The brute-force twin of the landmark path: clustering every row against clustering a quarter
// or a third of them and assigning the rest by the Nyström extension must give the same partition.
TEST(SpectralClustering, NystromAssignmentAgreesWithClusteringEveryRow) {
  for (int problem = 0; problem < 2; ++problem) {
    // The rings need landmarks every few tenths along the outer ring (circumference 31), or it
    // breaks into arcs at this bandwidth: 1200 rows, a third of them landmarks.
    const Labelled data =
        problem == 0 ? blobs(three_centres(), 0.8, 480, 4) : rings({1.0, 3.0, 5.0}, 0.1, 1200, 5);
    SpectralClusteringOptions opt;
    opt.clusters = 3;
    if (problem == 1) opt.bandwidth = 0.4;
    opt.max_points = data.X.rows();
    const SpectralClustering all =
        SpectralClustering::fit(data.X, opt, RandomStream(2, "all"), Context(1, 1));
    opt.max_points = data.X.rows() / (problem == 0 ? 4 : 3);
    const SpectralClustering some =
        SpectralClustering::fit(data.X, opt, RandomStream(2, "some"), Context(1, 1));
    EXPECT_EQ(all.landmarks().rows(), data.X.rows());
    EXPECT_EQ(some.landmarks().rows(), opt.max_points);
    // Both numbered by first appearance, so equal partitions are equal label vectors.
    EXPECT_EQ(some.labels(), all.labels()) << "problem " << problem;
    bool bij = false;
    EXPECT_EQ(disagreement(all.labels(), data.truth, 3, &bij), 0.0) << "problem " << problem;
  }
}

TEST(SpectralClustering, LanczosMatchesTheDenseEigensolver) {
  // A normalised Gaussian affinity with a spectral gap (two loose blobs), 300 x 300.
  Matrix C(2, 2);
  C << 0, 0, 3, 0;
  const Labelled data = blobs(C, 1.0, 300, 6);
  Matrix A = (-squared_distances(data.X, data.X).array() / 2.0).exp().matrix();
  A = (0.5 * (A + A.transpose())).eval();
  const Vector s = A.rowwise().sum().array().rsqrt().matrix();
  const Matrix L = s.asDiagonal() * A * s.asDiagonal();
  for (Index k : {1, 2, 4}) {
    const TopEigenpairs lanczos = top_eigenpairs(L, k);
    const TopEigenpairs dense = top_eigenpairs(L, k, true);
    ASSERT_FALSE(lanczos.used_dense);
    ASSERT_TRUE(dense.used_dense);
    // Spectra converges to a relative tolerance of 1e-10 on the Ritz values.
    EXPECT_LT((lanczos.values - dense.values).cwiseAbs().maxCoeff(), 1e-9) << k;
    // Eigenvectors up to sign: compare the projectors (the eigenvalues here are simple).
    const Matrix P1 = lanczos.vectors * lanczos.vectors.transpose();
    const Matrix P2 = dense.vectors * dense.vectors.transpose();
    EXPECT_LT((P1 - P2).cwiseAbs().maxCoeff(), 1e-6) << k;
    EXPECT_LT((L * lanczos.vectors - lanczos.vectors * lanczos.values.asDiagonal()).norm(), 1e-8) << k;
  }
}

// S = Q diag(λ) Qᵀ with a seeded random orthogonal Q and a known spectrum: top eigenvalues 1, 0.95,
// 0.9, the other n − 3 equally spaced in [0, 0.85].
Matrix known_spectrum(Index n, Vector* eigenvalues, Matrix* eigenvectors) {
  RandomStream rng(31, "spectrum");
  const Eigen::HouseholderQR<Matrix> qr(rng.normal_matrix(n, n));
  const Matrix Q = qr.householderQ();
  Vector lambda(n);
  lambda.head(3) << 1.0, 0.95, 0.9;
  for (Index i = 3; i < n; ++i)
    lambda[i] = 0.85 * static_cast<double>(n - 1 - i) / static_cast<double>(n - 4);
  *eigenvalues = lambda;
  *eigenvectors = Q;
  const Matrix S = Q * lambda.asDiagonal() * Q.transpose();
  return (0.5 * (S + S.transpose())).eval();
}

// max_k min(‖u_k − v_k‖, ‖u_k + v_k‖): the columns' distance up to sign.
double column_distance_up_to_sign(const Matrix& U, const Matrix& V) {
  double worst = 0;
  for (Index c = 0; c < U.cols(); ++c)
    worst = std::max(worst, std::min((U.col(c) - V.col(c)).norm(), (U.col(c) + V.col(c)).norm()));
  return worst;
}

// The dense fallback: with one restart, Lanczos has ncv = 20 steps, after which the Chebyshev bound
// on the third Ritz vector's angle (gap 0.05 against a spread of 0.85 below it) is 1/T_17(1 + 2·0.05/0.85)
// ≈ 6e-4, far above the 1e-10 stopping tolerance; so top_eigenpairs must hand over to the dense solver
// and say so. With the default limit the same matrix converges in Lanczos. Both are checked against the
// known spectrum and against each other.
TEST(SpectralClustering, DenseFallbackWhenLanczosDoesNotConvergeAndBothMatchTheKnownSpectrum) {
  const Index n = 300, k = 3;
  Vector lambda;
  Matrix Q;
  const Matrix S = known_spectrum(n, &lambda, &Q);
  const double eps = std::numeric_limits<double>::epsilon();
  // Dense: forming QΛQᵀ (Q orthogonal to O(nε)) and the solver's backward error (Householder
  // tridiagonalisation, implicit QR) each perturb S by O(nε‖S‖), ‖S‖ = 1. Weyl bounds the
  // eigenvalue error by that; Davis–Kahan the eigenvector angle by it over the gap 0.05, and the
  // distance up to sign is at most √2 times the sine of the angle. A factor 10 covers the constants.
  const double dense_value_tol = 10.0 * static_cast<double>(n) * eps;
  const double dense_vector_tol = std::sqrt(2.0) * dense_value_tol / 0.05;
  // Lanczos stops when every Ritz residual ‖S v − θ v‖ <= 1e-10 |θ|: the Ritz value is within the
  // residual of an eigenvalue, the vector's sine within residual / gap, on top of rounding as above.
  const double lanczos_value_tol = 1e-10 + dense_value_tol;
  const double lanczos_vector_tol = std::sqrt(2.0) * 1e-10 / 0.05 + dense_vector_tol;

  const TopEigenpairs dense = top_eigenpairs(S, k, true);
  ASSERT_TRUE(dense.used_dense);
  EXPECT_FALSE(dense.fell_back);
  EXPECT_LT((dense.values - lambda.head(k)).cwiseAbs().maxCoeff(), dense_value_tol);
  EXPECT_LT(column_distance_up_to_sign(dense.vectors, Q.leftCols(k)), dense_vector_tol);

  const TopEigenpairs fallback = top_eigenpairs(S, k, false, 1);
  EXPECT_TRUE(fallback.used_dense);
  EXPECT_TRUE(fallback.fell_back);
  // The fallback is the dense solver on the same matrix: bitwise its result.
  EXPECT_EQ(fallback.values, dense.values);
  EXPECT_EQ(fallback.vectors, dense.vectors);

  const TopEigenpairs lanczos = top_eigenpairs(S, k);
  ASSERT_FALSE(lanczos.used_dense);
  EXPECT_FALSE(lanczos.fell_back);
  EXPECT_LT((lanczos.values - lambda.head(k)).cwiseAbs().maxCoeff(), lanczos_value_tol);
  EXPECT_LT(column_distance_up_to_sign(lanczos.vectors, Q.leftCols(k)), lanczos_vector_tol);
  EXPECT_LT((lanczos.values - dense.values).cwiseAbs().maxCoeff(), lanczos_value_tol + dense_value_tol);
  EXPECT_LT(column_distance_up_to_sign(lanczos.vectors, dense.vectors),
            lanczos_vector_tol + dense_vector_tol);

  EXPECT_THROW(top_eigenpairs(S, k, false, 0), Error);
}

// The same fallback inside the clustering: an iteration limit of 1 gives the dense solver's
// eigenpairs, hence the same partition as with the converged Lanczos solver, and is flagged.
TEST(SpectralClustering, ClusteringFallsBackToTheDenseSolverAndFlagsIt) {
  // Rings at a bandwidth well below their radii: the eigenvalues after the top two (≈ 1, one per
  // ring) also approach 1 (slow modes along each ring), too close for one Lanczos restart.
  const Labelled data = rings({1.0, 3.0}, 0.1, 600, 8);
  SpectralClusteringOptions opt;
  opt.clusters = 2;
  opt.bandwidth = 0.3;
  const RandomStream rng(3, "fallback");
  const SpectralClustering lanczos = SpectralClustering::fit(data.X, opt, rng, Context(1, 1));
  EXPECT_FALSE(lanczos.used_dense_eigensolver());
  EXPECT_FALSE(lanczos.eigensolver_fell_back());
  opt.lanczos_max_iterations = 1;
  const SpectralClustering dense = SpectralClustering::fit(data.X, opt, rng, Context(1, 1));
  EXPECT_TRUE(dense.used_dense_eigensolver());
  EXPECT_TRUE(dense.eigensolver_fell_back());
  EXPECT_EQ(dense.labels(), lanczos.labels());
  bool bij = false;
  EXPECT_EQ(disagreement(dense.labels(), data.truth, 2, &bij), 0.0);
  EXPECT_TRUE(bij);
  // Lanczos' Ritz values are within 1e-10 (relative, λ <= 1) of the eigenvalues, the dense ones
  // within O(mε) of them.
  EXPECT_LT((dense.eigenvalues() - lanczos.eigenvalues()).cwiseAbs().maxCoeff(), 2e-10);
  opt.lanczos_max_iterations = 0;
  try {
    SpectralClustering::fit(data.X, opt, rng, Context(1, 1));
    FAIL() << "expected a kef::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lanczos_max_iterations"), std::string::npos) << e.what();
  }
}

TEST(SpectralClustering, BadInputAndDegenerateAffinities) {
  const Labelled data = blobs(three_centres(), 0.5, 200, 7);
  SpectralClusteringOptions opt;
  opt.clusters = 201;
  EXPECT_THROW(SpectralClustering::fit(data.X, opt, RandomStream(1, "x"), Context(1, 1)), DataError);
  opt.clusters = 0;
  EXPECT_THROW(SpectralClustering::fit(data.X, opt, RandomStream(1, "x"), Context(1, 1)), DataError);
  // σ far above the data's scale: A ≈ 11ᵀ has one direction, not three.
  opt.clusters = 3;
  opt.bandwidth = 1e6;
  try {
    SpectralClustering::fit(data.X, opt, RandomStream(1, "x"), Context(1, 1));
    FAIL() << "expected a NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("smaller bandwidth"), std::string::npos) << e.what();
  }
  // Non-finite rows.
  Matrix bad = data.X;
  bad(5, 1) = std::nan("");
  opt.bandwidth = 0;
  EXPECT_THROW(SpectralClustering::fit(bad, opt, RandomStream(1, "x"), Context(1, 1)), DataError);
}

}  // namespace
}  // namespace kef
