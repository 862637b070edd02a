#pragma once
// Annealed importance sampling (Neal 2001) of a model's normaliser Z = ∫ p~ along the geometric path
// π_β ∝ q^{1−β} p~^β from a normalised proposal q (β = 0) to the model (β = 1), with one HMC
// transition (kef's sampler, hmc.hpp) leaving each intermediate π_β invariant (docs/math.md §8).
//
// Forward: x ~ q, log w = Σ_t (β_t − β_{t−1}) f(x_{t−1}), f = log p~ − log q, the particle moved by the
// transition at β_t between steps; E w = Z, so log Ẑ = log mean w (a stochastic lower bound of log Z:
// E log Ẑ <= log Z by Jensen). Reverse (bidirectional Monte Carlo, Grosse et al. 2015): from exact
// samples of the model, the same path backwards gives E w_rev = 1/Z, so −log mean w_rev is a
// stochastic upper bound. The two bracket log Z; their gap bounds the error of either.
//
// Step sizes: a pilot run with its own particles and stream walks the schedule once, adapting the step
// size at each temperature towards target_acceptance; the main runs use the pilot's per-temperature
// step sizes unchanged, so their transitions do not depend on their own particles and the weights stay
// unbiased. Determinism: temperature t's transition draws from stream.derive(t) (HMC chains are the
// particles in fixed groups, each with its own derived stream), f is evaluated in fixed particle blocks,
// and the weights are reduced in particle order: bitwise the same for any thread count. In a distributed
// run each temperature's transition (run_hmc's groups of particles_per_batch particles) and f's blocks
// are shared between the processes (two exchanges of the particles per temperature), with the
// single-process result on every process.
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/importance_sampling.hpp"
#include "kef/model.hpp"
#include "kef/progress.hpp"
#include "kef/proposal.hpp"
#include "kef/random.hpp"

namespace kef {

struct AisOptions {
  Index particles = 256;
  Index temperatures = 200;   // T: β_0 = 0 < β_1 < ... < β_T = 1
  Index leapfrog_steps = 10;  // per HMC transition
  double step_size = 0.1;     // the pilot's initial step size
  Index pilot_particles = 32;
  double target_acceptance = 0.65;
  Index particles_per_batch = 32;  // HMC chains advanced together in one model call
  Progress* progress = nullptr;
  std::string task = "ais";
};

// The sigmoid schedule of Grosse et al. (2013): β_t ∝ σ(δ(2t/T − 1)) rescaled to [0, 1], δ = 4:
// small steps at both ends, where the intermediate distributions change fastest.
std::vector<double> sigmoid_schedule(Index temperatures);

// Per-temperature step sizes (index t = 1..T−1 used; entry 0 and T unused) from a pilot run.
struct AisPilot {
  std::vector<double> step_sizes;
  double mean_acceptance = 0.0;  // over the pilot's transitions
};

struct AisResult {
  Vector log_weights;      // per particle (forward: log w; reverse: log w_rev)
  ShiftedMoments moments;  // of w (forward) or w_rev (reverse)
  double mean_acceptance = 0.0;
  Index divergences = 0;  // over every transition of every particle
  double seconds = 0.0;
  // Forward: log Ẑ = log mean w; reverse: log Ẑ = −log mean w_rev. Delta-method stderr, Kish's ESS.
  double log_z = 0.0, log_z_stderr = 0.0, effective_sample_size = 0.0;
};

// ConfigError naming the option when an option is out of range.
void validate(const AisOptions& options);

AisPilot ais_pilot(const Model& model, const Proposal& proposal, const RandomStream& stream,
                   const AisOptions& options, const Context& context);

// Forward AIS from q; the particles are drawn from q with stream.derive("init").
AisResult ais_forward(const Model& model, const Proposal& proposal, const AisPilot& pilot,
                      const RandomStream& stream, const AisOptions& options, const Context& context);

// Reverse AIS from exact samples of the model (one particle per row of `exact`).
AisResult ais_reverse(const Model& model, const Proposal& proposal, const AisPilot& pilot,
                      const Matrix& exact, const RandomStream& stream, const AisOptions& options,
                      const Context& context);

}  // namespace kef
