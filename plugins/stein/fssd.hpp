#pragma once
// The finite-set Stein discrepancy (Jitkrittum et al. 2017) and its relative test (Jitkrittum et al.
// 2018), docs/math.md §8. Everything streams over the rows in kRowChunk chunks.
#include <limits>
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/radial_profile.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::stein {

// τ(x_n) for the rows of X with scores S, written into T (N x (D·J)): column d·J + j is
// ξ_d(x_n, v_j) / √(DJ), ξ(x, v) = s(x) k(x, v) + ∇_x k(x, v). `stacks` receives the kernel's value
// and first-derivative stacks at (X, V), which the backward pass of the power criterion reuses. T and
// the stacks are only resized when their shape changes, so chunked loops reuse their buffers (fresh
// multi-megabyte buffers per chunk cost more in page faults than the arithmetic).
void fssd_features(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S, KernelStacks& stacks,
                   Matrix& T);
// The same from stacks already computed (two models sharing the kernel evaluations).
void fssd_features(const KernelStacks& stacks, const Matrix& S, Index J, Matrix& T);

// Buffers a chunked loop keeps per work slot.
struct FeatureWorkspace {
  KernelStacks stacks;
  Matrix T, Tq;
  Matrix r, phi, dphi;  // the radial path's n x J squared distances and profile values
};

// τ for a radial kernel k = φ(‖x − v‖²) (kef/radial_profile.hpp): ξ_d(x, v) = s_d φ(r) + 2φ'(r)(x_d − v_d),
// from n x J matrices instead of the (n·D) x J derivative stack; same layout and scale as above.
// fssd_test's path for the Gaussian kernel; the stack path is its brute-force twin in the tests.
void fssd_features_radial(const RadialProfile& profile, const Matrix& V, const Eigen::Ref<const Matrix>& X,
                          const Eigen::Ref<const Matrix>& S, FeatureWorkspace& ws, Matrix& T);

// Σ τ, Σ ‖τ‖² and, when asked, the unbiased covariance of τ (lower triangle only; as numpy.cov),
// streamed over the rows in fixed chunks and groups (the same for any thread count).
struct FssdMoments {
  Vector sum;
  double sum_sq = 0.0;
  Matrix cov;  // P x P, P = D·J; empty unless with_covariance
};
FssdMoments fssd_moments(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                         bool with_covariance, const Context& context);

struct FssdResult {
  double fssd2 = 0.0;  // unbiased: (‖Σ τ‖² − Σ ‖τ‖²) / (N(N − 1))
  double pvalue = std::numeric_limits<double>::quiet_NaN();  // NaN when null_draws = 0
};

// FSSD² of the scores S at locations V, and the p-value of N·FSSD² under its null Σ ω_i (χ²_1 − 1),
// ω the eigenvalues of the covariance of τ (unbiased, as numpy.cov), simulated with null_draws
// draws from rng (simulate_quadratic_null). Needs N ≥ 2.
FssdResult fssd_test(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                     Index null_draws, RandomStream& rng, const Context& context);

// Draws from Σ_i ω_i (Z_i² − 1), ω the eigenvalues of the symmetric PSD matrix `cov` (lower triangle
// read), as zᵀ cov z − tr(cov) with z ~ N(0, I): the same law (rotate z into cov's eigenbasis) without
// an eigendecomposition, one GEMM for every 64 draws. z from kef::fill_normal (ziggurat). Fixed groups
// with derived streams: the draws do not depend on the thread count.
std::vector<double> simulate_quadratic_null(const Matrix& cov, Index draws, const RandomStream& rng,
                                            const Context& context);

struct RelativeFssdResult {
  double fssd2_p = 0.0, fssd2_q = 0.0;
  double statistic = 0.0;  // √N (FSSD²_p − FSSD²_q)
  double sigma = 0.0;      // √(v_p − 2 c_pq + v_q)
  double pvalue = 0.5;     // 1 − Φ(statistic / sigma): small when q fits better than p
};

// Both models at the same locations and kernel, on the same rows X (scores S_p, S_q).
RelativeFssdResult relative_fssd_test(const Kernel& kernel, const Matrix& V, const Matrix& X,
                                      const Matrix& S_p, const Matrix& S_q, const Context& context);

// The level at which the summary line states an outcome (the p-value itself is reported as is).
constexpr double kRelativeFssdLevel = 0.05;
// The outcome of the test at level `alpha`, in words: `against` fits significantly better when
// p < alpha; `model` does when 1 − p < alpha (the same test with the models swapped); otherwise the
// data do not tell them apart.
std::string relative_fssd_verdict(double pvalue, double alpha, const std::string& model, const std::string& against);

}  // namespace kef::stein
