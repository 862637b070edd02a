#pragma once
// What a model can do, as a set of facets. Evaluators state the facets they need; the pipeline checks
// them against what an estimator's models provide before any fit, and again against the fitted model,
// so a model that lacks a facet is refused with a message naming both sides instead of being asked to
// fake it (a flow has no Laplacian worth computing; a sampler-only model has no density).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kef {

enum class Facet : std::uint32_t {
  LogDensity = 1u << 0,          // log p~(x), up to a constant
  NormalizedDensity = 1u << 1,   // log p(x) exactly: log Z known (log_normalizer())
  Score = 1u << 2,               // ∇ₓ log p~(x)
  Laplacian = 1u << 3,           // the score and the diagonal of the Hessian (score matching)
  Hessian = 1u << 4,             // the full Hessian at a point
  Sampler = 1u << 5,             // exact draws from p
  BaseMeasureRatio = 1u << 6,    // log p~ = f + log q0 with a samplable q0 (importance sampling)
  ConditionalDensity = 1u << 7,  // log p~(y | x)
  ConditionalScore = 1u << 8,    // ∇_y log p~(y | x) and its Laplacian
  ConditionalSampler = 1u << 9,  // draws y ~ p(y | x)
  // Draws from a learned approximation q of p (DDE's sampler network): fast, but not draws from p.
  // Model::sample() gives them; whoever reports a number computed from them must say so, and what
  // needs exact draws (reverse AIS's upper bound) must not use them.
  ApproximateSampler = 1u << 10,
};

class FacetSet {
 public:
  constexpr FacetSet() = default;
  constexpr FacetSet(Facet f) : bits_(static_cast<std::uint32_t>(f)) {}  // NOLINT: a facet is a set of one
  constexpr FacetSet(std::initializer_list<Facet> facets) {
    for (Facet f : facets) bits_ |= static_cast<std::uint32_t>(f);
  }

  constexpr bool has(Facet f) const { return (bits_ & static_cast<std::uint32_t>(f)) != 0; }
  constexpr bool contains(FacetSet other) const { return (bits_ & other.bits_) == other.bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr FacetSet operator|(FacetSet other) const { return from_bits(bits_ | other.bits_); }
  constexpr FacetSet& operator|=(FacetSet other) {
    bits_ |= other.bits_;
    return *this;
  }
  // The facets of this set that `other` lacks.
  constexpr FacetSet minus(FacetSet other) const { return from_bits(bits_ & ~other.bits_); }
  constexpr bool operator==(const FacetSet&) const = default;
  constexpr std::uint32_t bits() const { return bits_; }

  // Names as users read them in messages and `kef plugins --describe`: "score, sampler".
  std::vector<std::string> names() const;
  std::string text() const;  // comma-separated names, "nothing" when empty

 private:
  static constexpr FacetSet from_bits(std::uint32_t bits) {
    FacetSet s;
    s.bits_ = bits;
    return s;
  }
  std::uint32_t bits_ = 0;
};

constexpr FacetSet operator|(Facet a, Facet b) { return FacetSet(a) | FacetSet(b); }

std::string_view to_string(Facet facet);

}  // namespace kef
