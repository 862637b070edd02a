#pragma once
// Hamiltonian Monte Carlo for any Model with a score (∇ log p~), and draw_samples(): a model's own
// exact sampler when it has one, HMC otherwise (evaluators that need model samples, `kef sample`).
//
// The sampler: leapfrog with a fixed number of steps, a diagonal mass matrix (identity, or estimated
// in warm-up), per-chain step sizes tuned in warm-up by dual averaging towards a target acceptance
// (Hoffman & Gelman 2014, §3.2), Metropolis correction. Chains are independent.
//
// Batching and threads. The Model API is batched (one virtual call per matrix), and a call for one
// row costs nearly as much as for a few; so chains are cut into fixed groups of `chains_per_batch`
// and each group advances as one (group x D) matrix per leapfrog step. Groups run in parallel with
// kef::parallel_for. Each chain draws only from its own stream (root.derive(chain)), and the groups
// depend only on the options, so samples are bitwise identical for any thread count. (Changing
// `chains_per_batch` may change the last bits, since a model's arithmetic per row can depend on the
// batch shape.) In a distributed run (kef/distributed_reduce.hpp) the groups are shared between the
// processes, which exchange the finished chains' draws and statistics: every process returns the
// single-process samples and diagnostics bit for bit.
//
// Output order: samples are interleaved, row s·chains + c holds kept draw s of chain c; so the first
// k·chains rows hold the first k draws of every chain, and a prefix is balanced across chains.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kef/training_rows.hpp"
#include "kef/context.hpp"
#include "kef/model.hpp"
#include "kef/progress.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

enum class HmcInit {
  Auto,         // init_points when given, else the model's base measure when it can be sampled
  Points,       // rows of init_points (e.g. training data)
  BaseMeasure,  // a draw from Model::base_measure()
};

struct HmcOptions {
  Index chains = 4;
  Index warmup = 500;                // iterations per chain, discarded
  Index samples = 0;                 // kept draws per chain; draw_samples: 0 means ceil(n / chains)
  Index leapfrog_steps = 10;
  double step_size = 0.1;            // initial step size (per chain; adapted in warm-up)
  double target_acceptance = 0.8;    // dual averaging target, in (0, 1)
  double step_size_jitter = 0.2;     // each iteration uses ε·U(1 − j, 1 + j), against periodic orbits
  Index thinning = 1;                // keep every thinning-th draw after warm-up
  bool adapt_step_size = true;
  // Diagonal mass matrix (per chain) from the variance of the draws in 15%–50% of warm-up, with
  // Stan's regularisation; the step size is then adapted afresh over the second half of warm-up.
  // Identity otherwise, or when warm-up is shorter than 20 iterations.
  bool adapt_mass = true;
  Index chains_per_batch = 4;        // chains advanced together in one model call (see above)
  double max_energy_error = 1000.0;  // |ΔH| above this is a divergence (as in Stan)
  HmcInit init = HmcInit::Auto;
  // Starting points (any number of rows, D columns): chain c starts at a row picked at random
  // (distinct rows while there are enough).
  Matrix init_points;
  // Or the same from rows read by position (a training split a distributed run leaves in the data
  // file, kef/training_rows.hpp): only the rows the chains start at are read, and they are the rows
  // init_points would give for the same rows held. Used when init_points is empty.
  TrainingRowsPtr init_rows;
  Progress* progress = nullptr;      // optional; updated at most from one thread at a time
  std::string progress_task = "hmc";
  // Who is sampling what, for error messages: e.g. "model dkef-gn (evaluator mmd)" or
  // "kef sample runs/x/models/m". Empty: "model <type name>".
  std::string context;
};

