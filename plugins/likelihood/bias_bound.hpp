#pragma once
// DKEF Proposition 1 (docs/math.md §8): an upper bound on the bias log Z − E log Ẑ of the importance-
// sampling estimate from U proposals,
//
//   ψ(t, Z) Var[r] / ((Z − t)² U) + P (4ρ(1 − ρ))^{U/2},
//   ψ(q, Z) = log(Z/q) + q/Z − 1,  t = (s + a)/2,  P = max(ψ(a, Z), ψ(t, Z)),
//
// with a <= r almost surely and P(r <= s) <= ρ < 1/2.
//
// Shift invariance: ψ(q, Z) depends only on q/Z, Var[r]/(Z − t)² is unchanged when r, t and Z are
// all multiplied by e^{−c}, and ρ only compares log r with log s. So every input is taken in log
// space or as moments of r·e^{−c} (ShiftedMoments), and nothing is ever exponentiated unshifted.
#include <string>

#include "kef/importance_sampling.hpp"

namespace kef::likelihood {

struct BoundInputs {
  double log_a = 0.0;          // log of the almost-sure lower bound a of r
  double log_s = 0.0;          // log of the percentile s of r
  double rho = 0.0;            // upper confidence bound on P(r <= s)
  ShiftedMoments moments;      // an independent sample: Z and Var[r]
  Index proposals = 0;         // U, the proposals behind Ẑ
};

struct BoundResult {
  bool available = false;
  std::string reason;          // why not, when not available
  double value = 0.0;
  double variance_term = 0.0;      // ψ(t, Z) Var[r] / ((Z − t)² U)
  double exponential_term = 0.0;   // P (4ρ(1 − ρ))^{U/2}
  double log_t = 0.0, log_z = 0.0, psi_t = 0.0, p = 0.0;
};

// ψ(q, Z) written as a function of x = log(Z/q): x + e^{−x} − 1, accurate for small x too.
double psi_of_log_ratio(double x);

// Hoeffding: P(r <= s) <= count/n + sqrt(log(1/(1 − confidence)) / (2n)) with the given confidence.
double hoeffding_upper(Index count, Index n, double confidence);

BoundResult proposition1(const BoundInputs& in);

}  // namespace kef::likelihood
