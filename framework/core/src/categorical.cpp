#include "kef/categorical.hpp"

namespace kef {

Index draw_categorical(std::span<const double> w, RandomStream& rng, double total) {
  const Index n = static_cast<Index>(w.size());
  const double u = rng.uniform() * total;
  double acc = 0.0;
  for (Index i = 0; i < n; ++i) {
    acc += w[static_cast<std::size_t>(i)];
    if (u < acc) return i;
  }
  for (Index i = n - 1; i >= 0; --i)
    if (w[static_cast<std::size_t>(i)] > 0) return i;
  return n - 1;
}

std::vector<Index> draw_categorical_counts(std::span<const double> w, Index n, RandomStream& rng) {
  std::vector<Index> counts(w.size(), 0);
  for (Index i = 0; i < n; ++i) ++counts[static_cast<std::size_t>(draw_categorical(w, rng))];
  return counts;
}

}  // namespace kef
