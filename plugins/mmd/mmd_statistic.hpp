#pragma once
// The unbiased MMD² U-statistic between two samples and its permutation null (docs/math.md §8), computed
// from row blocks of the pooled Gram matrix so memory stays O(block · N), never O(N²).
#include <limits>

#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::mmd {

struct MmdTest {
  double mmd2 = 0;   // unbiased U-statistic on the given split of the pooled sample
  Vector permuted;   // the statistic under each random relabelling (size: permutations)
  double p_value = std::numeric_limits<double>::quiet_NaN();  // (1 + #{permuted >= mmd2}) / (1 + P)
};

// X (n x D) against Y (m x D), n, m >= 2. Permutations draw from rng. Row blocks of the pooled sample
// (block_rows, 0: chosen from N alone) run on context.threads() threads and are reduced in block order, so
// the result does not depend on the thread count.
MmdTest mmd_test(const Kernel& kernel, const Matrix& X, const Matrix& Y, Index permutations,
                 RandomStream& rng, const Context& context, Index block_rows = 0);

}  // namespace kef::mmd
