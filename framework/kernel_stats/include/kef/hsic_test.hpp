#pragma once
// The kernel independence test (docs/math.md §8.10): HSIC between paired samples X (n x Dx) and
// Y (n x Dy), biased and unbiased, with a permutation null (Y's rows permuted against X's) and a
// Gamma approximation of the biased statistic's null. Both centred Gram matrices are formed once
// (memory O(n²)); a permutation only re-indexes one of them.
#include <limits>
#include <vector>

#include "kef/context.hpp"
#include "kef/gamma_null.hpp"
#include "kef/kernel.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

struct HsicTest {
  double hsic = 0;           // biased HSIC_b = tr(K̃ L̃) / n², K̃ = HKH, L̃ = HLH
  double hsic_unbiased = 0;  // the unbiased estimator of Song et al. (2012)
  Vector permuted;           // HSIC_b with Y's rows permuted, one entry per permutation
  double p_value = std::numeric_limits<double>::quiet_NaN();  // (1 + #{permuted >= hsic}) / (1 + P)
  GammaNull gamma;  // null law of hsic: permutation mean, asymptotic variance (docs/math.md §8.10)
  double gamma_p_value = std::numeric_limits<double>::quiet_NaN();
};

// Permutations come in fixed blocks of kHsicPermutationBlock; block b draws its permutations (full
// Fisher–Yates shuffles) from rng.derive(b), so blocks run on any number of threads with the same
// result. n >= 4 rows in both (the unbiased estimator divides by n − 3). with_gamma = false skips the Gamma
// approximation (and its degenerate-moments error).
inline constexpr Index kHsicPermutationBlock = 16;
HsicTest hsic_test(const Kernel& kernel_x, const Kernel& kernel_y, const Matrix& X, const Matrix& Y,
                   Index permutations, const RandomStream& rng, const Context& context,
                   bool with_gamma = true);

// HSIC_b for the pairing (x_i, y_perm[i]) from centred Gram matrices: Σ_ij K̃_ij L̃_{perm i, perm j} / n²,
// in a fixed summation order (the observed statistic is the identity permutation of the same loop).
double hsic_permuted(const Matrix& Kc, const Matrix& Lc, const std::vector<Index>& perm);

}  // namespace kef
