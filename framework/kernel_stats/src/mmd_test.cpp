#include "kef/mmd_test.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef {
namespace {

// Entries of one Gram block (8 MB): large enough for efficient products, small for any N.
constexpr Index kBlockEntries = Index{1} << 20;
constexpr double kMaxLabellingEntries = double(Index{1} << 28);

// Per-block partial sums; for labelling p (column p of A, 1 = "first sample"):
// aKa[p] = Σ_i a_i (K a)_i, aK1[p] = Σ_i a_i (K 1)_i, adiag[p] = Σ_i a_i K_ii. For the Gamma
// approximation: squares = Σ_ij K_ij² over the block's rows, and the block's row sums K1 and diagonal
// (copied into per-row vectors afterwards: in a distributed run the block may be another process's).
struct Partial {
  Vector aKa, aK1, adiag;
  double oneK1 = 0, trace = 0, squares = 0;
  Vector k1, diag;
};

Index count_at_least(const Vector& v, double x) { return (v.array() >= x).count(); }

// The labellings, N x (P + 1): column 0 the observed one (the first n rows), then P uniform n-subsets
// drawn from rng. Every statistic is a function of K·A, so all labellings cost one product per Gram
// block rather than one pass over the Gram matrix each.
Matrix labellings(Index n, Index N, Index permutations, RandomStream& rng) {
  const Index L = permutations + 1;
  Matrix A = Matrix::Zero(N, L);
  A.col(0).head(n).setOnes();
  std::vector<Index> order(static_cast<std::size_t>(N));
  std::iota(order.begin(), order.end(), Index{0});
  for (Index p = 1; p < L; ++p) {
    // A partial Fisher–Yates shuffle gives a uniform n-subset whatever the array's current order.
    for (Index i = 0; i < n; ++i) {
      const auto j = i + static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(N - i)));
      std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
      A(order[static_cast<std::size_t>(i)], p) = 1.0;
    }
  }
  return A;
}

// One partial per Gram block of `rows` rows of the pooled sample Z, shared between the processes of
// a distributed run (kef/distributed_reduce.hpp).
std::vector<Partial> gram_partials(const Kernel& kernel, const Matrix& Z, const Matrix& A, Index rows, Index blocks,
                                   bool with_gamma, const Context& context) {
  const Index N = Z.rows();
  return distributed_parts(
      blocks, context, [] { return Partial(); },
      [&](Index b, Partial& part) {
        const Index r0 = b * rows, len = std::min(rows, N - r0);
        const Matrix Kb = kernel.gram(Z.middleRows(r0, len), Z);
        if (Kb.rows() != len || Kb.cols() != N)
          throw Error("mmd: kernel returned a Gram block of the wrong shape");
        if (!Kb.allFinite())
          throw NumericalError("mmd: kernel values are not finite (rows " + std::to_string(r0) + "..)");
        const Matrix KA = Kb * A;
        part.k1 = Kb.rowwise().sum();
        part.diag.resize(len);
        for (Index i = 0; i < len; ++i) part.diag[i] = Kb(i, r0 + i);
        const auto Ab = A.middleRows(r0, len);
        part.aKa = Ab.cwiseProduct(KA).colwise().sum().transpose();
        part.aK1 = Ab.transpose() * part.k1;
        part.adiag = Ab.transpose() * part.diag;
        part.oneK1 = part.k1.sum();
        part.trace = part.diag.sum();
        if (with_gamma) part.squares = Kb.squaredNorm();
      },
      [](Partial& p) { return std::tie(p.aKa, p.aK1, p.adiag, p.oneK1, p.trace, p.squares, p.k1, p.diag); });
}

// The blocks' partials folded in block order; their row sums and diagonals copied into per-row
// vectors (N each).
Partial fold_partials(std::vector<Partial>& parts, Index rows, Vector& row_sums, Vector& diagonal) {
  const Index blocks = static_cast<Index>(parts.size());
  for (Index b = 0; b < blocks; ++b) {
    const Partial& part = parts[static_cast<std::size_t>(b)];
    row_sums.segment(b * rows, part.k1.size()) = part.k1;
    diagonal.segment(b * rows, part.diag.size()) = part.diag;
  }
  Partial total = std::move(parts[0]);
  for (Index b = 1; b < blocks; ++b) {
    const Partial& part = parts[static_cast<std::size_t>(b)];
    total.aKa += part.aKa;
    total.aK1 += part.aK1;
    total.adiag += part.adiag;
    total.oneK1 += part.oneK1;
    total.trace += part.trace;
    total.squares += part.squares;
  }
  return total;
}

}  // namespace

