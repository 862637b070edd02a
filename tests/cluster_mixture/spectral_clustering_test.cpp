// Spectral clustering and k-means (framework building blocks): recovery of well-separated groups,
// determinism across thread counts, the Nyström assignment against clustering every row, Spectra's
// Lanczos against a dense eigensolver, and the error paths.
#include "kef/spectral_clustering.hpp"

#include <gtest/gtest.h>

#include <cmath>
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
  opt.threads = 1;
  const KMeansResult a = kmeans(data.X, opt, rng);
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
    opt.threads = threads;
    const KMeansResult b = kmeans(data.X, opt, rng);
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
  const KMeansResult r = kmeans(X, opt, RandomStream(1, "dup"));
  EXPECT_TRUE(r.centres.allFinite());
  EXPECT_EQ(r.inertia, 0.0);
  opt.clusters = 7;
  EXPECT_THROW(kmeans(X, opt, RandomStream(1, "dup")), DataError);
}

TEST(SpectralClustering, RecoversSeparatedBlobsExactlyForAnyThreadCount) {
  const Labelled data = blobs(three_centres(), 0.6, 900, 2);
  SpectralClusteringOptions opt;
  opt.clusters = 3;
  opt.threads = 1;
  const RandomStream rng(11, "sc");
  const SpectralClustering a = SpectralClustering::fit(data.X, opt, rng);
  bool bij = false;
  EXPECT_EQ(disagreement(a.labels(), data.truth, 3, &bij), 0.0);
  EXPECT_TRUE(bij);
  EXPECT_EQ(a.labels()[0], 0);               // numbered by first appearance
  EXPECT_FALSE(a.used_dense_eigensolver());  // 900 landmarks: the Lanczos path
  const Matrix Ea = a.embed(data.X, 1);
  for (int threads : {2, 3, 8}) {
    opt.threads = threads;
    const SpectralClustering b = SpectralClustering::fit(data.X, opt, rng);
    EXPECT_EQ(b.labels(), a.labels()) << threads;
    EXPECT_EQ(b.centres(), a.centres()) << threads;
    EXPECT_EQ(b.embed(data.X, threads), Ea) << threads;  // bitwise
  }
  // New rows near a centre go to that blob's cluster.
  Matrix probe(3, 2);
  probe << 0.1, -0.2, 8.2, 0.1, -0.1, 7.9;
  const std::vector<Index> p = a.assign(probe);
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
  const SpectralClustering sc = SpectralClustering::fit(data.X, opt, RandomStream(1, "rings"));
  bool bij = false;
  EXPECT_EQ(disagreement(sc.labels(), data.truth, 2, &bij), 0.0);
  EXPECT_TRUE(bij);
  // k-means in the input space cuts the rings by a line: the embedding is what makes this work.
  KMeansOptions km;
  km.clusters = 2;
  const KMeansResult plain = kmeans(data.X, km, RandomStream(1, "plain"));
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
    const SpectralClustering all = SpectralClustering::fit(data.X, opt, RandomStream(2, "all"));
    opt.max_points = data.X.rows() / (problem == 0 ? 4 : 3);
    const SpectralClustering some = SpectralClustering::fit(data.X, opt, RandomStream(2, "some"));
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

TEST(SpectralClustering, BadInputAndDegenerateAffinities) {
  const Labelled data = blobs(three_centres(), 0.5, 200, 7);
  SpectralClusteringOptions opt;
  opt.clusters = 201;
  EXPECT_THROW(SpectralClustering::fit(data.X, opt, RandomStream(1, "x")), DataError);
  opt.clusters = 0;
  EXPECT_THROW(SpectralClustering::fit(data.X, opt, RandomStream(1, "x")), DataError);
  // σ far above the data's scale: A ≈ 11ᵀ has one direction, not three.
  opt.clusters = 3;
  opt.bandwidth = 1e6;
  try {
    SpectralClustering::fit(data.X, opt, RandomStream(1, "x"));
    FAIL() << "expected a NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("smaller bandwidth"), std::string::npos) << e.what();
  }
  // Non-finite rows.
  Matrix bad = data.X;
  bad(5, 1) = std::nan("");
  opt.bandwidth = 0;
  EXPECT_THROW(SpectralClustering::fit(bad, opt, RandomStream(1, "x")), DataError);
}

}  // namespace
}  // namespace kef
