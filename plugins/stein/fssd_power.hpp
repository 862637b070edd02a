#pragma once
// Choosing FSSD test locations and the Gaussian bandwidth by maximising the test's power criterion
// on a training part of the sample (Jitkrittum et al. 2017, §4; kgof's GaussFSSD.optimize_locs_widths).
#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/progress.hpp"
#include "kef/types.hpp"

namespace kef::stein {

struct PowerCriterion {
  double value = 0.0;     // FSSD² / √(σ²_H1 + γ)
  double fssd2 = 0.0;     // unbiased FSSD²
  double variance = 0.0;  // σ²_H1 = 4 mean((τ·μ)²) − 4‖μ‖⁴, the asymptotic variance of √N FSSD² under H1
};

// The criterion on rows X (scores S) for locations V and the kernel's current bandwidth. When grad_V
// (J x D) and grad_log_sigma are given, also its exact gradient with respect to V and log σ, by
// reverse mode through τ and the kernel's backward pass (kernel/gaussian: parameter 0 is log σ).
PowerCriterion fssd_power_criterion(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                                    double gamma, const Context& context, Matrix* grad_V = nullptr,
                                    double* grad_log_sigma = nullptr);

struct PowerOptions {
  double gamma = 1e-4;
  Index steps = 100;
  double learning_rate = 0.05;
};

struct OptimizedLocations {
  Matrix V;
  double bandwidth = 0.0;
  double initial_criterion = 0.0;  // after the bandwidth grid search, before gradient ascent
  double final_criterion = 0.0;    // the best seen, whose V and bandwidth are returned
};

// Projected Adam ascent from V0 and the best of the grid σ = σ0 · 2^{−3/2, −3/4, 0, 3/4, 3/2} (kgof's
// grid over σ² = σ0² · 2^{−3..3}); kgof's box constraints: σ² in [0.01 σ0², 500 σ0²], each location
// coordinate within the data's [min − ½ std, max + ½ std]. Leaves the kernel at the returned bandwidth.
OptimizedLocations optimize_fssd_locations(Kernel& kernel, const Matrix& V0, double sigma0, const Matrix& X,
                                           const Matrix& S, const PowerOptions& options,
                                           const Context& context, Progress* progress);

}  // namespace kef::stein
