#pragma once
// Checks of a model's exact sampler against its own density, shared by the tests of every model
// that claims one (the baselines, the clustered mixtures of exactly normalised components).
//
// GridSampler draws from the density of a 2-D model by inversion on a grid of cells of side δ over
// [−L, L]² (cell probabilities from log p, then uniform within the cell): an independent route that
// uses the log density only. The caller chooses L so that the mass outside is negligible (below 1e-9
// for the tests' densities); the cell discretisation moves each draw by at most δ = 0.02, far below
// what an MMD test on a few hundred points sees.
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "kef/linalg.hpp"
#include "kef/mmd_test.hpp"
#include "kef/model.hpp"
#include "test_support.hpp"

namespace kef::test {

class GridSampler {
 public:
  explicit GridSampler(const Model& m, double L = 8.0, double delta = 0.02) : delta_(delta) {
    const Index g = static_cast<Index>(std::llround(2 * L / delta));
    cells_.resize(g * g, 2);
    for (Index i = 0; i < g; ++i)
      for (Index j = 0; j < g; ++j) {
        cells_(i * g + j, 0) = -L + (static_cast<double>(i) + 0.5) * delta;
        cells_(i * g + j, 1) = -L + (static_cast<double>(j) + 0.5) * delta;
      }
    const Vector lp = m.log_unnormalized(cells_);
    cdf_.resize(static_cast<std::size_t>(g * g));
    double acc = 0.0;
    for (Index c = 0; c < g * g; ++c) cdf_[static_cast<std::size_t>(c)] = acc += std::exp(lp[c]);
  }
  Matrix draw(Index n, RandomStream& rng) const {
    Matrix out(n, 2);
    for (Index k = 0; k < n; ++k) {
      const double u = rng.uniform() * cdf_.back();
      const auto c =
          std::min<Index>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin(), cells_.rows() - 1);
      out(k, 0) = cells_(c, 0) + (rng.uniform() - 0.5) * delta_;
      out(k, 1) = cells_(c, 1) + (rng.uniform() - 0.5) * delta_;
    }
    return out;
  }

 private:
  double delta_;
  Matrix cells_;
  std::vector<double> cdf_;
};

// p-value of the MMD permutation test (200 permutations, Gaussian kernel at the median pairwise
// distance of the pooled 2-D rows) of X against Y.
inline double mmd_p_value(const Matrix& X, const Matrix& Y, std::uint64_t seed) {
  const double sigma = median_pairwise_distance((Matrix(X.rows() + Y.rows(), 2) << X, Y).finished());
  const KernelPtr k = plugin_registry().make_kernel(
      config_from("type = \"gaussian\"\nsigma = " + std::to_string(sigma)), BuildContext{});
  RandomStream rng(seed, "permutations");
  return mmd_test(*k, X, Y, 200, rng, Context(seed, 2), 0, false).p_value;
}

// Draws against grid-inversion draws from a density: 10 independent pairs of n draws, each tested at
// level α = 0.05, the draws of repetition r from RandomStream(seed, "sampler").derive(r), the grid's
// from RandomStream(seed, "grid").derive(r), the permutations from seed first_permutation_seed + r.
// Under the null each repetition rejects with probability <= 0.05, so 4 or more rejections of 10 has
// probability P(Binomial(10, 0.05) >= 4) ≈ 1e-3: callers checking a correct sampler compare the count
// with 3; power checks (draws made wrong on purpose) expect most of the 10. (One repetition at
// α = 0.01 would fail for a correct sampler once in 100 seeds; the count does not hinge on one lucky
// or unlucky seed.)
inline int rejections_against_grid(const std::function<Matrix(RandomStream&)>& draw, const GridSampler& grid,
                                   Index n, std::uint64_t seed, std::uint64_t first_permutation_seed = 100) {
  int rejections = 0;
  for (std::uint64_t rep = 0; rep < 10; ++rep) {
    RandomStream a = RandomStream(seed, "sampler").derive(rep), b = RandomStream(seed, "grid").derive(rep);
    const Matrix S = draw(a);
    if (mmd_p_value(S, grid.draw(n, b), first_permutation_seed + rep) <= 0.05) ++rejections;
  }
  return rejections;
}

// The model's own sampler, n draws a repetition.
inline int sampler_rejections(const Model& model, const GridSampler& grid, Index n, std::uint64_t seed) {
  return rejections_against_grid([&](RandomStream& rng) { return model.sample(n, rng); }, grid, n, seed);
}

}  // namespace kef::test
