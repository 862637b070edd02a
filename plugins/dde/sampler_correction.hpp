#pragma once
// What both DDE models do with their learned sampler q beyond drawing from it: importance resampling
// of its draws against the model p~, and a diagnostic of how far q is from p. Both use the log weights
// log w = log p~ − log q = λ f − ν (+ log p0 − log p0), exact when the dual ν is at its optimum
// log(q / p0); a draw where p~ = 0 (outside p0's box) has log w = −∞.
#include "kef/model_archive.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::dde {

// How a model samples: the sampler's draws as they are, or importance resampling of `candidates`
// sampler draws per returned row (per returned row and given x, for the conditional model).
struct SamplerCorrection {
  bool importance = false;
  Index candidates = 10;
};

// How far the sampler q is from the model p, from sampler draws and their log weights:
struct SamplerDiagnostic {
  double outside_box = 0.0;   // fraction of draws where p~ = 0 (outside the box)
  double ess_fraction = 0.0;  // (Σ w)² / (m Σ w²) over the draws where p~ > 0: 1 when q = p there
  double kl = 0.0;  // log mean w − mean log w over those draws: an estimate of KL(q ‖ p) there
};

// The diagnostic of one set of draws from their log weights (−∞: outside the box). No draw inside:
// ESS 0 and KL +∞.
SamplerDiagnostic diagnose_log_weights(const Vector& log_w);

// Rows drawn with replacement from `candidates` with probabilities ∝ exp(log_w) (multinomial, by the
// cumulative sum; entries −∞ have probability 0). NumericalError when every log weight is −∞ or any
// is NaN/+∞.
Matrix importance_resample(const Matrix& candidates, const Vector& log_w, Index n, RandomStream& rng);

// model.toml's `sampler_correction` and `correction_candidates`; a model saved without them (kef 0.3)
// reads as uncorrected.
void write_correction(ModelWriter& writer, const SamplerCorrection& correction);
SamplerCorrection read_correction(const ModelReader& reader);

}  // namespace kef::dde
