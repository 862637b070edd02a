#pragma once
// Causal structure discovery with kernel tests (Flaxman et al. 2016, §5; docs/math.md §13): the PC
// algorithm (kef/pc_algorithm.hpp) whose conditional independence tests X_i ⟂ X_j | X_S are HSIC
// tests (kef/hsic_test.hpp) on GP-regression residuals of X_i and X_j on X_S
// (kef/gp_regression.hpp), each variable's Gaussian bandwidth chosen by a BandwidthRule (median,
// Bayesian kernel learning, or given).
#include <functional>
#include <string>
#include <vector>

#include "kef/bandwidth_rule.hpp"
#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/pc_algorithm.hpp"
#include "kef/types.hpp"

namespace kef {

struct CausalDiscoveryOptions {
  double alpha = 0.05;                     // the PC algorithm's level
  Index max_given = -1;                    // largest conditioning set (-1: no limit)
  BandwidthRule bandwidth;                 // for every variable and residual
  Index permutations = 200;                // HSIC permutation p-values; 0: the Gamma approximation instead
  std::string where = "causal discovery";  // names the caller in errors (e.g. "--kernel-bandwidth")
};

struct CausalDiscoveryResult {
  PcResult pc;
  Index regressions = 0;  // GP regressions fitted (each (variable, conditioning set) once)
};

// The Gaussian kernel with a given σ (a factory, since kernels come from plugins).
using GaussianKernelFactory = std::function<KernelPtr(double sigma)>;

// Runs PC on the columns of `data` (n x p, n >= 4). Each test's permutations come from a stream
// derived from the context's by the test's variables and conditioning set, so results depend on the
// seed and not on the order of the tests or the thread count. DataError for fewer than 4 rows or
// non-finite data; bandwidth errors name options.where.
CausalDiscoveryResult discover_causal_structure(const Matrix& data, const CausalDiscoveryOptions& options,
                                                const GaussianKernelFactory& gaussian,
                                                const Context& context);

}  // namespace kef
