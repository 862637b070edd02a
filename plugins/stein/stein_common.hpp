#pragma once
// What the Stein evaluators (FSSD, relative FSSD, KSD) share: the split they read, scores checked
// row by row, base kernels built through the registry, Monte Carlo p-values, and a chunked reduction
// whose result does not depend on the thread count.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/context.hpp"
#include "kef/dataset.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"
#include "kef/parallel.hpp"

namespace kef {
class Registry;
}

namespace kef::stein {

// Rows per work item of every chunked loop. A constant (never derived from the thread count), so
// summation order, and hence every result, is the same for any number of threads.
constexpr Index kRowChunk = 256;

// ∇ log p~ on X. `what` names the score ("fssd: the score of model M on the test split"); a
// non-finite value is a NumericalError citing it and the row (row_offset + local row, so chunks
// report rows of the whole split).
Matrix checked_score(const Model& model, const Matrix& X, Index row_offset, const std::string& what);

// Score of every row, in kRowChunk chunks over threads.
Matrix checked_score_all(const Model& model, const Matrix& X, const Context& context,
                         const std::string& what);

// kernel/gaussian with length scale sigma, through the registry (the evaluators never re-implement
// kernel derivatives). sigma is set through the log-σ parameter, so it is exact to the last bit.
KernelPtr make_gaussian_kernel(Registry& registry, double sigma);

// The Gaussian σ of a Stein evaluator on rows X: `given` when set, else the median pairwise distance
// (as since 0.1, bitwise) or BKL by `rule` (kef/bandwidth_rule.hpp, on the context's stream). A zero
// median is a config error at `bandwidth`. *how gets the provenance for a note.
double stein_bandwidth(const std::optional<double>& given, const BandwidthRule& rule, const Matrix& X,
                       const std::string& where, const KeySites& sites, const Context& context,
                       std::string* how);
KernelPtr make_imq_kernel(Registry& registry, double c, double beta);

// (1 + #{b : sim_b ≥ stat}) / (1 + B): the Monte Carlo p-value that is valid (never below the
// nominal level under the null) for any number of draws B.
double monte_carlo_pvalue(double stat, const std::vector<double>& simulated);

// Upper normal tail 1 − Φ(z), accurate in the far tail.
double normal_upper_tail(double z);

inline Index chunk_count(Index rows) { return (rows + kRowChunk - 1) / kRowChunk; }
inline Index chunk_begin(Index c) { return c * kRowChunk; }
inline Index chunk_size(Index c, Index rows) { return std::min(kRowChunk, rows - c * kRowChunk); }

}  // namespace kef::stein
