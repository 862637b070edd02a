#pragma once
// What the Stein evaluators (FSSD, relative FSSD, KSD) share: the split they read, scores checked
// row by row, base kernels built through the registry, Monte Carlo p-values, and a chunked reduction
// whose result does not depend on the thread count.
#include <algorithm>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/dataset.hpp"
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

KeySpec split_key();

// The rows the evaluator reads (`split` key); ConfigError naming `split` when it is empty.
const Matrix& select_split(const Dataset& data, const std::string& split, const Config& cfg);

// DataError when the model and the data disagree on the dimension.
void check_dimension(const Model& model, const std::string& model_name, const Matrix& X);

// ∇ log p~ on X. `what` names the score ("fssd: the score of model M on the test split"); a
// non-finite value is a NumericalError citing it and the row (row_offset + local row, so chunks
// report rows of the whole split).
Matrix checked_score(const Model& model, const Matrix& X, Index row_offset, const std::string& what);

// Score of every row, in kRowChunk chunks over threads.
Matrix checked_score_all(const Model& model, const Matrix& X, int threads, const std::string& what);

// kernel/gaussian with length scale sigma, through the registry (the evaluators never re-implement
// kernel derivatives). sigma is set through the log-σ parameter, so it is exact to the last bit.
KernelPtr make_gaussian_kernel(Registry& registry, double sigma);
KernelPtr make_imq_kernel(Registry& registry, double c, double beta);

// (1 + #{b : sim_b ≥ stat}) / (1 + B): the Monte Carlo p-value that is valid (never below the
// nominal level under the null) for any number of draws B.
double monte_carlo_pvalue(double stat, const std::vector<double>& simulated);

// Upper normal tail 1 − Φ(z), accurate in the far tail.
double normal_upper_tail(double z);

// Runs body(item, partial) for item in [0, n) on up to `threads` threads, in rounds of `threads`
// items, and folds each round's partials into the caller's accumulator in item order. Every partial
// is computed by the same code whatever the thread count and folded in the same order, so the result
// is bitwise independent of the thread count, while memory holds one partial per thread (partials may
// be large, e.g. the (D·J)² Gram matrix of the FSSD features). A partial object is reused by later
// items, so it can carry workspace buffers; body must set every field that fold reads.
template <class Partial, class Body, class Fold>
void ordered_reduce(Index n, int threads, Body&& body, Fold&& fold) {
  const Index round = std::max(1, threads);
  std::vector<Partial> partials(static_cast<std::size_t>(std::min(round, std::max<Index>(n, 1))));
  for (Index start = 0; start < n; start += round) {
    const Index count = std::min(round, n - start);
    parallel_for(count, threads, [&](Index i) {
      body(start + i, partials[static_cast<std::size_t>(i)]);
    });
    for (Index i = 0; i < count; ++i) fold(partials[static_cast<std::size_t>(i)]);
  }
}

inline Index chunk_count(Index rows) { return (rows + kRowChunk - 1) / kRowChunk; }
inline Index chunk_begin(Index c) { return c * kRowChunk; }
inline Index chunk_size(Index c, Index rows) { return std::min(kRowChunk, rows - c * kRowChunk); }

}  // namespace kef::stein
