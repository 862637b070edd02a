#pragma once
// The rows an evaluator judges a model on: the `split` key every evaluator offers, and the split it
// names, checked once here for size and against the model's dimension (each evaluator used to carry
// its own copy of this).
#include <string>

#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/options.hpp"

namespace kef {

KeySpec split_key(std::string doc = "which split to evaluate on");

// The rows of the split named by cfg's `split` key. A ConfigError at that key when the split has fewer
// than `min_rows` rows ("fssd: the test split has 1 row; it needs at least 2"); a DataError when their
// dimension differs from the model's (and from the second model's, for comparative evaluators).
const Matrix& evaluation_rows(const EvalInput& in, const Config& cfg, const std::string& who,
                              Index min_rows = 1);
// The same for an evaluator that read its options at construction: `split` is the value of its
// `split` key, `sites` place that key for the error.
const Matrix& evaluation_rows(const EvalInput& in, const std::string& split, const KeySites& sites,
                              const std::string& who, Index min_rows = 1);

}  // namespace kef
