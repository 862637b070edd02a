// Random streams: xoshiro256** (Blackman & Vigna) seeded through splitmix64, with samplers written out
// here so that a (seed, path) pair yields the same numbers with every compiler and standard library.
#include "kef/random.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>

#include "kef/error.hpp"
#include "kef/normal_fill.hpp"

namespace kef {
namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;
// Distinguish derive("3") from derive(3) and from the root hash of a path.
constexpr unsigned char kNameTag = 0x01;
constexpr unsigned char kIndexTag = 0x02;

std::uint64_t fnv1a(std::uint64_t h, const unsigned char* bytes, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= bytes[i];
    h *= kFnvPrime;
  }
  return h;
}

std::uint64_t fnv1a(std::uint64_t h, std::string_view s) {
  return fnv1a(h, reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

// Little-endian byte order explicitly, so keys do not depend on the host.
std::uint64_t fnv1a_u64(std::uint64_t h, std::uint64_t v) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));
  return fnv1a(h, bytes, 8);
}

std::uint64_t child_key(std::uint64_t parent, unsigned char tag) {
  std::uint64_t h = fnv1a_u64(kFnvOffset, parent);
  return fnv1a(h, &tag, 1);
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

RandomStream::RandomStream(std::uint64_t seed, std::string_view path)
    : RandomStream(seed, fnv1a(kFnvOffset, path)) {}

RandomStream::RandomStream(std::uint64_t seed, std::uint64_t key) : seed_(seed), key_(key) {
  // Scramble the seed first so that nearby seeds and nearby keys do not cancel in the xor.
  std::uint64_t mixer = seed;
  std::uint64_t state = splitmix64(mixer) ^ key;
  for (auto& s : s_) s = splitmix64(state);
  if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = 1;  // the all-zero state is a fixed point
}

RandomStream RandomStream::derive(std::string_view name) const {
  return RandomStream(seed_, fnv1a(child_key(key_, kNameTag), name));
}

RandomStream RandomStream::derive(std::uint64_t index) const {
  return RandomStream(seed_, fnv1a_u64(child_key(key_, kIndexTag), index));
}

RandomStream::result_type RandomStream::operator()() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double RandomStream::uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

double RandomStream::normal() {
  // Polar method; the second variate is dropped so a copied stream continues exactly like the original.
  while (true) {
    const double u = 2.0 * uniform() - 1.0;
    const double v = 2.0 * uniform() - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

double RandomStream::gamma(double shape) {
  if (!(shape > 0.0) || !std::isfinite(shape)) {
    throw Error("RandomStream::gamma: invalid shape (expected a finite positive number, got " +
                std::to_string(shape) + ")");
  }
  if (shape < 1.0) {
    // Marsaglia & Tsang: Gamma(a) = Gamma(a + 1) * U^(1/a); 1 - U lies in (0, 1], never 0.
    const double g = gamma(shape + 1.0);
    return g * std::pow(1.0 - uniform(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    // The ziggurat normal (kef/normal_fill.hpp), not normal(): the generalised normal's sampler draws
    // one gamma variate per coordinate of every importance-sampling proposal, and the polar method's
    // log, square root and rejected pairs made it a fifth of the deep likelihood's time.
    double x = 0.0;
    fill_normal(*this, &x, 1);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = uniform();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
  }
}

std::uint64_t RandomStream::uniform_int(std::uint64_t n) {
  if (n == 0) throw Error("RandomStream::uniform_int: empty range (expected n >= 1, got 0)");
  // Lemire's multiply-and-reject: unbiased for every n, and rarely draws twice.
  using U128 = unsigned __int128;
  U128 m = static_cast<U128>((*this)()) * n;
  auto low = static_cast<std::uint64_t>(m);
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<U128>((*this)()) * n;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

Matrix RandomStream::normal_matrix(Index rows, Index cols) {
  if (rows < 0 || cols < 0) {
    throw Error("RandomStream::normal_matrix: negative size (got " + std::to_string(rows) + " x " +
                std::to_string(cols) + ")");
  }
  // Row by row: the first rows of an n x d draw equal those of a smaller draw from the same stream.
  Matrix m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = normal();
  return m;
}

std::vector<Index> sample_without_replacement(Index n, Index k, RandomStream& rng) {
  if (n < 0 || k < 0 || k > n) {
    throw Error("sample_without_replacement: cannot draw " + std::to_string(k) + " distinct indices from " +
                std::to_string(n) + " (expected 0 <= k <= n)");
  }
  // Floyd's algorithm: exactly k draws. The membership structure does not affect which indices come out.
  std::vector<Index> out;
  out.reserve(static_cast<std::size_t>(k));
  if (n <= 64 * k) {
    std::vector<bool> taken(static_cast<std::size_t>(n), false);
    for (Index j = n - k; j < n; ++j) {
      auto t = static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(j) + 1));
      taken[static_cast<std::size_t>(taken[static_cast<std::size_t>(t)] ? j : t)] = true;
    }
    for (Index i = 0; i < n; ++i)
      if (taken[static_cast<std::size_t>(i)]) out.push_back(i);
  } else {
    std::unordered_set<Index> taken;
    taken.reserve(static_cast<std::size_t>(k));
    for (Index j = n - k; j < n; ++j) {
      auto t = static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(j) + 1));
      if (!taken.insert(t).second) taken.insert(j);
    }
    out.assign(taken.begin(), taken.end());
    std::sort(out.begin(), out.end());
  }
  return out;
}

}  // namespace kef
