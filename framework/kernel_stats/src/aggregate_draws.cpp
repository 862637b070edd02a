// The simulated statistics of the aggregated tests: the draws (Rademacher signs, sample labels) and
// the quadratic forms wᵀHw over all of them, as a product and as pattern tables (kef/aggregated_test.hpp).
#include <cblas.h>

#include <algorithm>
#include <string>

#include "kef/aggregated_test.hpp"
#include "kef/error.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"

namespace kef {
namespace {

// Columns of W per product: fixed, so the chunks (and every result) never depend on the thread count.
constexpr Index kAggDrawChunk = 128;
// Rows of H per block of the symmetric product: fixed, so the summation order never changes.
constexpr Index kAggRowBlock = 128;

}  // namespace

Matrix rademacher_draws(Index rows, Index draws, RandomStream& rng) {
  Matrix W(rows, 1 + draws);
  W.col(0).setOnes();
  for (Index b = 1; b <= draws; ++b) {
    std::uint64_t bits = 0;
    for (Index i = 0; i < rows; ++i) {
      if (i % 64 == 0) bits = rng();
      W(i, b) = (bits >> (i % 64)) & 1 ? 1.0 : -1.0;
    }
  }
  return W;
}

Matrix permutation_draws(Index first, Index rows, Index draws, RandomStream& rng) {
  Matrix A = Matrix::Zero(rows, 1 + draws);
  A.col(0).head(first).setOnes();
  for (Index b = 1; b <= draws; ++b)
    for (const Index i : sample_without_replacement(rows, first, rng)) A(i, b) = 1.0;
  return A;
}

Vector quadratic_forms(const Matrix& H, const Matrix& W, const Context& context) {
  if (H.rows() != H.cols() || H.cols() != W.rows())
    throw Error("quadratic_forms: H is " + std::to_string(H.rows()) + " x " + std::to_string(H.cols()) +
                ", W " + std::to_string(W.rows()) + " x " + std::to_string(W.cols()));
  const Index n = H.rows();
  const bool openblas = product_backend() == ProductBackend::OpenBlas;
  Vector out(W.cols());
  parallel_for_chunks(W.cols(), kAggDrawChunk, context.threads(), [&](Index begin, Index count) {
    // H symmetric: wᵀHw = Σ_a w_aᵀ (H_aa w_a + 2 Σ_{b>a} H_ab w_b) over row blocks a, b, so only the
    // blocks on and above the diagonal are multiplied (about half the flops of H·W).
    Vector acc = Vector::Zero(count);
    Matrix P(kAggRowBlock, count);
    for (Index r0 = 0; r0 < n; r0 += kAggRowBlock) {
      const Index len = std::min(kAggRowBlock, n - r0), rest = n - r0 - len;
      auto Pa = P.topRows(len);
      const double* Wd = W.data() + begin * n;  // column-major: W(i, begin + c) at Wd[c·n + i]
      if (openblas) {
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(len),
                    static_cast<blasint>(count), static_cast<blasint>(len), 1.0, H.data() + r0 * n + r0,
                    static_cast<blasint>(n), Wd + r0, static_cast<blasint>(n), 0.0, P.data(),
                    static_cast<blasint>(P.rows()));
        if (rest > 0)
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(len),
                      static_cast<blasint>(count), static_cast<blasint>(rest), 2.0,
                      H.data() + (r0 + len) * n + r0, static_cast<blasint>(n), Wd + r0 + len,
                      static_cast<blasint>(n), 1.0, P.data(), static_cast<blasint>(P.rows()));
      } else {
        Pa.noalias() = H.block(r0, r0, len, len) * W.block(r0, begin, len, count);
        if (rest > 0)
          Pa.noalias() += 2.0 * (H.block(r0, r0 + len, len, rest) * W.block(r0 + len, begin, rest, count));
      }
      acc += W.block(r0, begin, len, count).cwiseProduct(Pa).colwise().sum().transpose();
    }
    out.segment(begin, count) = acc;
  });
  return out;
}

namespace {

// The stored form of pattern p of a block of len rows: p itself, or, for signs whose last row is high,
// every bit flipped and bit 7 set.
unsigned char stored_pattern(unsigned p, Index len, bool flipped) {
  if (flipped && len > 0 && ((p >> (len - 1)) & 1u))
    return static_cast<unsigned char>((p ^ ((1u << len) - 1)) | 0x80u);
  return static_cast<unsigned char>(p);
}

TwoValuedDraws two_valued_head(Index rows, Index draws, double low, double high) {
  TwoValuedDraws out;
  out.rows = rows;
  out.draws = draws;
  out.low = low;
  out.high = high;
  out.flipped = low == -high;
  out.block = out.flipped ? 7 : 6;
  out.patterns.resize(static_cast<std::size_t>((rows + out.block - 1) / out.block * draws));
  return out;
}

}  // namespace

