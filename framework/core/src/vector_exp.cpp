#include "kef/vector_exp.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

#include "multiply_add.hpp"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

// Both paths reduce x = (k + j/J)·ln2 + r (round to nearest), evaluate e^r by a polynomial, and
// scale by 2^k in two steps (2^{k1}·2^{k2}, each a normal number), so that results in the subnormal
// range are rounded once at the end instead of being flushed and e^{709.78} does not overflow early.
// Inputs are clamped to [−746, 710] first: beyond, e^x is 0 or +inf and the clamped value gives that.
//
// Error budget (relative, u = 2^-53): ln2 is split as hi + lo with hi of 32 significant bits, so k·hi
// is exact and x − k·hi exact (Sterbenz) with or without FMA, and r carries ~1e-18 absolute error; the polynomial's truncation is < 2^-60; the table entries (AVX-512 path) are correctly
// rounded (≤ u); the final fused step adds ≤ u. Hence ≤ ~2.1u, at most 2 ulp of the result.

namespace kef {

namespace {

constexpr double kShifter = 0x1.8p52;  // adding it rounds to an integer held in the low mantissa bits
constexpr double kLow = -746.0, kHigh = 710.0;

inline double scale_by_power_of_two(double p, std::int64_t k) {
  const std::int64_t k1 = k >> 1, k2 = k - k1;
  const double s1 = std::bit_cast<double>(static_cast<std::uint64_t>(k1 + 1023) << 52);
  const double s2 = std::bit_cast<double>(static_cast<std::uint64_t>(k2 + 1023) << 52);
  return (p * s1) * s2;
}

}  // namespace

namespace detail {

// J = 1: |r| ≤ ln2/2, so the Taylor polynomial needs degree 13 (r^14/14! < 5e-18).
void exp_array_portable(const double* x, double* y, Index n) {
  constexpr double kLog2e = 0x1.71547652b82fep0, kLn2Hi = 0x1.62e42fee00000p-1, kLn2Lo = 0x1.a39ef35793c76p-33;
  for (Index i = 0; i < n; ++i) {
    const double x0 = x[i];
    double v = x0 < kLow ? kLow : x0;
    v = v > kHigh ? kHigh : v;
    const double t = multiply_add(v, kLog2e, kShifter);
    const double fk = t - kShifter;
    const std::int64_t k = std::bit_cast<std::int64_t>(t) - std::bit_cast<std::int64_t>(kShifter);
    const double r = (v - fk * kLn2Hi) - fk * kLn2Lo;
    double q = 1.0 / 6227020800.0;  // 1/13!
    q = multiply_add(q, r, 1.0 / 479001600.0);
    q = multiply_add(q, r, 1.0 / 39916800.0);
    q = multiply_add(q, r, 1.0 / 3628800.0);
    q = multiply_add(q, r, 1.0 / 362880.0);
    q = multiply_add(q, r, 1.0 / 40320.0);
    q = multiply_add(q, r, 1.0 / 5040.0);
    q = multiply_add(q, r, 1.0 / 720.0);
    q = multiply_add(q, r, 1.0 / 120.0);
    q = multiply_add(q, r, 1.0 / 24.0);
    q = multiply_add(q, r, 1.0 / 6.0);
    q = multiply_add(q, r, 0.5);
    q = multiply_add(q, r, 1.0);
    const double p = multiply_add(q, r, 1.0);
    const double out = scale_by_power_of_two(p, k);
    y[i] = x0 != x0 ? x0 : out;  // NaN in, NaN out
  }
}

}  // namespace detail

#if defined(__AVX512F__)

namespace {

// 2^{j/16}, j = 0..15, correctly rounded (computed to 60 digits).
alignas(64) constexpr double kPow2Sixteenths[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

// J = 16: the table sits in two registers and is read with one permute, |r| ≤ ln2/32, so degree 7
// suffices (r^8/8! < 2e-18).
inline __m512d exp8(__m512d x0, __m512d table_lo, __m512d table_hi) {
  const __m512d shifter = _mm512_set1_pd(kShifter);
  const __m512d v = _mm512_min_pd(_mm512_max_pd(x0, _mm512_set1_pd(kLow)), _mm512_set1_pd(kHigh));
  const __m512d t = _mm512_fmadd_pd(v, _mm512_set1_pd(0x1.71547652b82fep+4), shifter);  // 16/ln2
  const __m512d fk = _mm512_sub_pd(t, shifter);
  const __m512i k = _mm512_sub_epi64(_mm512_castpd_si512(t), _mm512_castpd_si512(shifter));
  __m512d r = _mm512_fnmadd_pd(fk, _mm512_set1_pd(0x1.62e42fee00000p-5), v);  // ln2/16, hi + lo
  r = _mm512_fnmadd_pd(fk, _mm512_set1_pd(0x1.a39ef35793c76p-37), r);
  __m512d q = _mm512_set1_pd(1.0 / 5040.0);
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 720.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 120.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 24.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
  q = _mm512_mul_pd(q, r);                                             // e^r − 1
  const __m512d tj = _mm512_permutex2var_pd(table_lo, k, table_hi);  // low 4 bits of k select j
  __m512d p = _mm512_fmadd_pd(tj, q, tj);
  const __m512i kk = _mm512_srai_epi64(k, 4);
  const __m512i k1 = _mm512_srai_epi64(kk, 1), k2 = _mm512_sub_epi64(kk, k1);
  const __m512i bias = _mm512_set1_epi64(1023);
  p = _mm512_mul_pd(p, _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(k1, bias), 52)));
  p = _mm512_mul_pd(p, _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(k2, bias), 52)));
  return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x0, x0, _CMP_UNORD_Q), p, x0);
}

}  // namespace

void exp_array(const double* x, double* y, Index n) {
  const __m512d lo = _mm512_load_pd(kPow2Sixteenths), hi = _mm512_load_pd(kPow2Sixteenths + 8);
  Index i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_pd(y + i, exp8(_mm512_loadu_pd(x + i), lo, hi));
  if (i < n) {
    const auto mask = static_cast<__mmask8>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_pd(y + i, mask, exp8(_mm512_maskz_loadu_pd(mask, x + i), lo, hi));
  }
}

#else

void exp_array(const double* x, double* y, Index n) { detail::exp_array_portable(x, y, n); }

#endif

}  // namespace kef
