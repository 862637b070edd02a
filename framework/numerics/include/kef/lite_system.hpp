#pragma once
// The linear system of the "lite" kernel exponential family (docs/math.md §4, DKEF Proposition 3):
//   α = −(G + λ_α I + λ_H K + λ_C U)^{-1} b,
//   G = B1ᵀB1/N, U = B2ᵀB2/N, b = (B2ᵀ1 + B1ᵀq1 + λ_C B2ᵀq2)/N.
// Accumulated over chunks of rows so memory stays flat in N; parallel over a fixed number of row
// blocks whose partial sums are added in block order, so the result does not depend on threads.
//
// Radial kernels k = φ(‖x − z‖²), with r_nz = ‖x_n − z‖², Φ' = φ'(r), Φ'' = φ''(r) (N x M):
//   Σ_d ∂_d k(x, z) ∂_d k(x, z') = 4 φ'_z φ'_z' (x − z)·(x − z') = 2 φ'_z φ'_z' (r_z + r_z' − ‖z − z'‖²)
// so G = (2/N) (C + Cᵀ − S ∘ Φ'ᵀΦ') with C = (Φ' ∘ r)ᵀ Φ' and S the squared distances between
// inducing points: one GEMM and one SYRK on N x M matrices. U has no such collapse (its coordinate
// terms do not factor) and stays a rank-(N·D) update.
#include "kef/base_measure.hpp"
#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/progress.hpp"
#include "kef/training_rows.hpp"
#include "kef/types.hpp"

namespace kef {

struct LiteSystem {
  Matrix G;       // M x M
  Matrix U;       // M x M (empty when not requested)
  Vector b_main;  // (B2ᵀ1 + B1ᵀq1)/N
  Vector b_c;     // B2ᵀq2/N, so that b = b_main + λ_C b_c
  Index rows = 0;
  Vector b(double lambda_c) const { return b_main + lambda_c * b_c; }
};

struct LiteAccumulateOptions {
  bool need_U = true;
  Index chunk_rows = 0;  // 0: chosen from D and M (about 4 MB of stacks per chunk)
  Progress* progress = nullptr;
  // For radial kernels (radial_profile.hpp) G and b are formed from N x M matrices in O(N·M·(M + D))
  // instead of O(N·D·M²); false forces the general stack path, the fast path's brute-force twin.
  bool use_radial_structure = true;
};

// What one chunk of rows adds to the lite system through the kernel's derivative stacks (docs/math.md
// §3), q1 and q2 being the base measure's first and second derivatives flattened in (d, n) order like
// the stacks' rows: G += d1ᵀd1 and, when U is given, U += d2ᵀd2 (lower triangles); b += 1ᵀd2 + d1ᵀq1;
// bc += d2ᵀq2. Shared by the lite fit and DKEF's closed-form meta-gradient.
void add_lite_stack_terms(const KernelStacks& st, const Eigen::Ref<const Vector>& q1, const Eigen::Ref<const Vector>& q2,
                          Matrix& G, Matrix* U, Vector& b, Vector& bc);

LiteSystem accumulate_lite_system(const Kernel& kernel, const BaseMeasure& base, const Matrix& X,
                                  const Matrix& Z, const LiteAccumulateOptions& options,
                                  const Context& context);
// The same sums over a training split read by rows (kef/training_rows.hpp): each process reads the rows
// of its own blocks, one block at a time; the result is bitwise the one from the whole matrix.
LiteSystem accumulate_lite_system(const Kernel& kernel, const BaseMeasure& base, const TrainingRows& X,
                                  const Matrix& Z, const LiteAccumulateOptions& options,
                                  const Context& context);

struct LiteSolution {
  Vector alpha;
  double jitter = 0;
};

// K is needed only when lambda_h > 0 (pass an empty matrix otherwise).
LiteSolution solve_lite_system(const LiteSystem& system, const Matrix& K, double lambda_alpha,
                               double lambda_h, double lambda_c);

}  // namespace kef
