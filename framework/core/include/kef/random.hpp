#pragma once
// Reproducible random streams. Every component draws from its own stream derived from the run's seed
// and the component's config path, so results depend neither on the thread count nor on the order in
// which unrelated components run. The generator (xoshiro256**) and the normal sampler are implemented
// here rather than taken from <random> so that a seed gives the same numbers on every standard library.
#include <cstdint>
#include <string_view>
#include <vector>

#include "kef/types.hpp"

namespace kef {

class RandomStream {
 public:
  using result_type = std::uint64_t;

  RandomStream(std::uint64_t seed, std::string_view path);

  // A child stream: independent of this one and of siblings with other names.
  RandomStream derive(std::string_view name) const;
  RandomStream derive(std::uint64_t index) const;

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()();

  double uniform();                      // [0, 1)
  double normal();                       // N(0, 1)
  double gamma(double shape);            // Gamma(shape, 1), shape > 0 (Marsaglia–Tsang on ziggurat normals)
  std::uint64_t uniform_int(std::uint64_t n);  // uniform on {0, ..., n-1}
  Matrix normal_matrix(Index rows, Index cols);

  std::uint64_t seed() const { return seed_; }

 private:
  RandomStream(std::uint64_t seed, std::uint64_t key);
  std::uint64_t seed_;
  std::uint64_t key_;
  std::uint64_t s_[4];
};

// Random subset of k distinct indices of {0..n-1}, in increasing order.
std::vector<Index> sample_without_replacement(Index n, Index k, RandomStream& rng);

}  // namespace kef
