#pragma once
// Kernel adaptive HMC (KMC lite; Strathmann, Sejdinovic, Livingstone, Szabo & Gretton 2015,
// "Gradient-free Hamiltonian Monte Carlo with efficient kernel exponential families"): a sampler
// for targets whose log density can be evaluated but not differentiated (kef/target.hpp).
//
// Each chain starts as random-walk Metropolis (its scale adapted towards 0.234 acceptance), then
// fits a lite kernel exponential family (docs/math.md §4, inducing points = the data) to a
// subsample of its own history and proposes HMC trajectories integrated with that surrogate's score
// (hmc.hpp's leapfrog), accepted with the TRUE target's log density: the surrogate only shapes the
// proposal, so its errors cost acceptance, never correctness. The surrogate is refitted at HMC
// iteration k with probability a_k = k^(−δ) (never after `adaptation_stop` iterations when that is
// set): the adaptation vanishes, which keeps the chain ergodic for the target (Roberts & Rosenthal
// 2007, diminishing adaptation). docs/math.md §12 has the algorithm, the schedule and the rule.
//
// It lives in the models layer because the surrogate is a LiteModel. Chains are independent and run
// in parallel, each on its own stream root.derive(chain), so results depend on the seed and never on
// the thread count. The same function runs plain random-walk Metropolis (the baseline of the
// comparison in experiments/kahmc), with `method = RandomWalk`.
#include <functional>
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/kernel.hpp"
#include "kef/progress.hpp"
#include "kef/random.hpp"
#include "kef/target.hpp"
#include "kef/types.hpp"

namespace kef {

enum class KahmcMethod {
  Kahmc,       // random-walk burn-in, then HMC with the surrogate's score
  RandomWalk,  // random-walk Metropolis throughout (scale tuned towards rwm_target_acceptance)
};

enum class KahmcSurrogate { Lite, Nystrom };

struct KahmcOptions {
  KahmcMethod method = KahmcMethod::Kahmc;
  Index chains = 4;
  // Iterations per chain: burn_in random-walk steps, then warmup more (KAHMC: HMC steps whose step
  // size is adapted; RandomWalk: scale adaptation goes on), all discarded; then samples x thinning.
  Index burn_in = 1000;
  Index warmup = 500;
  Index samples = 1000;
  Index thinning = 1;
  double rwm_target_acceptance = 0.234;  // Roberts, Gelman & Gilks (1997)

  // The surrogate. δ of the refit probability a_k = k^(−δ) at HMC iteration k = 1, 2, ... (a_1 = 1:
  // the first fit happens when HMC starts); 0 refits every iteration and then needs adaptation_stop.
  double adaptation_decay = 0.5;
  Index adaptation_stop = 0;   // > 0: no refit after HMC iteration adaptation_stop; 0: no limit
  Index history_points = 200;  // history rows (uniform subsample) the surrogate is fitted on
  // The surrogate's basis. Lite (KMC lite): k(z, ·) at every distinct subsample row. Nystrom: the
  // first-derivative basis ∂_i k(z_b, ·) at nystrom_points distinct subsample rows (0: ⌈√n log n⌉ of
  // the n distinct rows, the poster's θ = 1/2, at most n), a system of nystrom_points·D unknowns
  // accumulated over all subsample rows (docs/math.md §6, with q0 = 1).
  KahmcSurrogate surrogate = KahmcSurrogate::Lite;
  Index nystrom_points = 0;
  // Gaussian-kernel length scale σ and ridge λ (λ = ratio · tr(G)/M): chosen at the first fit by
  // held-out score matching on the history (a held_out_fraction of its subsample), over σ = factor ×
  // the median distance between the subsample's rows and the listed ratios; fixed values skip the
  // search. The chosen σ and ratio are kept for later refits.
  std::vector<double> bandwidth_factors = {0.25, 0.5, 1.0, 2.0};
  std::vector<double> lambda_ratios = {1e-5, 1e-3, 1e-1};
  double bandwidth = 0;     // > 0: this σ, no search over factors
  double lambda_ratio = 0;  // > 0: this ratio, no search over ratios
  double held_out_fraction = 0.2;

  // The HMC proposal: identity mass scaled by the history's per-coordinate variance (updated with the
  // surrogate), step size adapted in warm-up towards target_acceptance by a Robbins–Monro step on
  // log ε, each iteration jittered by U(1 − j, 1 + j).
  Index leapfrog_steps = 10;
  double step_size = 0.5;
  double target_acceptance = 0.7;
  double step_size_jitter = 0.2;

  // Starting points (D columns): chain c starts at row c mod rows. Empty: independent N(0, I) draws.
  Matrix init_points;
  Progress* progress = nullptr;
  std::string progress_task = "kahmc";
  // Who samples what, for messages ("kef sample --target synthetic/banana"); empty: the target's type.
  std::string context;
};

// A Gaussian kernel (or any radial kernel) of length scale σ: the surrogate's kernel. Called from
// the sampler's threads under a lock, so a registry-backed factory is safe.
using KernelFamily = std::function<KernelPtr(double sigma)>;

struct KahmcResult {
  Matrix samples;  // (samples · chains) x D, row s·chains + c = kept draw s of chain c (as run_hmc)
  Index chains = 0, samples_per_chain = 0;
  // Per coordinate, over all chains: split-chain ESS and split-R̂ as run_hmc reports them.
  Vector ess, r_hat;
  std::vector<double> acceptance_rate;     // per chain, over the kept iterations
  std::vector<double> rwm_scale;           // per chain, final random-walk scale
  std::vector<double> step_size;           // per chain, final HMC step size (KAHMC)
  std::vector<double> bandwidth;           // per chain, the surrogate's σ (KAHMC)
  std::vector<double> lambda_ratio;        // per chain, the surrogate's λ ratio (KAHMC)
  std::vector<std::vector<Index>> refits;  // per chain, the HMC iterations k at which it refitted
  // Per chain, refits whose lite system could not be solved (the previous surrogate was kept; a
  // failure of the first fit is an error instead).
  std::vector<Index> failed_refits;
  std::vector<Index> divergences;  // per chain, trajectories whose surrogate score diverged
  // Rows at which the target's log density was evaluated, all chains, burn-in and warm-up included
  // (the starting points too). KAHMC evaluates the target once per iteration, at the trajectory's end.
  Index target_evaluations = 0;

  double mean_acceptance() const;
  double min_ess() const;    // NaN when a coordinate has no estimate
  double max_r_hat() const;  // NaN when a coordinate has no estimate
  Index total_refits() const;
  std::string summary() const;  // one line for logs
};

// Checks options against the target's dimension (dim >= 0); ConfigError naming the option.
void validate(const KahmcOptions& options, Index dim);

// Runs the sampler. Draws one number from rng and derives every stream from it. `kernels` is needed
// for KAHMC only. ConfigError for invalid options; DataError when the target's log density is not
// finite at a chain's starting point; the target's own errors pass through.
KahmcResult run_kahmc(const Target& target, const KernelFamily& kernels, RandomStream& rng,
                      const KahmcOptions& options, const Context& context);

}  // namespace kef
