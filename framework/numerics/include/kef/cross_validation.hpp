#pragma once
// K-fold cross-validation folds: the seeded assignment of n rows to K folds that the conditional
// density estimators (lscde, eps_kde) share, so their hyperparameter searches split the same way.
#include <vector>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

// fold[i] in {0, ..., K−1} for each row i: a uniformly random permutation (Fisher–Yates on `rng`)
// dealt round-robin, so the fold sizes differ by at most one. Error unless 2 <= K <= n.
std::vector<Index> random_folds(Index n, Index K, RandomStream& rng);

// The rows of fold k (in increasing order) and the rows of the other folds.
std::vector<Index> rows_in_fold(const std::vector<Index>& folds, Index k);
std::vector<Index> rows_outside_fold(const std::vector<Index>& folds, Index k);

// A candidate grid for a search: `points` values 10^lo, …, 10^hi evenly spaced in the exponent
// (points >= 2).
std::vector<double> log_grid(double lo, double hi, int points);

}  // namespace kef
