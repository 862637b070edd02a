#pragma once
// Bulk standard normal draws for hot loops (Monte Carlo nulls: hundreds of thousands of draws per
// evaluation). RandomStream::normal() (polar method: two uniforms, a log and a square root per draw,
// the second variate dropped) costs ~25 ns; this ziggurat (Marsaglia & Tsang 2000, 256 layers) takes
// one 64-bit word and a table lookup for ~99% of draws, ~3 ns. The law is exactly N(0, 1) (up to the
// 53-bit uniform and the tables' rounding), the sequence differs from normal()'s: a component chooses
// one of the two for a given stream and keeps it.
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

// out[0..n) = i.i.d. N(0, 1) draws from rng; n ≥ 0. Deterministic given the stream's state.
void fill_normal(RandomStream& rng, double* out, Index n);

// A rows x cols matrix of ziggurat N(0, 1) draws, filled row by row, so the first rows of a larger draw
// equal a smaller draw from the same stream (as RandomStream::normal_matrix's, at ~8x its speed).
Matrix normal_rows(RandomStream& rng, Index rows, Index cols);

}  // namespace kef
