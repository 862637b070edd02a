#include "kef/hsic_test.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef {
namespace {

Matrix checked_gram(const Kernel& kernel, const Matrix& X, const char* which) {
  Matrix K = kernel.gram(X, X);
  if (K.rows() != X.rows() || K.cols() != X.rows())
    throw Error(std::string("hsic: kernel returned a Gram matrix of the wrong shape for ") + which);
  if (!K.allFinite())
    throw NumericalError(std::string("hsic: kernel values of ") + which + " are not finite");
  return K;
}

// K ← HKH in place. K is symmetric, so its column means are its row means.
void double_centre(Matrix& K) {
  const Vector mean = K.colwise().mean().transpose();
  const double grand = mean.mean();
  K.colwise() -= mean;
  K.rowwise() -= mean.transpose();
  K.array() += grand;
}

// Song et al. (2012), docs/math.md §8.10, from the raw Gram matrices with zeroed diagonals K̂, L̂:
// [tr(K̂L̂) + 1ᵀK̂1 · 1ᵀL̂1 / ((n−1)(n−2)) − 2/(n−2) · 1ᵀK̂L̂1] / (n(n−3)).
double unbiased_hsic(Matrix& K, Matrix& L) {
  const Vector dk = K.diagonal(), dl = L.diagonal();
  K.diagonal().setZero();
  L.diagonal().setZero();
  const double nn = static_cast<double>(K.rows());
  const Vector k1 = K.rowwise().sum(), l1 = L.rowwise().sum();
  const double trKL = K.cwiseProduct(L).sum();
  const double u =
      (trKL + k1.sum() * l1.sum() / ((nn - 1) * (nn - 2)) - 2 / (nn - 2) * k1.dot(l1)) / (nn * (nn - 3));
  K.diagonal() = dk;
  L.diagonal() = dl;
  return u;
}

}  // namespace

namespace {

// HSIC_b for each of `count` pairings perms[0..count) (docs/math.md §8.10), as
// Σ_a Σ_i K̃_{i, π⁻¹(a)} L̃_{π(i), a}: the outer loop runs over the columns a of L̃, each read once for
// all the pairings (it stays in L1 while they gather from it), and each pairing streams the column
// j = π⁻¹(a) of K̃ sequentially, which the prefetcher follows; the other order (columns of K̃ outer,
// gathers from a different column of L̃ per pairing) waits on memory for every gather. By symmetry
// only i > j is summed, twice, plus the diagonal; four partial sums let the gathers pipeline.
void hsic_permuted_batch(const Matrix& Kc, const Matrix& Lc, const std::vector<Index>* perms, Index count,
                         double* out) {
  const Index n = Kc.rows();
  std::vector<double> off(static_cast<std::size_t>(count), 0.0), diag(static_cast<std::size_t>(count), 0.0);
  std::vector<std::vector<Index>> inverse(static_cast<std::size_t>(count),
                                          std::vector<Index>(static_cast<std::size_t>(n)));
  for (Index q = 0; q < count; ++q)
    for (Index i = 0; i < n; ++i)
      inverse[static_cast<std::size_t>(q)][static_cast<std::size_t>(perms[q][static_cast<std::size_t>(i)])] =
          i;
  for (Index a = 0; a < n; ++a) {
    const double* l = Lc.col(a).data();
    for (Index q = 0; q < count; ++q) {
      const Index* p = perms[q].data();
      const Index j = inverse[static_cast<std::size_t>(q)][static_cast<std::size_t>(a)];
      const double* k = Kc.col(j).data();
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      Index i = j + 1;
      for (; i + 3 < n; i += 4) {
        s0 += k[i] * l[p[i]];
        s1 += k[i + 1] * l[p[i + 1]];
        s2 += k[i + 2] * l[p[i + 2]];
        s3 += k[i + 3] * l[p[i + 3]];
      }
      for (; i < n; ++i) s0 += k[i] * l[p[i]];
      off[static_cast<std::size_t>(q)] += (s0 + s1) + (s2 + s3);
      diag[static_cast<std::size_t>(q)] += k[j] * l[a];
    }
  }
  const double nn = static_cast<double>(n);
  for (Index q = 0; q < count; ++q)
    out[q] = (diag[static_cast<std::size_t>(q)] + 2 * off[static_cast<std::size_t>(q)]) / (nn * nn);
}

}  // namespace

