#include "kef/network/made.hpp"

#include <algorithm>
#include <numeric>

#include "kef/error.hpp"

namespace kef::network::made {

std::vector<Index> input_degrees(Index dim, InputOrder order, RandomStream* rng) {
  if (dim < 1) throw Error("made: the input dimension must be positive (got " + std::to_string(dim) + ")");
  std::vector<Index> deg(static_cast<std::size_t>(dim));
  std::iota(deg.begin(), deg.end(), Index{1});
  if (order == InputOrder::reversed) std::reverse(deg.begin(), deg.end());
  if (order == InputOrder::random) {
    if (!rng) throw Error("made: a random input order needs a random stream");
    for (std::size_t i = deg.size(); i-- > 1;)  // Fisher–Yates
      std::swap(deg[i], deg[static_cast<std::size_t>(rng->uniform_int(i + 1))]);
  }
  return deg;
}

std::vector<Index> hidden_degrees(Index width, Index dim, HiddenDegrees mode,
                                  const std::vector<Index>& previous, RandomStream* rng) {
  if (width < 1 || dim < 1)
    throw Error("made: hidden width and input dimension must be positive (got " + std::to_string(width) +
                ", " + std::to_string(dim) + ")");
  std::vector<Index> deg(static_cast<std::size_t>(width));
  if (mode == HiddenDegrees::sequential) {
    const Index cycle = std::max<Index>(1, dim - 1), first = std::min<Index>(1, dim - 1);
    for (Index k = 0; k < width; ++k) deg[static_cast<std::size_t>(k)] = k % cycle + first;
    return deg;
  }
  if (!rng) throw Error("made: random hidden degrees need a random stream");
  if (previous.empty()) throw Error("made: random hidden degrees need the previous layer's degrees");
  const Index lo = std::min(*std::min_element(previous.begin(), previous.end()), dim - 1), hi = dim - 1;
  for (auto& d : deg)
    d = lo +
        static_cast<Index>(rng->uniform_int(static_cast<std::uint64_t>(std::max<Index>(hi - lo + 1, 1))));
  return deg;
}

namespace {
template <class Keep>
Matrix mask(const std::vector<Index>& in, const std::vector<Index>& out, Keep keep) {
  Matrix m(static_cast<Index>(out.size()), static_cast<Index>(in.size()));
  for (std::size_t j = 0; j < in.size(); ++j)
    for (std::size_t i = 0; i < out.size(); ++i)
      m(static_cast<Index>(i), static_cast<Index>(j)) = keep(in[j], out[i]) ? 1.0 : 0.0;
  return m;
}
}  // namespace

Matrix hidden_mask(const std::vector<Index>& degree_in, const std::vector<Index>& degree_out) {
  return mask(degree_in, degree_out, [](Index a, Index b) { return a <= b; });
}

Matrix output_mask(const std::vector<Index>& degree_in, const std::vector<Index>& degree_out) {
  return mask(degree_in, degree_out, [](Index a, Index b) { return a < b; });
}

}  // namespace kef::network::made
