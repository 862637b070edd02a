#pragma once
// k-means (Lloyd's iterations) with k-means++ seeding and restarts, deterministic for a seed: restart
// r draws from rng.derive(r), restarts run in parallel but each is serial, and the best restart is
// chosen by inertia with ties going to the lowest restart index, so results never depend on the
// thread count.
#include <vector>

#include "kef/context.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

struct KMeansOptions {
  Index clusters = 2;
  int restarts = 10;
  int max_iterations = 300;
};

struct KMeansResult {
  Matrix centres;             // clusters x D
  std::vector<Index> labels;  // nearest centre of each row (ties: the lower index)
  double inertia = 0.0;       // Σ squared distance to the assigned centre
  int iterations = 0;         // Lloyd iterations of the chosen restart
  int restart = 0;            // which restart won
  bool converged = false;     // assignments stopped changing before max_iterations
};

// Clusters the rows of X. DataError when X has fewer rows than clusters or is not finite.
//
// Seeding (Arthur & Vassilvitskii 2007): the first centre is a uniformly chosen row, each next one a
// row drawn with probability proportional to its squared distance to the nearest chosen centre (a
// uniformly chosen row when every distance is 0, i.e. fewer distinct rows than clusters). A cluster
// left empty by an update takes the row farthest from its centre (the lowest such index), so a
// converged result leaves a cluster empty only when X has fewer distinct rows than clusters.
KMeansResult kmeans(const Matrix& X, const KMeansOptions& options, const RandomStream& rng,
                    const Context& context);

// Index of the nearest centre of each row of X (ties: the lower index).
std::vector<Index> nearest_centre(const Matrix& X, const Matrix& centres);

}  // namespace kef