double hsic_permuted(const Matrix& Kc, const Matrix& Lc, const std::vector<Index>& perm) {
  double out = 0;
  hsic_permuted_batch(Kc, Lc, &perm, 1, &out);
  return out;
}

HsicTest hsic_test(const Kernel& kernel_x, const Kernel& kernel_y, const Matrix& X, const Matrix& Y,
                   Index permutations, const RandomStream& rng, const Context& context, bool with_gamma) {
  const Index n = X.rows();
  if (Y.rows() != n)
    throw DataError("hsic: X has " + std::to_string(n) + " rows and Y has " + std::to_string(Y.rows()) +
                    "; an independence test needs paired rows (the same count)");
  if (n < 4) throw DataError("hsic: needs at least 4 paired rows, got " + std::to_string(n));
  if (permutations < 0) throw Error("hsic: negative number of permutations");
  Matrix Kc = checked_gram(kernel_x, X, "X");
  Matrix Lc = checked_gram(kernel_y, Y, "Y");
  HsicTest out;
  out.hsic_unbiased = unbiased_hsic(Kc, Lc);
  double_centre(Kc);
  double_centre(Lc);

  std::vector<Index> identity(static_cast<std::size_t>(n));
  std::iota(identity.begin(), identity.end(), Index{0});
  out.hsic = hsic_permuted(Kc, Lc, identity);
  const double nn = static_cast<double>(n);

  out.permuted.resize(permutations);
  const Index blocks = (permutations + kHsicPermutationBlock - 1) / kHsicPermutationBlock;
  parallel_for(blocks, context.threads(), [&](Index b) {
    RandomStream block_rng = rng.derive(static_cast<std::uint64_t>(b));
    const Index first = b * kHsicPermutationBlock,
                count = std::min(permutations - first, kHsicPermutationBlock);
    std::vector<std::vector<Index>> perms(static_cast<std::size_t>(count), identity);
    for (auto& perm : perms) {
      // Fisher–Yates from the identity: each permutation is uniform and independent of the others.
      for (Index i = n - 1; i > 0; --i) {
        const auto j = static_cast<Index>(block_rng.uniform_int(static_cast<std::uint64_t>(i + 1)));
        std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(j)]);
      }
    }
    hsic_permuted_batch(Kc, Lc, perms.data(), count, out.permuted.data() + first);
  });
  if (permutations > 0)
    out.p_value = static_cast<double>(1 + (out.permuted.array() >= out.hsic).count()) /
                  static_cast<double>(1 + permutations);

  if (with_gamma) {
    // docs/math.md §8.10. Mean: the exact mean of HSIC_b over all n! pairings, tr K̃ · tr L̃ / (n²(n − 1)).
    // Variance: the asymptotic 2 E[k̃²] E[l̃²] / n² (the two factors separate under independence), each
    // from the off-diagonal squares of its centred Gram matrix.
    const double mean = Kc.trace() * Lc.trace() / (nn * nn * (nn - 1));
    auto off_diagonal_squares = [nn](const Matrix& A) {
      return (A.squaredNorm() - A.diagonal().squaredNorm()) / (nn * (nn - 1));
    };
    const double variance = 2 * off_diagonal_squares(Kc) * off_diagonal_squares(Lc) / (nn * nn);
    out.gamma = match_gamma(mean, variance, "hsic: Gamma approximation");
    out.gamma_p_value = out.gamma.p_value(out.hsic);
  }
  return out;
}

}  // namespace kef
