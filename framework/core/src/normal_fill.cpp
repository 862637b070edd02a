// Ziggurat sampler for N(0, 1) (Marsaglia & Tsang 2000, "The ziggurat method for generating random
// variables", J. Stat. Softw. 5(8)), 256 layers of equal area v under f(x) = exp(−x²/2), with
// independent bits for the layer, the sign and the 53-bit uniform (Doornik 2005's remedy for the
// layer/uniform correlation of the 32-bit original).
#include "kef/normal_fill.hpp"

#include <array>
#include <bit>
#include <cmath>

#include "kef/error.hpp"

namespace kef {
namespace {

constexpr int kLayers = 256;
constexpr double kR = 3.6541528853610088;  // start of the tail: x_1
constexpr double kV = 4.92867323399e-3;    // area of each layer (base strip: rectangle + tail)

struct Tables {
  // x[0] = v / f(r) (the base strip's width as a rectangle), x[1] = r, ..., x[256] = 0; layer i spans
  // [0, x[i]) horizontally between heights f(x[i]) and f(x[i + 1]).
  std::array<double, kLayers + 1> x{};
  std::array<double, kLayers + 1> f{};
  Tables() {
    auto fx = [](double t) { return std::exp(-0.5 * t * t); };
    x[0] = kV / fx(kR);
    x[1] = kR;
    for (int i = 1; i < kLayers - 1; ++i)
      x[static_cast<std::size_t>(i + 1)] = std::sqrt(
          -2.0 * std::log(kV / x[static_cast<std::size_t>(i)] + fx(x[static_cast<std::size_t>(i)])));
    x[kLayers] = 0.0;
    for (int i = 0; i <= kLayers; ++i) f[static_cast<std::size_t>(i)] = fx(x[static_cast<std::size_t>(i)]);
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// (0, 1]: never 0, so its log is finite.
double open_uniform(RandomStream& rng) { return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53; }

// z with the sign bit set from bit 8 of u, without a branch (a random sign would mispredict half the time).
double with_sign(double z, std::uint64_t u) {
  return std::bit_cast<double>(std::bit_cast<std::uint64_t>(z) ^ ((u & 0x100u) << 55));
}

double draw(RandomStream& rng, const Tables& t) {
  while (true) {
    const std::uint64_t u = rng();
    const auto i = static_cast<std::size_t>(u & 0xFF);
    const bool negative = (u >> 8) & 1u;
    const double z = static_cast<double>(u >> 11) * 0x1.0p-53 * t.x[i];
    if (z < t.x[i + 1]) return with_sign(z, u);  // inside the layer's rectangle under the curve
    if (i == 0) {
      // Tail beyond r (Marsaglia 1964): r + a with a ~ Exp(r) accepted with probability exp(−a²/2).
      while (true) {
        const double a = -std::log(open_uniform(rng)) / kR;
        const double b = -std::log(open_uniform(rng));
        if (b + b > a * a) return negative ? -(kR + a) : kR + a;
      }
    }
    // The wedge between the rectangle and the curve: a uniform height in the layer, kept under f.
    const double y = t.f[i] + static_cast<double>(rng() >> 11) * 0x1.0p-53 * (t.f[i + 1] - t.f[i]);
    if (y < std::exp(-0.5 * z * z)) return negative ? -z : z;
  }
}

}  // namespace

void fill_normal(RandomStream& rng, double* out, Index n) {
  if (n < 0) throw Error("fill_normal: negative count (got " + std::to_string(n) + ")");
  const Tables& t = tables();
  for (Index k = 0; k < n; ++k) out[k] = draw(rng, t);
}

Matrix normal_rows(RandomStream& rng, Index rows, Index cols) {
  if (rows < 0 || cols < 0)
    throw Error("normal_rows: negative size (got " + std::to_string(rows) + " x " + std::to_string(cols) +
                ")");
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> z(rows, cols);
  fill_normal(rng, z.data(), z.size());
  return z;
}

}  // namespace kef
