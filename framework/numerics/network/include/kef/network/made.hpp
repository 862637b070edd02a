#pragma once
// MADE's masks (Germain et al. 2015; Papamakarios et al. 2017 for MAF): every input, hidden unit and
// output gets a degree; a hidden unit of degree k sees the units below it of degree ≤ k, an output
// of degree k sees the hidden units of degree < k. Output i then depends only on the inputs that
// come before input i in the order, which makes the network autoregressive.
//
// Degrees are 1-based: an input order is a permutation of 1..D (input j has degree order[j]).
// Masks are out x in, the layout of MaskedDense's weights (dense.hpp).
#include <vector>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::network::made {

enum class InputOrder { natural, reversed, random };
enum class HiddenDegrees { sequential, random };

// natural: 1..D; reversed: D..1; random: a uniform permutation drawn from rng (required then).
std::vector<Index> input_degrees(Index dim, InputOrder order, RandomStream* rng = nullptr);

// H hidden degrees for inputs of dimension D. sequential: unit k gets k mod max(1, D − 1) + min(1, D − 1)
// (cycling through 1..D−1); random: uniform on {min(min(previous), D − 1), ..., D − 1} (rng required),
// so that no unit is cut off from every unit below it.
std::vector<Index> hidden_degrees(Index width, Index dim, HiddenDegrees mode,
                                  const std::vector<Index>& previous, RandomStream* rng = nullptr);

// 1 where degree_in[j] ≤ degree_out[i] (hidden layers).
Matrix hidden_mask(const std::vector<Index>& degree_in, const std::vector<Index>& degree_out);
// 1 where degree_in[j] < degree_out[i] (the output layer; degree_out: the inputs' degrees, repeated
// for several outputs per input).
Matrix output_mask(const std::vector<Index>& degree_in, const std::vector<Index>& degree_out);

}  // namespace kef::network::made
