#pragma once
// Doubly dual embedding (DDE; Dai, Dai, Gretton, Song, Schuurmans, He 2019; docs/math.md §16): the
// saddle point
//
//   min_q max_{f, ν}  E_data f − E_q f − (η/2)‖f‖²_H + (1/λ)(E_q ν − E_{p0} e^ν)
//
// with f = Σ_i α_i k(z_i, ·) a Gaussian-kernel expansion, q the law of g(ξ), ξ ~ N(0, I), for a ReLU
// network g (the sampler), ν a ReLU network (the dual of KL(q ‖ p0)) and p0 uniform on a box. The
// pieces here are what the estimator, the model and the tests share: the expansion with its input
// gradient, the networks' architecture, the three losses with their exact gradients, and one training
// iteration on given draws (so that a test can feed the reference implementation's draws).
//
// The conditional extension (docs/math.md §16.5; the paper's Remark after (18)) is the same saddle point
// with f a function of (x, y), the sampler g(ξ, x) drawing y for the inputs x of the minibatch, ν(x, y),
// and p0 a density of y alone. One implementation serves both: the conditioning inputs are the first
// `cond_dim` columns of every row that f and ν see, and an extra input of the sampler (cond_dim = 0:
// the unconditional case, computed exactly as before).
#include <string>
#include <utility>
#include <vector>

#include "kef/adam.hpp"
#include "kef/network/network.hpp"
#include "kef/network/rmsprop.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef::dde {

// f(y) = Σ_i α_i exp(−γ ‖y − z_i‖²) over the rows z_i of `points` (kernel centres, the paper's), or
// f(y) = Σ_j α_j φ_j(y) over m random Fourier features of the same kernel (Rahimi and Recht 2007),
// φ_j(y) = √(2/m) cos(ω_jᵀ y + b_j), ω_j ~ N(0, 2γ I), b_j ~ U(0, 2π), so that E[φ(x)ᵀφ(y)] = k(x, y):
// the rows ω_j of `omega` and `phase` b, with `points` empty. Every member below serves both.
struct KernelExpansion {
  Matrix points;  // n x D (kernel centres)
  Vector alpha;   // n, or m
  double gamma = 1.0;
  // Empty for kernel centres, so KernelExpansion{points, alpha, gamma} leaves them out.
  Matrix omega{};  // m x D (random features)
  Vector phase{};  // m

  bool random_features() const { return omega.rows() > 0; }
  Index dim() const { return random_features() ? omega.cols() : points.cols(); }
  // The basis functions at the rows of Y: K(Y, Z) (|Y| x n) or Φ(Y) (|Y| x m).
  Matrix gram(const Matrix& Y) const;
  Vector values(const Matrix& Y) const;
  // ∇_y f at the rows of Y (|Y| x D); with laplacian, also the diagonal second derivatives ∂²_d f; with
  // values, f itself (from the same basis matrix).
  Matrix gradient(const Matrix& Y, Matrix* laplacian = nullptr, Vector* values = nullptr) const;
  // ‖f‖²_H = αᵀ G α: G = K(Z, Z) for centres; for random features the norm in the features' space,
  // G = I (f's norm in the RKHS of the finite feature kernel φ(x)ᵀφ(y)).
  double rkhs_norm2() const;
  Matrix rkhs_gram() const;
};

struct Architecture {
  Index dim = 2;              // D
  Index noise_dim = 128;      // dimension of ξ
  Index width = 128;          // hidden units of g (and of ν unless dual_width is set)
  Index generator_depth = 4;  // linear layers of g: noise_dim → width → … → width → D
  Index dual_depth = 3;       // linear layers of ν: D → width → … → width → 1
  Index cond_dim = 0;         // conditional: columns of x, an extra input of g (ξ, x) and of ν (x, y)
  Index dual_width = 0;       // hidden units of ν when they differ from g's ([model.dual] width); 0: width

  Index generator_width() const { return width; }
  Index dual_hidden() const { return dual_width > 0 ? dual_width : width; }
};
// ReLU between the linear layers, none after the last; Glorot-uniform weights, zero biases (the
// reference's initialisation, drawn by initialize()).
// Before an optimiser step: NumericalError naming `where`, the iteration, the step and its network
// when the gradient has a non-finite entry (the loss can be finite while e^ν's derivative overflows)
// or, when clipping, a norm that overflows; then the gradient clipped to global norm `clip` (clip ≤ 0:
// not clipped).
void check_and_clip(Vector& gradient, double clip, const std::string& where, const char* step, long index);

// MMD²_u (the unbiased U-statistic, docs/math.md §8.7) between the rows of X and of Y (at least 2 each)
// with f's Gaussian kernel exp(−γ‖x − y‖²), its Gram matrices formed by KernelExpansion::gram: the
// statistic the reference implementation logs for its sampler, which checkpoint selection minimises.
double mmd2_unbiased(const Matrix& X, const Matrix& Y, double gamma);

network::Network make_generator(const Architecture& a);
network::Network make_dual(const Architecture& a);