struct HmcDiagnostics {
  bool ran = false;  // false when draw_samples used the model's own sampler
  // draw_samples used the model's sampler and it is approximate (Facet::ApproximateSampler): the draws
  // are the sampler's q, not p.
  bool approximate = false;
  Index chains = 0, warmup = 0, samples = 0;  // samples: kept draws per chain
  std::vector<double> acceptance_rate;   // per chain: accepted fraction of post-warm-up proposals
  std::vector<double> mean_accept_stat;  // per chain: mean min(1, e^{−ΔH}) after warm-up
  std::vector<double> step_size;         // per chain: final (adapted) step size
  std::vector<Index> divergences;        // per chain, after warm-up (non-finite or |ΔH| too large)
  Index warmup_divergences = 0;          // all chains
  // Divergences (warm-up included) where the model threw a kef::NumericalError instead of returning
  // a value (e.g. a base measure refusing an overflowing derivative far out in the tails), and the
  // first such message (of the lowest chain that had one, so it does not depend on the threads).
  Index error_divergences = 0;
  std::string first_error;
  Matrix inverse_mass;                   // chains x D: diagonal of M⁻¹ used after warm-up
  // Per coordinate, over all chains, each split in halves (Vehtari et al. 2021 without rank
  // normalisation): Geyer's initial monotone sequence ESS, and split-R̂. NaN when there are fewer
  // than 8 kept draws per chain, or when the draws of a coordinate are constant.
  Vector ess;
  Vector r_hat;

  double mean_acceptance() const;
  double min_ess() const;
  double max_r_hat() const;
  Index total_divergences() const;
  // The chains that accepted no proposal after warm-up: each kept draw of such a chain is its one
  // point, whatever the ESS of the others says (a step size adapted to nothing, a chain caught where
  // every trajectory diverges).
  std::vector<Index> stuck_chains() const;
  // "chain 3 (step size 2e-167)" for each stuck chain, joined by ", "; empty when none.
  std::string stuck_chains_text() const;
  std::string summary() const;  // one line: chains, acceptance, step sizes, ESS, R̂, divergences
};

// Checks options (and init_points against dim, if dim >= 0); ConfigError naming the option.
void validate(const HmcOptions& options, Index dim = -1);

// Runs HMC on log p~ of `model`: returns (samples · chains) x D, interleaved as described above.
// Draws one number from rng and derives every stream from it, so successive calls differ.
// ConfigError for invalid options or when no starting point is available; NumericalError naming the
// model (options.context) and the chain when log p~ or the score is not finite, or the model throws,
// at a chain's starting point. During a trajectory, a non-finite value or a kef::NumericalError from
// the model is a divergence of that chain (counted in the diagnostics), never fatal: the batch is
// re-evaluated row by row so that only the rows that fail are affected.
Matrix run_hmc(const Model& model, RandomStream& rng, const HmcOptions& options, const Context& context,
               HmcDiagnostics* diagnostics = nullptr);

// n samples from `model`: its exact sampler when can_sample(), HMC otherwise (with
// options.samples = ceil(n / chains) when 0; the first n interleaved rows are returned).
// `diagnostics`, when given, is reset and filled only when HMC ran.
Matrix draw_samples(const Model& model, Index n, RandomStream& rng, const HmcOptions& options,
                    const Context& context, HmcDiagnostics* diagnostics = nullptr);

// The leapfrog integrator (docs/math.md §10) that run_hmc uses, for samplers that bring their own
// score (kernel adaptive HMC, kef/kahmc.hpp, integrates with a surrogate's score). Moves each row r
// of a batch `steps` steps with step size eps[r] and diagonal inverse mass inv_mass.row(r): on entry
// X1 = X0 are the positions, P1 the momenta and S1 the score at X1; on return the end of each
// trajectory. score(Y) gives the score at the rows of Y (N x D). Rows with alive[r] == 0 do not move.
// A row whose position or score becomes non-finite is a divergence: on_divergence(r) is called (right
// after that step's score call), alive[r] is set to 0 and the row is parked at X0.row(r).
void leapfrog(const std::function<Matrix(const Matrix&)>& score, const Matrix& X0, const Vector& eps,
              const Matrix& inv_mass, Index steps, Matrix& X1, Matrix& P1, Matrix& S1,
              std::vector<char>& alive, const std::function<void(Index)>& on_divergence = {});

// Convergence statistics on draws[c] (iterations x D, one matrix per chain, equal lengths): split
// chains, then Geyer's initial monotone sequence ESS and split-R̂ per coordinate.
Vector effective_sample_size(const std::vector<Matrix>& draws);
Vector split_r_hat(const std::vector<Matrix>& draws);

}  // namespace kef