TwoValuedDraws two_valued_draws(const Matrix& W, double low, double high) {
  TwoValuedDraws out = two_valued_head(W.rows(), W.cols(), low, high);
  const Index K = out.block, blocks = (W.rows() + K - 1) / K;
  for (Index b = 0; b < W.cols(); ++b) {
    const double* w = W.data() + b * W.rows();
    for (Index block = 0; block < blocks; ++block) {
      unsigned p = 0;
      const Index len = std::min(K, W.rows() - block * K);
      for (Index l = 0; l < len; ++l) {
        const double v = w[block * K + l];
        if (v != high && v != low)
          throw Error("two_valued_draws: entry (" + std::to_string(block * K + l) + ", " + std::to_string(b) +
                      ") is " + number_text(v) + ", neither " + number_text(low) + " nor " +
                      number_text(high));
        p |= static_cast<unsigned>(v == high) << l;
      }
      out.patterns[static_cast<std::size_t>(block * W.cols() + b)] = stored_pattern(p, len, out.flipped);
    }
  }
  return out;
}

TwoValuedDraws rademacher_patterns(Index rows, Index draws, RandomStream& rng) {
  TwoValuedDraws out = two_valued_head(rows, 1 + draws, -1, 1);
  const Index K = out.block, blocks = (rows + K - 1) / K, words = (rows + 63) / 64, m = out.draws;
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(words) + 1, 0);
  for (Index b = 0; b < m; ++b) {
    // Column 0 is all ones; column b > 0 takes row i's sign from bit i % 64 of its (i / 64)-th draw, as
    // rademacher_draws does.
    for (Index w = 0; w < words; ++w) bits[static_cast<std::size_t>(w)] = b == 0 ? ~std::uint64_t{0} : rng();
    for (Index block = 0; block < blocks; ++block) {
      const Index first = block * K, len = std::min(K, rows - first);
      const auto word = static_cast<std::size_t>(first / 64);
      const int shift = static_cast<int>(first % 64);
      std::uint64_t v = bits[word] >> shift;
      if (shift + len > 64) v |= bits[word + 1] << (64 - shift);
      out.patterns[static_cast<std::size_t>(block * m + b)] =
          stored_pattern(static_cast<unsigned>(v & ((std::uint64_t{1} << len) - 1)), len, true);
    }
  }
  return out;
}

namespace {

// Patterns per block as tables store them: 6 free rows (labels: all 6; signs: 7 with the last at low).
constexpr int kPatterns = 64;

// to[q] = from[q] + d·g[q], q < count (Q > 0: count = Q, known to the compiler for full blocks).
template <int Q>
void add_table_row(double* __restrict to, const double* __restrict from, const double* __restrict g, double d,
                   int count) {
  if constexpr (Q > 0) count = Q;
  for (int q = 0; q < count; ++q) to[q] = from[q] + d * g[q];
}

// T[p·kPatterns + q] = f · s_pᵀ H(rows of block a, columns of block c) s_q for every stored pattern p of
// block a (la rows) and q of block c (lc columns), s_p(l) = high if bit l of p is set, else low (with
// flipped patterns the last row of a block is always low). Built column by column: G = f·H_ac S_c by
// adding f(high − low)·H_ac[:, l] to the patterns without bit l, then T = S_aᵀ G the same way row by
// row, one addition per entry. Reads H on and above its diagonal only (a <= c; in the diagonal block
// (i, j) is read as (j, i) below the diagonal).
void pattern_table(const Matrix& H, const TwoValuedDraws& W, Index a, Index c, double f, double* G,
                   double* T) {
  const Index K = W.block, n = H.rows();
  const double low = W.low, high = W.high;
  const int la = static_cast<int>(std::min(K, n - a * K)), lc = static_cast<int>(std::min(K, n - c * K));
  const int ra = W.flipped ? la - 1 : la, rc = W.flipped ? lc - 1 : lc;  // rows with a bit of their own
  const double* Hb = H.data() + c * K * n + a * K;  // H(a·K + i, c·K + j) = Hb[j·n + i]
  auto h = [&](int i, int j) { return a == c && i > j ? Hb[i * n + j] : Hb[j * n + i]; };
  const int qs = 1 << rc;
  for (int i = 0; i < la; ++i) {
    double* g = G + i * kPatterns;
    double s = 0;
    for (int j = 0; j < lc; ++j) s += h(i, j);
    g[0] = f * low * s;
    for (int l = 0; l < rc; ++l) {
      const int w = 1 << l;
      const double d = f * (high - low) * h(i, l);
      for (int q = 0; q < w; ++q) g[q + w] = g[q] + d;
    }
  }
  for (int q = 0; q < qs; ++q) {
    double s = 0;
    for (int i = 0; i < la; ++i) s += G[i * kPatterns + q];
    T[q] = low * s;
  }
  for (int l = 0; l < ra; ++l) {
    const double* g = G + l * kPatterns;
    for (int p = 0; p < (1 << l); ++p) {
      double* to = T + (p + (1 << l)) * kPatterns;
      const double* from = T + p * kPatterns;
      if (qs == kPatterns)
        add_table_row<kPatterns>(to, from, g, high - low, qs);
      else
        add_table_row<0>(to, from, g, high - low, qs);
    }
  }
}

// acc[b] (+)= T at draw b's patterns: pa[b] on both sides (pc null: a diagonal block), else (pa[b],
// pc[b]), negated when exactly one of the two is stored flipped (bit 7).
void add_pattern_entries(double* __restrict acc, const double* __restrict T,
                         const unsigned char* __restrict pa, const unsigned char* __restrict pc, Index m,
                         bool first) {
  if (pc == nullptr) {
    for (Index b = 0; b < m; ++b) acc[b] = (first ? 0.0 : acc[b]) + T[(pa[b] & 63u) * (kPatterns + 1)];
    return;
  }
  for (Index b = 0; b < m; ++b) {
    const double v = T[((pa[b] & 63u) << 6) + (pc[b] & 63u)];
    acc[b] += ((pa[b] ^ pc[b]) & 0x80u) ? -v : v;
  }
}

}  // namespace

