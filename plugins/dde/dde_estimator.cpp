#include "dde_estimator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>

#include "dde_conditional_model.hpp"
#include "dde_model.hpp"
#include "dde_parts.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"

namespace kef::dde {

namespace {

// The keys of both estimators; `conditional` selects the defaults of the reference's conditional
// configurations (dde/conditional/default_configs: widths 64, ξ of dimension 64, three layers each) and
// the keys only one of the two has.
// flat table: one declaration per key, in the order `kef plugins` and the README list them.
OptionsSpec<DdeOptions> make_spec(bool conditional) {
  using O = DdeOptions;
  OptionsSpec<O> s;
  const std::int64_t width = conditional ? 64 : 128, gen_depth = conditional ? 3 : 4;
  s.integer("iterations", &O::iterations, "training iterations (one minibatch each)", 50000).at_least(1);
  s.integer("batch_size", &O::batch_size,
            "B: data rows per minibatch, and sampler and box draws per step (at most the training rows)", 100)
      .at_least(1);
  s.integer("noise_dim", &O::noise_dim, "dimension of the sampler's input ξ ~ N(0, I)", width).at_least(1);
  s.integer("width", &O::width, "hidden units of every hidden layer of the sampler and the dual", width)
      .at_least(1);
  s.integer("generator_depth", &O::generator_depth, "linear layers of the sampler g (ReLU between them)",
            gen_depth)
      .at_least(1);
  s.integer("dual_depth", &O::dual_depth, "linear layers of the dual ν (ReLU between them)", 3).at_least(1);
  s.integer("rounds", &O::rounds, "rounds of (dual steps, one sampler step) per f step", 5).at_least(1);
  s.integer("dual_steps", &O::dual_steps, "RMSprop steps on ν per round", 3).at_least(1);
  s.integer("inducing_points", &O::inducing_points,
            "kernel centres of f: 0 for every training row (the paper's), m > 0 for m seeded training rows",
            0)
      .non_negative();
  s.integer("random_features", &O::random_features,
            "f over this many random Fourier features of the Gaussian kernel (Rahimi and Recht) instead of "
            "kernel centres; 0: kernel centres (the paper's)",
            0)
      .non_negative();
  s.integer("report_every", &O::report_every, "iterations per progress line and loss-curve point", 100)
      .at_least(1);
  s.string("select", &O::select,
           "which iterate becomes the model: the last (last), or the one whose sampler draws are closest in "
           "MMD² (f's kernel) to the validation rows, or to the training rows without a validation split, "
           "among the iterates checked every select_every iterations (mmd)",
           std::string("last"))
      .one_of({"last", "mmd"});
  s.integer("select_every", &O::select_every, "iterations between the iterates select = \"mmd\" compares",
            1000)
      .at_least(1);
  s.integer("select_samples", &O::select_samples,
            "sampler draws per comparison, and at most this many (seeded) rows compared with them", 1000)
      .at_least(2);
  if (conditional) {
    s.string(
         "base_measure", &O::base_measure,
         "p0 of y: N(mean, (base_sd · sd)²) of the training targets (gaussian; the paper's, after Arbel and "
         "Gretton) or uniform on their box (uniform: log p = −∞ for a y outside it)",
         std::string("gaussian"))
        .one_of({"gaussian", "uniform"});
    s.number("base_sd", &O::base_sd, "the Gaussian p0's standard deviation in units of the targets' own", 1.0)
        .positive();
  } else {
    s.number("box_margin", &O::box_margin,
             "p0 is uniform on the training box widened by this fraction of its side on each end (0: the "
             "data's bounding box, the paper's; a held-out row outside the box has density 0, log p = −∞)",
             0.0)
        .non_negative();
  }
  s.string("sampler_correction", &O::sampler_correction,
           conditional
               ? "how the model samples y given x: the sampler's draws (none) or importance resampling, "
                 "per x, of correction_candidates draws against log p~(y | x) with weights exp(λf − ν) "
                 "(importance)"
               : "how the model samples: the sampler's draws (none) or importance resampling of them "
                 "against log p~ with weights exp(λf − ν) (importance)",
           std::string("none"))
      .one_of({"none", "importance"});
  s.integer("correction_candidates", &O::correction_candidates,
            conditional
                ? "sampler draws per returned row (per given x) when sampler_correction = \"importance\""
                : "sampler draws per returned row when sampler_correction = \"importance\"",
            10)
      .at_least(2);
  s.integer("diagnostic_samples", &O::diagnostic_samples,
            conditional
                ? "sampler draws for the fit's diagnostic of the sampler's distance from the model, "
                  "spread over min(100, n) training inputs x (at least 2 each; 0: none)"
                : "sampler draws for the fit's diagnostic of the sampler's distance from the model (0: none)",
            10000)
      .non_negative();
  s.number("learning_rate", &O::learning_rate,
           "learning rate of every update (Adam for f and g, RMSprop for ν)", 1e-4)
      .positive();
  s.number("lambda", &O::lambda, "λ: the sampler minimises −E_q f + (1/λ) E_q ν; the model is λ f + log p0",
           1.0)
      .positive();
  s.number("eta", &O::eta, "η: the f step's RKHS penalty (η/2)‖f‖²_H", 0.0).non_negative();
  s.number("f_bd", &O::f_bd,
           conditional ? "kernel bandwidth factor: σ² = f_bd · (median pairwise distance of the (x, y) rows)²"
                       : "kernel bandwidth factor: σ² = f_bd · (median pairwise distance)²",
           0.1)
      .positive();
  s.number("clip", &O::clip, "global gradient-norm clip of every update (0: no clipping)", 5.0)
      .non_negative();
  s.boolean("clip_generator", &O::clip_generator,
            "clip the sampler's gradient too (the paper's \"all updates\"; the reference code does not)",
            true);
  s.number("alpha_init_sd", &O::alpha_init_sd, "α starts as N(0, sd²) draws", 0.1).non_negative();
  s.number("beta1", &O::beta1, "Adam's first-moment decay", 0.9).non_negative().at_most(0.999999);
  s.number("beta2", &O::beta2, "Adam's second-moment decay", 0.999).non_negative().at_most(0.999999);
  s.number("adam_epsilon", &O::adam_epsilon, "Adam's ε", 1e-8).positive();
  s.number("rmsprop_alpha", &O::rmsprop_alpha, "RMSprop's decay of the squared gradients", 0.99)
      .non_negative()
      .at_most(0.999999);
  s.number("rmsprop_epsilon", &O::rmsprop_epsilon, "RMSprop's ε", 1e-8).positive();
  return s;
}

void fisher_yates(std::vector<Index>& perm, RandomStream& rng) {
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<Index>(i);
  for (std::size_t i = perm.size() - 1; i > 0; --i)
    std::swap(perm[i], perm[static_cast<std::size_t>(rng.uniform_int(i + 1))]);
}

TrainerOptions trainer_options(const DdeOptions& opt, Index cond_dim, BaseMeasure::Kind base) {
  TrainerOptions to;
  to.lambda = opt.lambda;
  to.eta = opt.eta;
  to.rounds = opt.rounds;
  to.dual_steps = opt.dual_steps;
  to.clip = opt.clip;
  to.clip_generator = opt.clip_generator;
  to.adam = AdamOptions{opt.learning_rate, opt.beta1, opt.beta2, opt.adam_epsilon};
  to.rmsprop = RmsPropOptions{opt.learning_rate, opt.rmsprop_alpha, opt.rmsprop_epsilon};
  to.cond_dim = cond_dim;
  to.base = base;
  return to;
}

// f over the training rows (or m seeded ones), γ by the median heuristic on the rows, α ~ N(0, sd²), the
// two networks Glorot-initialised: the same draws, in the same order, for both estimators.
Trainer make_trainer(const Matrix& rows, const Architecture& arch, BaseMeasure p0, const TrainerOptions& to,
                     const DdeOptions& opt, const FitInput& in, const std::string& where) {
  KernelExpansion f;
  f.gamma = bandwidth_gamma(rows, opt.f_bd);
  if (opt.random_features > 0) {
    // ω ~ N(0, 2γ I), the Gaussian kernel's spectral density, and b ~ U(0, 2π), from their own stream.
    RandomStream features = in.context.rng().derive("features");
    f.omega = std::sqrt(2.0 * f.gamma) * features.normal_matrix(opt.random_features, rows.cols());
    f.phase.resize(opt.random_features);
    for (Index j = 0; j < opt.random_features; ++j) f.phase(j) = 2.0 * std::numbers::pi * features.uniform();
  } else if (opt.inducing_points > 0) {
    RandomStream pick = in.context.rng().derive("inducing");
    f.points = random_rows(rows, opt.inducing_points, pick);
  } else {
    f.points = rows;
  }
  RandomStream init = in.context.rng().derive("init");
  const Index basis = f.random_features() ? opt.random_features : f.points.rows();
  f.alpha = opt.alpha_init_sd * init.normal_matrix(basis, 1).col(0);
  network::Network g = make_generator(arch), nu = make_dual(arch);
  g.initialize(init);
  nu.initialize(init);
  return Trainer(std::move(f), std::move(g), std::move(nu), std::move(p0), to, where);
}

// select = "mmd": the rows the sampler's draws are compared with (the validation rows when there are at
// least 2, else the training rows; at most select_samples of them, seeded), arranged as f sees them, and
// the best iterate so far. Each comparison draws its ξ from its own stream, derived from the iteration, so
// training consumes the same draws whether or not it selects: the selected model is bitwise the one a fit
// stopped at the selected iteration returns (tested).
struct Selection {
  Matrix reference;  // empty: select = "last"
  std::string against;
  long iteration = 0;
  double mmd2 = std::numeric_limits<double>::infinity();
  std::optional<Trainer> best;
};

Selection make_selection(const DdeOptions& opt, const Matrix& train_rows, const Matrix& validation_rows,
                         const FitInput& in) {
  Selection s;
  if (opt.select != "mmd") return s;
  const bool validation = validation_rows.rows() >= 2;
  const Matrix& rows = validation ? validation_rows : train_rows;
  if (rows.rows() > opt.select_samples) {
    RandomStream pick = in.context.rng().derive("select rows");
    s.reference = random_rows(rows, opt.select_samples, pick);
  } else {
    s.reference = rows;
  }
  s.against = std::to_string(s.reference.rows()) + (validation ? " validation rows" : " training rows");
  return s;
}

// Compares the trainer's sampler with the selection's rows at iteration `it`; keeps the trainer when its
// MMD² is the smallest so far (the earlier iterate on ties). Returns the MMD².
double select_step(Selection& s, const Trainer& trainer, const DdeOptions& opt, Index cond_dim, long it,
                   const FitInput& in) {
  RandomStream rng = in.context.rng().derive("select").derive(static_cast<std::uint64_t>(it));
  const Matrix xi = rng.normal_matrix(opt.select_samples, opt.noise_dim);
  Matrix cond;
  if (cond_dim > 0) {
    // The sampler draws y for the compared rows' inputs x, repeated in order to fill select_samples.
    cond.resize(opt.select_samples, cond_dim);
    for (Index i = 0; i < opt.select_samples; ++i)
      cond.row(i) = s.reference.row(i % s.reference.rows()).leftCols(cond_dim);
  }
  const double m = mmd2_unbiased(trainer.sampler_rows(xi, cond), s.reference, trainer.f().gamma);
  if (!std::isfinite(m))
    throw NumericalError("dde: iteration " + std::to_string(it) + ": the sampler's MMD² against the " +
                         s.against + " is not finite (" + std::to_string(m) + ")");
  if (m < s.mmd2) {
    s.mmd2 = m;
    s.iteration = it;
    s.best = trainer;
  }
  return m;
}

// The alternating algorithm over minibatches of `rows` (both estimators; conditional rows are (x, y)):
// minibatches as the reference, a fresh permutation per pass and ⌊N / B⌋ full batches of it; the mean
// losses per block of report_every iterations as curves and progress. With a selection, the iterates
// every select_every iterations (and the last) are compared and the trainer ends as the best of them.
// Returns the last iteration's losses.
IterationLosses train(Trainer& trainer, const Matrix& rows, const DdeOptions& opt, const TrainerOptions& to,
                      Index base_dim, const FitInput& in, const std::string& label, Selection& selection) {
  const Index N = rows.rows(), B = std::min<Index>(opt.batch_size, N), batches = N / B;
  RandomStream shuffle = in.context.rng().derive("minibatches");
  RandomStream noise = in.context.rng().derive("noise");
  const bool selecting = selection.reference.rows() > 0;
  double last_mmd2 = std::numeric_limits<double>::quiet_NaN();
  std::vector<Index> perm(static_cast<std::size_t>(N));
  Index next = batches;
  auto& curves = in.report.curves;
  double sf = 0.0, sd = 0.0, sg = 0.0;
  long block = 0;
  const auto t0 = std::chrono::steady_clock::now();
  IterationLosses last;
  for (long it = 1; it <= opt.iterations; ++it) {
    if (next == batches) {
      fisher_yates(perm, shuffle);
      next = 0;
    }
    const Matrix batch =
        gather_rows(rows, perm, static_cast<std::size_t>(next * B), static_cast<std::size_t>(B));
    ++next;
    const IterationDraws draws = IterationDraws::draw(noise, B, opt.noise_dim, base_dim, to);
    last = trainer.iteration(batch, draws, it);
    sf += last.f;
    sd += last.dual;
    sg += last.generator;
    ++block;
    if (selecting && (it % opt.select_every == 0 || it == opt.iterations)) {
      last_mmd2 = select_step(selection, trainer, opt, to.cond_dim, it, in);
      curves["selection_mmd2"].emplace_back(it, last_mmd2);
    }
    if (it % opt.report_every == 0 || it == opt.iterations) {
      const double b = static_cast<double>(block);
      curves["f_loss"].emplace_back(it, sf / b);
      curves["dual_loss"].emplace_back(it, sd / b);
      curves["sampler_loss"].emplace_back(it, sg / b);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::ostringstream msg;
      msg << "iteration " << it << " of " << opt.iterations << ": mean losses f " << sf / b << ", dual "
          << sd / b << ", sampler " << sg / b << " (" << secs / static_cast<double>(it) << " s/iteration)";
      if (selecting)
        msg << "; sampler MMD² " << last_mmd2 << " (best " << selection.mmd2 << " at iteration "
            << selection.iteration << ")";
      in.context.progress().update(label, static_cast<double>(it) / static_cast<double>(opt.iterations),
                                   msg.str());
      sf = sd = sg = 0.0;
      block = 0;
    }
  }
  if (selecting && selection.best) trainer = std::move(*selection.best);
  return last;
}

// The fit's settings kept in model.toml (provenance), with the selected iteration when one was chosen.
std::vector<std::pair<std::string, double>> fit_info(const DdeOptions& opt, const Selection& s) {
  std::vector<std::pair<std::string, double>> info{{"f_bd", opt.f_bd}, {"learning_rate", opt.learning_rate}};
  if (s.reference.rows() > 0) info.emplace_back("selected_iteration", static_cast<double>(s.iteration));
  return info;
}

// What select = "mmd" chose, in results.json and the log.
void report_selection(const Selection& s, const DdeOptions& opt, const FitInput& in) {
  if (s.reference.rows() == 0) return;
  in.report.values["selected_iteration"] = static_cast<double>(s.iteration);
  in.report.values["selected_mmd2"] = s.mmd2;
  std::ostringstream note;
  note << "select = \"mmd\": the model is iteration " << s.iteration << " of " << opt.iterations << ", whose "
       << opt.select_samples << " sampler draws had the smallest MMD² (" << s.mmd2 << ", f's kernel) against "
       << s.against << " among the iterates every " << opt.select_every
       << " iterations (curve selection_mmd2)";
  in.report.notes.push_back(note.str());
}

// The networks' shapes: the estimator's keys (or their defaults), replaced by what [model.sampler] and
// [model.dual] set. A value given both as an estimator key and in a part's table is a ConfigError naming
// both places (the flat `width` sets both networks, so it collides with either table's width).
DdeOptions with_parts(DdeOptions opt, const Config& cfg, const Parts& parts) {
  const KeySites flat(cfg);
  const auto collide = [&](const KeySites& part, const char* part_key, const char* flat_key) {
    if (cfg.has(flat_key))
      throw ConfigError(
          part.where(part_key) + " and " + flat.where(flat_key) +
          ": both set the network's shape; keep one (the estimator's keys describe both networks, "
          "the part tables one each)");
  };
  const Index flat_width = opt.width;
  Index dual_width = flat_width;
  if (const auto g = parts.get<SamplerNetwork>("sampler")) {
    if (g->noise_dim) {
      collide(g->sites, "noise_dim", "noise_dim");
      opt.noise_dim = *g->noise_dim;
    }
    if (g->width) {
      collide(g->sites, "width", "width");
      opt.width = *g->width;
    }
    if (g->depth) {
      collide(g->sites, "depth", "generator_depth");
      opt.generator_depth = *g->depth;
    }
  }
  if (const auto nu = parts.get<DualNetwork>("dual")) {
    if (nu->width) {
      collide(nu->sites, "width", "width");
      dual_width = *nu->width;
    }
    if (nu->depth) {
      collide(nu->sites, "depth", "dual_depth");
      opt.dual_depth = *nu->depth;
    }
  }
  opt.dual_width = dual_width == opt.width ? 0 : dual_width;
  return opt;
}

// f's basis is kernel centres (all rows or `inducing_points` of them) or random features, not both.
void check_basis(const DdeOptions& opt, const KeySites& sites) {
  if (opt.random_features > 0 && opt.inducing_points > 0)
    sites.fail("random_features",
               "and inducing_points are both set: f is over random features or over kernel "
               "centres (inducing_points of them), not both; set one");
}

// The fit's memory before any of it is allocated: the sampler's and the dual's weights with their
// gradients and optimiser states, a minibatch's activations through both networks, f's basis against
// a minibatch (kernel centres: the training rows or inducing_points of them; or random features), and
// the draws the iterate selection and the diagnostic compare.
void check_memory(const DdeOptions& opt, const KeySites& sites, const DataShape& data) {
  if (data.dim < 1) return;
  const double D = static_cast<double>(data.dim), W = static_cast<double>(opt.width);
  const double Wn = static_cast<double>(opt.dual_width > 0 ? opt.dual_width : opt.width);
  const double gd = static_cast<double>(opt.generator_depth), nd = static_cast<double>(opt.dual_depth);
  const double B = static_cast<double>(opt.batch_size), xi = static_cast<double>(opt.noise_dim);
  const double g = (xi + 1.0) * W + std::max(gd - 2.0, 0.0) * (W + 1.0) * W + (W + 1.0) * D;
  const double nu = (D + 1.0) * Wn + std::max(nd - 2.0, 0.0) * (Wn + 1.0) * Wn + Wn + 1.0;
  const double basis = opt.random_features > 0 ? static_cast<double>(opt.random_features)
                       : opt.inducing_points > 0 ? static_cast<double>(opt.inducing_points)
                                                 : static_cast<double>(data.train_rows);
  const double S = static_cast<double>(opt.select_samples);
  const double doubles = 4.0 * (g + nu) + 3.0 * B * (gd * W + nd * Wn) + basis * (D + 3.0 * B) +
                         S * (xi + D + std::min(S, basis)) + static_cast<double>(opt.diagnostic_samples) * (xi + D);
  require_memory(8.0 * doubles, sites.where("width"),
                 "the networks, f's basis and the compared draws (width, generator_depth, dual_depth, noise_dim, "
                 "batch_size, inducing_points or random_features, select_samples, diagnostic_samples)");
}

}  // namespace

const OptionsSpec<DdeOptions>& dde_options() {
  static const OptionsSpec<DdeOptions> spec = make_spec(false);
  return spec;
}

const OptionsSpec<DdeOptions>& dde_conditional_options() {
  static const OptionsSpec<DdeOptions> spec = make_spec(true);
  return spec;
}

double bandwidth_gamma(const Matrix& X, double f_bd) {
  const double m = median_pairwise_distance(X);
  if (!(m > 0.0) || !std::isfinite(m))
    throw DataError("dde: the median pairwise distance of the training rows is " + std::to_string(m) +
                    " (repeated rows?), so the kernel bandwidth is undefined");
  return 0.5 / (f_bd * m * m);
}

DdeEstimator::DdeEstimator(const Config& cfg, const Parts& parts)
    : opt_(with_parts(dde_options().read(cfg), cfg, parts)), sites_(cfg) {
  check_basis(opt_, sites_);
}

void DdeEstimator::check(const DataShape& data) const {
  check_memory(opt_, sites_, data);
  if (data.target_dim > 0)
    throw ConfigError(sites_.where() + ": dde models p(x) and takes no [data] targets (" +
                      std::to_string(data.target_dim) + " target columns given)");
  if (opt_.inducing_points > data.train_rows && data.train_rows > 0)
    sites_.fail("inducing_points", "exceeds the training rows (expected at most " +
                                       std::to_string(data.train_rows) + ", got " +
                                       std::to_string(opt_.inducing_points) + ")");
}

std::optional<FacetSet> DdeEstimator::facets() const {
  return FacetSet{Facet::LogDensity, Facet::Score, Facet::Laplacian, Facet::ApproximateSampler};
}

ModelPtr DdeEstimator::fit(const FitInput& in) {
  const Matrix& X = in.train;
  const Index N = X.rows(), D = X.cols();
  if (!in.roles.targets.empty())
    throw ConfigError(sites_.where() + ": dde models p(x) and takes no [data] targets");
  if (N < 2) throw DataError("dde: needs at least 2 training rows (got " + std::to_string(N) + ")");
  if (!X.allFinite()) throw DataError("dde: the training data are not finite");
  if (opt_.inducing_points > N)
    sites_.fail("inducing_points", "exceeds the training rows (expected at most " + std::to_string(N) +
                                       ", got " + std::to_string(opt_.inducing_points) + ")");
  Vector lo = X.colwise().minCoeff().transpose(), hi = X.colwise().maxCoeff().transpose();
  for (Index d = 0; d < D; ++d)
    if (!(hi[d] > lo[d]))
      throw DataError("dde: column " + std::to_string(d) +
                      " of the training data is constant, so p0 (uniform on the data box) has no density");
  const Vector side = hi - lo;
  lo -= opt_.box_margin * side;
  hi += opt_.box_margin * side;

  const Architecture arch{D, opt_.noise_dim, opt_.width, opt_.generator_depth, opt_.dual_depth,
                          0, opt_.dual_width};
  const TrainerOptions to = trainer_options(opt_, 0, BaseMeasure::Kind::box);
  Trainer trainer = make_trainer(X, arch, BaseMeasure::box(lo, hi), to, opt_, in, sites_.where());

  Selection selection = make_selection(opt_, X, in.validation, in);
  const IterationLosses last = train(trainer, X, opt_, to, D, in, "dde training", selection);
  report_selection(selection, opt_, in);
  in.report.iterations = opt_.iterations;
  in.report.values["gamma"] = trainer.f().gamma;
  in.report.values[trainer.f().random_features() ? "random_features" : "kernel_centres"] =
      static_cast<double>(trainer.f().alpha.size());
  in.report.values["final_f_loss"] = last.f;
  in.report.values["final_dual_loss"] = last.dual;
  in.report.values["final_sampler_loss"] = last.generator;
  in.context.progress().done("dde training", std::to_string(opt_.iterations) + " iterations");
  auto model =
      std::make_shared<DdeModel>(trainer.f(), opt_.lambda, arch, trainer.generator(), trainer.dual(), lo, hi);
  model->set_fit_info(fit_info(opt_, selection));
  model->set_correction(
      SamplerCorrection{opt_.sampler_correction == "importance", opt_.correction_candidates});
  if (opt_.diagnostic_samples > 0) {
    RandomStream diag = in.context.rng().derive("diagnostic");
    const SamplerDiagnostic d = model->diagnose(opt_.diagnostic_samples, diag);
    in.report.values["sampler_outside_box"] = d.outside_box;
    in.report.values["sampler_ess_fraction"] = d.ess_fraction;
    in.report.values["sampler_kl_estimate"] = d.kl;
    std::ostringstream note;
    note << "sampler diagnostic on " << opt_.diagnostic_samples << " draws (weights exp(λf − ν), exact only "
         << "for the optimal dual): " << 100.0 * d.outside_box << "% outside the data box; inside it, "
         << "effective sample size " << 100.0 * d.ess_fraction << "% and KL(q ‖ p) ≈ " << d.kl;
    in.report.notes.push_back(note.str());
  }
  return model;
}

}  // namespace kef::dde