MmdTest mmd_test(const Kernel& kernel, const Matrix& X, const Matrix& Y, Index permutations,
                 RandomStream& rng, const Context& context, Index block_rows, bool with_gamma) {
  const Index n = X.rows(), m = Y.rows(), N = n + m, D = X.cols();
  if (n < 2 || m < 2)
    throw DataError("mmd: needs at least 2 rows in each sample, got " + std::to_string(n) + " and " +
                    std::to_string(m));
  if (Y.cols() != D)
    throw DataError("mmd: samples of dimension " + std::to_string(D) + " and " + std::to_string(Y.cols()));
  if (permutations < 0) throw Error("mmd: negative number of permutations");
  // The labellings are an N x (P + 1) matrix (the price of one Gram pass for all of them): refuse what
  // would not fit rather than fail in the allocator.
  if (static_cast<double>(N) * static_cast<double>(permutations + 1) > kMaxLabellingEntries)
    throw ConfigError("mmd: " + std::to_string(permutations) + " permutations of " + std::to_string(N) +
                      " pooled rows need " + std::to_string(N) + " x " + std::to_string(permutations + 1) +
                      " labellings in memory, more than 2^28 entries (2 GB); use fewer permutations");
  Matrix Z(N, D);
  Z.topRows(n) = X;
  Z.bottomRows(m) = Y;
  const Index L = permutations + 1;
  const Matrix A = labellings(n, N, permutations, rng);

  const Index rows = block_rows > 0 ? block_rows : std::clamp<Index>(kBlockEntries / N, 16, 512);
  const Index blocks = (N + rows - 1) / rows;
  Vector row_sums(N), diagonal(N);
  std::vector<Partial> parts = gram_partials(kernel, Z, A, rows, blocks, with_gamma, context);
  const Partial total = fold_partials(parts, rows, row_sums, diagonal);
  const Vector& aKa = total.aKa;
  const Vector& aK1 = total.aK1;
  const Vector& adiag = total.adiag;
  const double oneK1 = total.oneK1, trace = total.trace;
  const double nn = static_cast<double>(n), mm = static_cast<double>(m), NN = static_cast<double>(N);
  Vector stat(L), biased(L);
  for (Index p = 0; p < L; ++p) {
    const double sxx = aKa[p] - adiag[p];
    const double sxy = aK1[p] - aKa[p];                                     // aᵀK(1 − a)
    const double syy = (oneK1 - 2 * aK1[p] + aKa[p]) - (trace - adiag[p]);  // (1 − a)ᵀK(1 − a) off-diagonal
    stat[p] = sxx / (nn * (nn - 1)) + syy / (mm * (mm - 1)) - 2 * sxy / (nn * mm);
    // docs/math.md §8.9: the V-statistic keeps the diagonal terms.
    biased[p] = aKa[p] / (nn * nn) + (oneK1 - 2 * aK1[p] + aKa[p]) / (mm * mm) - 2 * sxy / (nn * mm);
  }
  MmdTest out;
  out.mmd2 = stat[0];
  out.mmd2_biased = biased[0];
  out.permuted = stat.tail(permutations);
  out.permuted_biased = biased.tail(permutations);
  if (permutations > 0) {
    const double denom = static_cast<double>(1 + permutations);
    out.p_value = static_cast<double>(1 + count_at_least(out.permuted, out.mmd2)) / denom;
    out.p_value_biased =
        static_cast<double>(1 + count_at_least(out.permuted_biased, out.mmd2_biased)) / denom;
  }
  if (with_gamma) {
    // docs/math.md §8.9: MMD²_b = c²·aᵀK̃a with K̃ = HKH the doubly centred pooled Gram matrix and
    // c = N/(nm). Mean: the exact permutation mean. Variance: the asymptotic 2(1/n + 1/m)² E k̃(z, z')²,
    // with E k̃² the mean of the off-diagonal squares of K̃ (‖K̃‖²_F = ‖K‖²_F − 2‖K1‖²/N + (1ᵀK1)²/N²).
    const double mean_diag = trace / NN, mean_off = (oneK1 - trace) / (NN * (NN - 1));
    const double scale = 1 / nn + 1 / mm;
    const double mean = scale * (mean_diag - mean_off);
    const double frob = total.squares - 2 * row_sums.squaredNorm() / NN + oneK1 * oneK1 / (NN * NN);
    const Vector centred_diag = diagonal.array() - 2 * row_sums.array() / NN + oneK1 / (NN * NN);
    const double off_squares = std::max(0.0, frob - centred_diag.squaredNorm()) / (NN * (NN - 1));
    out.gamma = match_gamma(mean, 2 * scale * scale * off_squares, "mmd: Gamma approximation");
    out.gamma_p_value = out.gamma.p_value(out.mmd2_biased);
  }
  return out;
}

}  // namespace kef