Vector quadratic_forms(const Matrix& H, const TwoValuedDraws& W, const Context& context) {
  const Index K = W.block;
  if (H.rows() != H.cols() || H.cols() != W.rows)
    throw Error("quadratic_forms: H is " + std::to_string(H.rows()) + " x " + std::to_string(H.cols()) +
                ", the draws have " + std::to_string(W.rows) + " rows");
  const Index n = H.rows(), m = W.draws, blocks = (n + K - 1) / K;
  // Row blocks in a fixed number of runs of about equal work (row block a has blocks − a pairs), each
  // run's sums over its pairs in one column, for every draw: few columns, so little memory to touch.
  const Index runs = std::min<Index>(blocks, 16);
  std::vector<Index> first(static_cast<std::size_t>(runs + 1), blocks);
  first[0] = 0;
  const double pairs = static_cast<double>(blocks) * static_cast<double>(blocks + 1) / 2;
  double before = 0;  // pairs of the row blocks before a
  for (Index a = 0, r = 1; a < blocks && r < runs; ++a) {
    if (before >= pairs * static_cast<double>(r) / static_cast<double>(runs))
      first[static_cast<std::size_t>(r++)] = a;
    before += static_cast<double>(blocks - a);
  }
  Matrix sums(m, runs);
  parallel_for(runs, context.threads(), [&](Index r) {
    std::vector<double> G(static_cast<std::size_t>(K * kPatterns)),
        T(static_cast<std::size_t>(kPatterns * kPatterns));
    double* acc = sums.col(r).data();
    if (first[static_cast<std::size_t>(r)] == first[static_cast<std::size_t>(r + 1)])
      sums.col(r).setZero();  // a run left empty by a row block of more than a run's share of pairs
    for (Index a = first[static_cast<std::size_t>(r)]; a < first[static_cast<std::size_t>(r + 1)]; ++a) {
      const unsigned char* pa = W.patterns.data() + a * m;
      // The diagonal block: its own pattern on both sides.
      pattern_table(H, W, a, a, 1.0, G.data(), T.data());
      add_pattern_entries(acc, T.data(), pa, nullptr, m, a == first[static_cast<std::size_t>(r)]);
      // H symmetric: the blocks above the diagonal count twice.
      for (Index c = a + 1; c < blocks; ++c) {
        pattern_table(H, W, a, c, 2.0, G.data(), T.data());
        add_pattern_entries(acc, T.data(), pa, W.patterns.data() + c * m, m, false);
      }
    }
  });
  Vector out = sums.col(0);
  for (Index r = 1; r < runs; ++r) out += sums.col(r);
  return out;
}

}  // namespace kef
