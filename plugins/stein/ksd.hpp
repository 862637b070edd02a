#pragma once
// The kernel Stein discrepancy (Chwialkowski et al. 2016; Liu et al. 2016), docs/math.md §8, with a wild
// bootstrap. Streams over the N² pairs in blocks: memory holds the data, its scores and N·B bits of
// bootstrap signs, never an N x N matrix.
#include <optional>
#include <string>
#include <vector>

#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/evaluator.hpp"
#include "kef/kernel.hpp"
#include "kef/options.hpp"
#include "kef/random.hpp"
#include "kef/registry.hpp"

namespace kef::stein {

// Stein kernel h(x_a, x_b) for a block of rows (Xa, Sa) against (Xb, Sb), na x nb, for a radial base
// kernel k(x, y) = φ(r), r = ‖x − y‖² (kef/radial_profile.hpp: Gaussian, IMQ). With ∇_x k = 2φ'(x − y)
// = −∇_y k and Σ_d ∂_{x_d}∂_{y_d} k = −(2Dφ' + 4φ''r):
//   h = φ s_a·s_b + 2φ' (s_b − s_a)·(x_a − x_b) − 2Dφ' − 4φ''r,
// three GEMMs and O(1) work per pair instead of O(D) derivative stacks. ksd_test forms the same h in a
// fused, tiled pass (ksd.cpp) and never calls this; it is kept as the unfused reference, which the
// tests check against the definition built from the kernel's cross_derivatives().
Matrix stein_kernel(const RadialProfile& k, const Matrix& Xa, const Matrix& Sa, const Matrix& Xb,
                    const Matrix& Sb);

struct KsdResult {
  double statistic = 0.0;         // U: Σ_{i≠j} h / (N(N − 1)); V: Σ_{i,j} h / N²
  std::vector<double> bootstrap;  // the statistic under Rademacher weights, one per draw
  double pvalue = 0.0;            // (1 + #{bootstrap ≥ statistic}) / (1 + B); NaN when B = 0
};

// Error when k is not radial (radial_profile() is null).
KsdResult ksd_test(const Kernel& k, const Matrix& X, const Matrix& S, bool u_statistic, Index bootstrap_draws,
                   RandomStream& rng, const Context& context);

KeyList ksd_keys();

class KsdEvaluator final : public Clonable<KsdEvaluator, Evaluator> {
 public:
  KsdEvaluator(const Config& cfg, const BuildContext& ctx);
  EvaluationResult evaluate(const EvalInput& input) override;
  // The split's size, before any model is fitted.
  void check(const DataShape& data) const override;

 private:
  KeySites sites_;
  Registry* registry_;
  std::string split_, kernel_;
  std::optional<double> bandwidth_;
  BandwidthRule rule_;  // without bandwidth_: median (default) or BKL
  double imq_c_ = 1.0, imq_beta_ = -0.5;
  bool u_statistic_ = true;
  Index bootstrap_draws_ = 0;
};

}  // namespace kef::stein