namespace kef::dde {

DdeConditionalEstimator::DdeConditionalEstimator(const Config& cfg, const Parts& parts)
    : opt_(with_parts(dde_conditional_options().read(cfg), cfg, parts)), sites_(cfg) {
  check_basis(opt_, sites_);
}

void DdeConditionalEstimator::check(const DataShape& data) const {
  check_memory(opt_, sites_, data);
  if (data.target_dim == 0)
    sites_.fail(
        "",
        "dde_conditional fits a conditional density p(y | x) and the data have no target columns; set "
        "[data] targets");
  if (opt_.inducing_points > data.train_rows && data.train_rows > 0)
    sites_.fail("inducing_points", "exceeds the training rows (expected at most " +
                                       std::to_string(data.train_rows) + ", got " +
                                       std::to_string(opt_.inducing_points) + ")");
}

std::optional<FacetSet> DdeConditionalEstimator::facets() const {
  return FacetSet{Facet::ConditionalDensity, Facet::ConditionalScore, Facet::ConditionalSampler,
                  Facet::ApproximateSampler};
}

ModelPtr DdeConditionalEstimator::fit(const FitInput& in) {
  if (!in.roles.conditional())
    sites_.fail(
        "",
        "dde_conditional fits a conditional density p(y | x) and the data have no target columns; set "
        "[data] targets");
  const Matrix X = in.roles.inputs_of(in.train), Y = in.roles.targets_of(in.train);
  const Index N = X.rows(), Dx = X.cols(), Dy = Y.cols();
  if (N < 2)
    throw DataError("dde_conditional: needs at least 2 training rows (got " + std::to_string(N) + ")");
  if (!X.allFinite() || !Y.allFinite()) throw DataError("dde_conditional: the training data are not finite");
  if (opt_.inducing_points > N)
    sites_.fail("inducing_points", "exceeds the training rows (expected at most " + std::to_string(N) +
                                       ", got " + std::to_string(opt_.inducing_points) + ")");
  // p0 of y from the training targets: N(mean, (base_sd · sd)²) or uniform on their box.
  BaseMeasure p0;
  const bool gaussian = opt_.base_measure == "gaussian";
  if (gaussian) {
    const Vector mean = Y.colwise().mean().transpose();
    const Vector sd =
        ((Y.rowwise() - mean.transpose()).array().square().colwise().sum() / static_cast<double>(N - 1))
            .sqrt()
            .transpose();
    p0 = BaseMeasure::gaussian(mean, opt_.base_sd * sd);
  } else {
    p0 = BaseMeasure::box(Y.colwise().minCoeff().transpose(), Y.colwise().maxCoeff().transpose());
  }
  for (Index d = 0; d < Dy; ++d)
    if (!(gaussian ? p0.b[d] > 0.0 : p0.b[d] > p0.a[d]))
      throw DataError("dde_conditional: target column " + std::to_string(d) +
                      " of the training data is constant, so p0 of y has no density");
  // The rows f and ν see are (x, y), in that order whatever the data's column order.
  Matrix rows(N, Dx + Dy);
  rows << X, Y;
  Architecture arch{Dy, opt_.noise_dim, opt_.width, opt_.generator_depth, opt_.dual_depth,
                    Dx, opt_.dual_width};
  const TrainerOptions to =
      trainer_options(opt_, Dx, gaussian ? BaseMeasure::Kind::gaussian : BaseMeasure::Kind::box);
  Trainer trainer = make_trainer(rows, arch, std::move(p0), to, opt_, in, sites_.where());
  Matrix validation_rows(in.validation.rows(), Dx + Dy);
  if (in.validation.rows() > 0)
    validation_rows << in.roles.inputs_of(in.validation), in.roles.targets_of(in.validation);
  Selection selection = make_selection(opt_, rows, validation_rows, in);
  const IterationLosses last = train(trainer, rows, opt_, to, Dy, in, "dde_conditional training", selection);
  report_selection(selection, opt_, in);
  in.report.iterations = opt_.iterations;
  in.report.values["gamma"] = trainer.f().gamma;
  in.report.values[trainer.f().random_features() ? "random_features" : "kernel_centres"] =
      static_cast<double>(trainer.f().alpha.size());
  in.report.values["final_f_loss"] = last.f;
  in.report.values["final_dual_loss"] = last.dual;
  in.report.values["final_sampler_loss"] = last.generator;
  in.context.progress().done("dde_conditional training", std::to_string(opt_.iterations) + " iterations");
  auto model = std::make_shared<DdeConditionalModel>(trainer.f(), opt_.lambda, arch, trainer.generator(),
                                                     trainer.dual(), trainer.base());
  model->set_fit_info(fit_info(opt_, selection));
  model->set_correction(
      SamplerCorrection{opt_.sampler_correction == "importance", opt_.correction_candidates});
  if (opt_.diagnostic_samples > 0) {
    // Draws given min(100, n) training inputs, picked with their own stream.
    RandomStream diag = in.context.rng().derive("diagnostic");
    const Matrix inputs = random_rows(X, std::min<Index>(100, N), diag);
    const Index per_input = std::max<Index>(2, opt_.diagnostic_samples / inputs.rows());
    const DdeConditionalModel::Diagnostic d = model->diagnose(inputs, per_input, diag);
    in.report.values["sampler_outside_box"] = d.mean.outside_box;
    in.report.values["sampler_ess_fraction"] = d.mean.ess_fraction;
    in.report.values["sampler_ess_fraction_min"] = d.ess_fraction_min;
    in.report.values["sampler_kl_estimate"] = d.mean.kl;
    std::ostringstream note;
    note << "sampler diagnostic on " << per_input << " draws given each of " << inputs.rows()
         << " training inputs x (weights exp(λf − ν), exact only for the optimal dual): "
         << 100.0 * d.mean.outside_box << "% where p0(y) = 0; per x, effective sample size "
         << 100.0 * d.mean.ess_fraction << "% on average (" << 100.0 * d.ess_fraction_min
         << "% at the worst x) and KL(q(y | x) ‖ p(y | x)) ≈ " << d.mean.kl << " on average";
    in.report.notes.push_back(note.str());
  }
  return model;
}

}  // namespace kef::dde
