#include "kef/kmeans.hpp"

#include <limits>
#include <string>

#include "kef/categorical.hpp"
#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

// Squared distance of every row to its nearest centre, and that centre (ties: the lower index).
// Direct differences rather than ‖x‖² + ‖c‖² − 2xᵀc: k-means compares nearly equal distances, and
// the expanded form loses digits when rows are far from the origin.
void assign(const Matrix& X, const Matrix& centres, std::vector<Index>& labels, Vector& dist2) {
  const Index n = X.rows(), k = centres.rows();
  labels.resize(static_cast<std::size_t>(n));
  dist2.resize(n);
  for (Index i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    Index arg = 0;
    for (Index c = 0; c < k; ++c) {
      const double d = (X.row(i) - centres.row(c)).squaredNorm();
      if (d < best) best = d, arg = c;
    }
    labels[static_cast<std::size_t>(i)] = arg;
    dist2[i] = best;
  }
}

Matrix seed_plus_plus(const Matrix& X, Index k, RandomStream& rng) {
  const Index n = X.rows();
  Matrix centres(k, X.cols());
  centres.row(0) = X.row(static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(n))));
  Vector d2(n);
  for (Index i = 0; i < n; ++i) d2[i] = (X.row(i) - centres.row(0)).squaredNorm();
  for (Index c = 1; c < k; ++c) {
    const double total = d2.sum();
    const Index pick = total > 0 ? draw_categorical({d2.data(), static_cast<std::size_t>(n)}, rng, total)
                                 : static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(n)));
    centres.row(c) = X.row(pick);
    for (Index i = 0; i < n; ++i) d2[i] = std::min(d2[i], (X.row(i) - centres.row(c)).squaredNorm());
  }
  return centres;
}

KMeansResult lloyd(const Matrix& X, Matrix centres, int max_iterations) {
  const Index n = X.rows(), k = centres.rows();
  KMeansResult r;
  std::vector<Index> labels, previous;
  Vector d2;
  assign(X, centres, labels, d2);
  for (int it = 1; it <= max_iterations; ++it) {
    // Update: means of the assigned rows, in row order.
    Matrix sums = Matrix::Zero(k, X.cols());
    std::vector<Index> counts(static_cast<std::size_t>(k), 0);
    for (Index i = 0; i < n; ++i) {
      const auto c = labels[static_cast<std::size_t>(i)];
      sums.row(c) += X.row(i);
      ++counts[static_cast<std::size_t>(c)];
    }
    std::vector<char> taken(static_cast<std::size_t>(n), 0);
    for (Index c = 0; c < k; ++c) {
      if (counts[static_cast<std::size_t>(c)] > 0) {
        centres.row(c) = sums.row(c) / static_cast<double>(counts[static_cast<std::size_t>(c)]);
        continue;
      }
      // Empty cluster: the row farthest from its centre (not already moved this round).
      Index far = -1;
      for (Index i = 0; i < n; ++i)
        if (!taken[static_cast<std::size_t>(i)] && (far < 0 || d2[i] > d2[far])) far = i;
      taken[static_cast<std::size_t>(far)] = 1;
      centres.row(c) = X.row(far);
      d2[far] = 0.0;
    }
    previous = labels;
    assign(X, centres, labels, d2);
    r.iterations = it;
    if (labels == previous) {
      r.converged = true;
      break;
    }
  }
  r.centres = std::move(centres);
  r.labels = std::move(labels);
  r.inertia = d2.sum();
  return r;
}

}  // namespace

std::vector<Index> nearest_centre(const Matrix& X, const Matrix& centres) {
  std::vector<Index> labels;
  Vector d2;
  assign(X, centres, labels, d2);
  return labels;
}

KMeansResult kmeans(const Matrix& X, const KMeansOptions& opt, const RandomStream& rng,
                    const Context& context) {
  if (opt.clusters < 1) throw DataError("k-means: the number of clusters must be at least 1");
  if (X.rows() < opt.clusters)
    throw DataError("k-means: " + std::to_string(opt.clusters) + " clusters but only " +
                    std::to_string(X.rows()) + " rows");
  if (!X.allFinite()) throw DataError("k-means: the points are not all finite");
  const int restarts = std::max(opt.restarts, 1);
  std::vector<KMeansResult> runs(static_cast<std::size_t>(restarts));
  parallel_for(restarts, context.threads(), [&](Index r) {
    RandomStream stream = rng.derive(static_cast<std::uint64_t>(r));
    KMeansResult run = lloyd(X, seed_plus_plus(X, opt.clusters, stream), std::max(opt.max_iterations, 1));
    run.restart = static_cast<int>(r);
    runs[static_cast<std::size_t>(r)] = std::move(run);
  });
  std::size_t best = 0;
  for (std::size_t r = 1; r < runs.size(); ++r)
    if (runs[r].inertia < runs[best].inertia) best = r;
  return std::move(runs[best]);
}

}  // namespace kef