// p0, the base measure of the sampled coordinates (y, or every coordinate when unconditional): uniform
// on the box [a, b] (a = lo, b = hi; the unconditional DDE's) or N(a, diag(b²)) (a = mean, b = sd; the
// conditional DDE's, as Arbel and Gretton's KCEF). `points` maps the raw draws (U(0, 1) for the box,
// N(0, 1) for the Gaussian) to draws of p0.
struct BaseMeasure {
  enum class Kind { box, gaussian };
  Kind kind = Kind::box;
  Vector a, b;

  static BaseMeasure box(Vector lo, Vector hi) { return {Kind::box, std::move(lo), std::move(hi)}; }
  static BaseMeasure gaussian(Vector mean, Vector sd) {
    return {Kind::gaussian, std::move(mean), std::move(sd)};
  }
  Index dim() const { return a.size(); }
  Matrix points(const Matrix& raw) const;
  // log p0 of each row (−∞ outside the box).
  Vector log_density(const Matrix& Y) const;
  // ∇ log p0 and its diagonal second derivatives (0 for the box, inside it).
  void score_and_laplacian(const Matrix& Y, Matrix& score, Matrix& laplacian) const;
};

struct TrainerOptions {
  double lambda = 1.0;  // λ: the sampler minimises −E_q f + (1/λ) E_q ν
  double eta = 0.0;     // η: the f step's RKHS penalty (η/2)‖f‖²_H
  Index rounds = 5;     // (dual steps, sampler step) rounds per f step
  Index dual_steps = 3;
  double clip = 5.0;  // global gradient-norm clip of every update (0: none)
  bool clip_generator = true;
  AdamOptions adam{1e-4, 0.9, 0.999, 1e-8};
  RmsPropOptions rmsprop{1e-4, 0.99, 1e-8};
  Index cond_dim = 0;  // the leading columns of the rows that are conditioning inputs x
  BaseMeasure::Kind base = BaseMeasure::Kind::box;  // which raw draws IterationDraws makes for p0
};

// The random inputs of one iteration, in the order the reference consumes them: ξ for the f step;
// per round r and dual step s (index r·dual_steps + s) a ξ and a U(0, 1) matrix for the box; per round
// a ξ for the sampler step.
struct IterationDraws {
  Matrix xi_f;
  std::vector<Matrix> xi_dual, u_dual;
  std::vector<Matrix> xi_generator;
  static IterationDraws draw(RandomStream& rng, Index batch, Index noise_dim, Index dim,
                             const TrainerOptions& o);
};

struct IterationLosses {
  double f = 0.0;          // −E_batch f + E_q f + (η/2)‖f‖²_H
  double dual = 0.0;       // −(E_q ν − E_u e^ν), the last dual step's
  double generator = 0.0;  // −E_q f + (1/λ) E_q ν, the last sampler step's
};

class Trainer {
 public:
  // lo, hi: the box of p0 (hi > lo in every coordinate). `where` names the estimator in errors.
  Trainer(KernelExpansion f, network::Network generator, network::Network dual, Vector lo, Vector hi,
          TrainerOptions options, std::string where);
  Trainer(KernelExpansion f, network::Network generator, network::Network dual, BaseMeasure p0,
          TrainerOptions options, std::string where);

  // One f step, then `rounds` × (dual_steps ν steps, one sampler step) on the given minibatch, whose
  // rows are (x, y) with x the first cond_dim columns (the sampler draws y for those x).
  // NumericalError naming the step and network when a loss or gradient is not finite.
  IterationLosses iteration(const Matrix& batch, const IterationDraws& draws, long index = 0);

  // The losses and their exact gradients (tests compare them with central differences).
  // f step, in α: batch rows X_b, sampler rows X_q.
  double f_loss(const Matrix& batch, const Matrix& xq, Vector* grad) const;
  // ν step, in ν's parameters: sampler rows X_q, box rows X_u.
  double dual_loss(const Matrix& xq, const Matrix& xu, Vector* grad) const;
  // sampler step, in g's parameters, at noise ξ (and conditioning inputs `cond`, one row per row of ξ,
  // when cond_dim > 0).
  double generator_loss(const Matrix& xi, Vector* grad, const Matrix& cond = Matrix()) const;

  // The rows f and ν see for sampler draws at noise ξ: g(ξ), or (x, g(ξ, x)) for the inputs `cond`.
  Matrix sampler_rows(const Matrix& xi, const Matrix& cond = Matrix()) const;
  // The rows for p0 draws: p0.points(raw), or (x, p0.points(raw)).
  Matrix base_rows(const Matrix& raw, const Matrix& cond = Matrix()) const;
  Matrix box_points(const Matrix& u) const { return p0_.points(u); }

  const KernelExpansion& f() const { return f_; }
  KernelExpansion& f() { return f_; }
  const network::Network& generator() const { return generator_; }
  network::Network& generator() { return generator_; }
  const network::Network& dual() const { return dual_; }
  network::Network& dual() { return dual_; }
  const Vector& lo() const { return p0_.a; }
  const Vector& hi() const { return p0_.b; }
  const BaseMeasure& base() const { return p0_; }

 private:
  void check(double loss, const char* step, long index) const;
  KernelExpansion f_;
  network::Network generator_, dual_;
  BaseMeasure p0_;
  TrainerOptions o_;
  std::string where_;
  Matrix rkhs_gram_;  // f_.rkhs_gram() when η > 0
  Adam adam_f_, adam_g_;
  RmsProp rms_nu_;
};

}  // namespace kef::dde
