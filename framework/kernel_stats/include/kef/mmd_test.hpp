#pragma once
// The kernel two-sample test (docs/math.md §8.7, §8.9): MMD² between two samples, unbiased and
// biased, with a permutation null and a Gamma approximation of the biased statistic's null, computed
// from row blocks of the pooled Gram matrix so memory stays O(block · N), never O(N²). Shared by the
// evaluators `mmd` and `mmd_two_sample` and by `kef test two-sample`.
#include <limits>

#include "kef/context.hpp"
#include "kef/gamma_null.hpp"
#include "kef/kernel.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

struct MmdTest {
  double mmd2 = 0;         // unbiased U-statistic on the given split of the pooled sample
  double mmd2_biased = 0;  // biased V-statistic ‖μ̂_X − μ̂_Y‖² (diagonal terms included)
  Vector permuted;         // the unbiased statistic under each random relabelling (size: permutations)
  Vector permuted_biased;  // the biased one under the same relabellings
  double p_value = std::numeric_limits<double>::quiet_NaN();         // (1 + #{permuted >= mmd2}) / (1 + P)
  double p_value_biased = std::numeric_limits<double>::quiet_NaN();  // the same for the biased statistic
  GammaNull gamma;  // null law of mmd2_biased matched to its permutation moments (docs/math.md §8.9)
  double gamma_p_value = std::numeric_limits<double>::quiet_NaN();
};

// X (n x D) against Y (m x D), n, m >= 2. Permutations draw from rng, in order, before any Gram block is
// formed: one n-subset per relabelling by a partial Fisher–Yates shuffle. Every relabelling's statistic
// comes from the same Gram blocks (the Gram matrix is formed once, never per permutation). Row blocks of
// the pooled sample (block_rows, 0: chosen from N alone) run on context.threads() threads and are
// reduced in block order, so the result does not depend on the thread count. with_gamma = false skips
// the Gamma approximation (and its degenerate-moments error).
MmdTest mmd_test(const Kernel& kernel, const Matrix& X, const Matrix& Y, Index permutations,
                 RandomStream& rng, const Context& context, Index block_rows = 0, bool with_gamma = true);

}  // namespace kef
