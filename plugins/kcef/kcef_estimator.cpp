#include "kcef_estimator.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "kef/cross_validation.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"
#include "kef/score_matching.hpp"

namespace kef::kcef {

namespace {

std::string gigabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g GB", bytes / 1e9);
  return buf;
}

double column_sd(const Matrix& A, Index d) {
  const double mean = A.col(d).mean();
  return std::sqrt((A.col(d).array() - mean).square().sum() / static_cast<double>(A.rows()));
}

// The median heuristic on standardised columns, as the reference code: m = the median pairwise distance
// of the rows of X with every column divided by its sd; σ_x,d = m·sd_d, so that k_x measures distances
// in standardised units with bandwidth m (docs/math.md §17.4).
Vector median_input_bandwidths(const Matrix& X, const KeySites& sites) {
  Vector sd(X.cols());
  Matrix Z = X;
  for (Index d = 0; d < X.cols(); ++d) {
    sd[d] = column_sd(X, d);
    if (!(sd[d] > 0))
      sites.fail("sigma_x", "input column " + std::to_string(d) +
                                " is constant on the training split, so the median heuristic has no scale; "
                                "give `sigma_x`");
    Z.col(d) /= sd[d];
  }
  const double m = median_pairwise_distance(Z);
  if (!(m > 0) || !std::isfinite(m))
    sites.fail("sigma_x",
               "the median-heuristic distance of the inputs is " + number_text(m) + "; give `sigma_x`");
  return m * sd;
}

// The reference code starts σ_y at its default k_y = exp(−‖y − y'‖²) on standardised targets, i.e.
// σ_y = 1/√2 in kef's convention; in data units that is sd_y/√2 with sd_y the root mean column variance.
// (A median heuristic on y fails on tied targets: crabs' binary y has median pairwise distance 0.)
double reference_target_bandwidth(const Matrix& Y, const KeySites& sites) {
  double var = 0.0;
  for (Index d = 0; d < Y.cols(); ++d) var += std::pow(column_sd(Y, d), 2);
  const double sd = std::sqrt(var / static_cast<double>(Y.cols()));
  if (!(sd > 0) || !std::isfinite(sd))
    sites.fail("sigma_y",
               "the targets are constant on the training split (sd " + number_text(sd) + "); give `sigma_y`");
  return sd / std::sqrt(2.0);
}

}  // namespace

const OptionsSpec<KcefKeys>& kcef_options() {
  using O = KcefKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.number(
         "lambda", &O::lambda,
         "λ, the RKHS-norm penalty: the fit minimises J(f) + (λ/2)‖f‖²; absent: chosen by cross-validation "
         "over `lambda_grid`")
        .optional()
        .positive();
    s.numbers("sigma_x", &O::sigma_x,
              "bandwidths of the Gaussian kernel on x: one value for every input column or one per column; "
              "absent: the median heuristic on standardised inputs times a cross-validated scale from "
              "`scale_grid`")
        .optional()
        .positive();
    s.number("sigma_y", &O::sigma_y,
             "bandwidth of the Gaussian kernel on y; absent: sd_y/√2 (the reference code's start, exp(−‖y − "
             "y'‖²) "
             "on standardised y) times a cross-validated scale from `scale_grid`")
        .optional()
        .positive();
    s.numbers("lambda_grid", &O::lambda_grid,
              "candidate λ when `lambda` is absent (default 10^(−5 ... −1), 5 values)",
              log_grid(-5.0, -1.0, 5))
        .positive();
    s.numbers("scale_grid", &O::scale_grid,
              "multipliers of the default bandwidths searched when `sigma_x` or `sigma_y` is absent "
              "(default 1/4, 1/2, 1, 2, 4)",
              std::vector<double>{0.25, 0.5, 1.0, 2.0, 4.0})
        .positive();
    s.integer("folds", &O::folds, "K of the K-fold cross-validation (the reference code: 10)", 10)
        .at_least(2);
    s.number("q0_sd", &O::q0_sd, "σ0 of the base measure q0(y) = N(0, σ0² I) (the reference code: 2)", 2.0)
        .positive();
    s.integer("max_system", &O::max_system,
              "largest n·d_y accepted; the system needs about 3·(n·d_y)²·8 bytes", 20000)
        .at_least(1);
    return s;
  }();
  return spec;
}

// docs/math.md §17.4. With u = y_a − y_b and s = 1/σ_y²:
//   ⟨∂_(y_i) k(z_a, ·), ∂_(y_j) k(z_b, ·)⟩ = k_x k_y (s δ_ij − s² u_i u_j),
//   Σ_i ⟨∂_(y_j) k(z_b, ·), ∂²_(y_i) k(z_a, ·)⟩ = k_x k_y s² (−u_j)(d_y + 2 − s‖u‖²).
KcefSystem kcef_system(const Matrix& X, const Matrix& Y, const Vector& sigma_x, double sigma_y,
                       double q0_sd) {
  const Index n = X.rows(), dy = Y.cols(), N = n * dy;
  const double s = 1.0 / (sigma_y * sigma_y), v0 = 1.0 / (q0_sd * q0_sd), dyd = static_cast<double>(dy);
  const Matrix Kx = input_gram(X, X, sigma_x);
  KcefSystem sys;
  sys.G.resize(N, N);
  sys.h = Vector::Zero(N);
  Vector u(dy);
  for (Index b = 0; b < n; ++b)
    for (Index a = 0; a < n; ++a) {
      for (Index i = 0; i < dy; ++i) u[i] = Y(a, i) - Y(b, i);
      const double uu = u.squaredNorm(), w = Kx(a, b) * std::exp(-0.5 * s * uu);
      for (Index i = 0; i < dy; ++i)
        for (Index j = 0; j < dy; ++j)
          sys.G(i * n + a, j * n + b) = w * ((i == j ? s : 0.0) - s * s * u[i] * u[j]);
      // h_(j, b): pair a's ξ term, with y_b − y_a = −u and ∂_i log q0(y_a) = −y_ai/σ0².
      for (Index j = 0; j < dy; ++j) {
        double t = -s * s * u[j] * (dyd + 2.0 - s * uu);
        for (Index i = 0; i < dy; ++i) t += (-v0 * Y(a, i)) * ((i == j ? s : 0.0) - s * s * u[i] * u[j]);
        sys.h[j * n + b] += w * t;
      }
    }
  sys.h /= static_cast<double>(n);
  return sys;
}

KcefModel kcef_solve(const KcefSystem& sys, const Matrix& X, const Matrix& Y, const Vector& sigma_x,
                     double sigma_y, double q0_sd, double lambda, double* jitter) {
  const Index n = X.rows(), dy = Y.cols();
  const double nl = static_cast<double>(n) * lambda;
  Matrix A = sys.G;
  A.diagonal().array() += nl;
  const SpdFactor factor(A, "kcef: the system (G + nλ I)");
  if (jitter) *jitter = factor.jitter();
  const Vector beta = factor.solve(Vector(sys.h / lambda));
  KcefParameters p;
  p.basis_inputs = X;
  p.basis_targets = Y;
  p.coefficients.resize(n, dy);
  const double v0 = 1.0 / (q0_sd * q0_sd);
  for (Index i = 0; i < dy; ++i)
    for (Index a = 0; a < n; ++a) p.coefficients(a, i) = beta[i * n + a] + v0 * Y(a, i) / nl;
  p.xi_weight = -1.0 / nl;
  p.sigma_x = sigma_x;
  p.sigma_y = sigma_y;
  p.q0_sd = q0_sd;
  check_finite(p.coefficients, "kcef solution");
  return KcefModel(std::move(p));
}

KcefEstimator::KcefEstimator(const Config& cfg) : opt_(kcef_options().read(cfg)), sites_(cfg) {}

std::optional<FacetSet> KcefEstimator::facets() const {
  return FacetSet{Facet::ConditionalDensity, Facet::ConditionalScore};
}

void KcefEstimator::check_size(Index rows, Index target_dim) const {
  const double size = static_cast<double>(rows) * static_cast<double>(target_dim);
  if (size > static_cast<double>(opt_.max_system))
    sites_.fail("max_system", "the kcef system has n·d_y = " + std::to_string(rows) + "·" +
                                  std::to_string(target_dim) + " = " + std::to_string(rows * target_dim) +
                                  " unknowns, above max_system = " + std::to_string(opt_.max_system) +
                                  "; it would need about " + gigabytes(3.0 * size * size * 8.0) +
                                  " (3·(n·d_y)² doubles); raise max_system or subsample the training split");
}

void KcefEstimator::check_sigma_x(Index input_dim) const {
  if (opt_.sigma_x && opt_.sigma_x->size() != 1 && static_cast<Index>(opt_.sigma_x->size()) != input_dim)
    sites_.fail("sigma_x", std::to_string(opt_.sigma_x->size()) + " bandwidths for " +
                               std::to_string(input_dim) +
                               " input columns (expected one value, or one per input column)");
}

void KcefEstimator::check(const DataShape& data) const {
  if (data.train_rows == 0) sites_.fail("", "kcef: the training split is empty");
  if (data.target_dim > 0) {
    check_size(data.train_rows, data.target_dim);
    if (data.dim > 0) check_sigma_x(data.dim - data.target_dim);
  }
  const bool searching = !opt_.sigma_x || !opt_.sigma_y || !opt_.lambda;
  if (searching && opt_.folds > data.train_rows)
    sites_.fail("folds", std::to_string(opt_.folds) + "-fold cross-validation of " +
                             std::to_string(data.train_rows) +
                             " training pairs (expected folds <= training rows)");
}

ModelPtr KcefEstimator::fit(const FitInput& in) {
  if (!in.roles.conditional())
    sites_.fail(
        "",
        "kcef fits a conditional density p(y | x) and the data have no target columns; set [data] targets");
  const Index dy = static_cast<Index>(in.roles.targets.size());
  check(DataShape{in.train.cols(), in.train.rows(), in.validation.rows(), 0, false, dy});
  const Matrix X = in.roles.inputs_of(in.train), Y = in.roles.targets_of(in.train);
  const Index n = X.rows(), dx = X.cols();

  // Candidate bandwidths: given ones alone, or the median heuristic times each scale.
  std::vector<Vector> sx_candidates;
  if (opt_.sigma_x) {
    sx_candidates.push_back(opt_.sigma_x->size() == 1
                                ? Vector(Vector::Constant(dx, opt_.sigma_x->front()))
                                : Vector(Eigen::Map<const Vector>(opt_.sigma_x->data(), dx)));
  } else {
    const Vector base = median_input_bandwidths(X, sites_);
    for (double c : opt_.scale_grid) sx_candidates.push_back(c * base);
  }
  std::vector<double> sy_candidates;
  if (opt_.sigma_y) {
    sy_candidates.push_back(*opt_.sigma_y);
  } else {
    const double base = reference_target_bandwidth(Y, sites_);
    for (double c : opt_.scale_grid) sy_candidates.push_back(c * base);
  }
  const std::vector<double> lambdas = opt_.lambda ? std::vector<double>{*opt_.lambda} : opt_.lambda_grid;

  std::size_t best_x = 0, best_y = 0, best_l = 0;
  if (sx_candidates.size() > 1 || sy_candidates.size() > 1 || lambdas.size() > 1) {
    RandomStream fold_rng = in.context.rng().derive("folds");
    const Index K = static_cast<Index>(opt_.folds);
    const std::vector<Index> folds = random_folds(n, K, fold_rng);
    in.context.progress().update(
        "kcef", 0.0,
        std::to_string(K) + "-fold cross-validation of " + std::to_string(sx_candidates.size()) + " σ_x x " +
            std::to_string(sy_candidates.size()) + " σ_y x " + std::to_string(lambdas.size()) + " λ");
    // total[(x·|σ_y| + y)·|λ| + l]: the sum over folds, in fold order.
    std::vector<double> total(sx_candidates.size() * sy_candidates.size() * lambdas.size(), 0.0);
    // The held-out loss of a candidate, on this process alone: every process runs the whole search.
    const Context fold_context(0, 1);
    for (Index k = 0; k < K; ++k) {
      const std::vector<Index> tr = rows_outside_fold(folds, k), te = rows_in_fold(folds, k);
      const Matrix Xtr = gather_rows(X, tr), Ytr = gather_rows(Y, tr), Xte = gather_rows(X, te),
                   Yte = gather_rows(Y, te);
      for (std::size_t x = 0; x < sx_candidates.size(); ++x)
        for (std::size_t y = 0; y < sy_candidates.size(); ++y) {
          const KcefSystem sys = kcef_system(Xtr, Ytr, sx_candidates[x], sy_candidates[y], opt_.q0_sd);
          for (std::size_t l = 0; l < lambdas.size(); ++l) {
            double loss = std::numeric_limits<double>::infinity();
            try {
              const KcefModel m =
                  kcef_solve(sys, Xtr, Ytr, sx_candidates[x], sy_candidates[y], opt_.q0_sd, lambdas[l]);
              loss = conditional_score_matching_loss(m, Xte, Yte, fold_context);
            } catch (const NumericalError&) {
              // A candidate whose system does not factorise is never chosen.
            }
            if (std::isnan(loss)) loss = std::numeric_limits<double>::infinity();
            total[(x * sy_candidates.size() + y) * lambdas.size() + l] += loss;
          }
        }
      in.context.progress().update("kcef", static_cast<double>(k + 1) / static_cast<double>(K),
                                   "fold " + std::to_string(k + 1));
    }
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t x = 0; x < sx_candidates.size(); ++x)
      for (std::size_t y = 0; y < sy_candidates.size(); ++y)
        for (std::size_t l = 0; l < lambdas.size(); ++l) {
          const double v =
              total[(x * sy_candidates.size() + y) * lambdas.size() + l] / static_cast<double>(K);
          if (v < best) {  // ties: the first in grid order
            best = v;
            best_x = x;
            best_y = y;
            best_l = l;
          }
        }
    if (!std::isfinite(best))
      throw NumericalError(
          "kcef: no candidate of the cross-validation grid gives a finite held-out loss; "
          "widen `scale_grid` or `lambda_grid`");
    in.report.values["cv_loss"] = best;
    const auto edge = [&](std::size_t index, std::size_t size, const char* key, double value) {
      if (size > 1 && (index == 0 || index + 1 == size))
        in.report.notes.push_back(std::string("the chosen ") + key + " value " + number_text(value) +
                                  " is at the " + (index == 0 ? "lower" : "upper") +
                                  " end of its grid; extend it");
    };
    if (!opt_.sigma_x) edge(best_x, sx_candidates.size(), "sigma_x scale", opt_.scale_grid[best_x]);
    if (!opt_.sigma_y) edge(best_y, sy_candidates.size(), "sigma_y scale", opt_.scale_grid[best_y]);
    if (!opt_.lambda) edge(best_l, lambdas.size(), "lambda", lambdas[best_l]);
  }
  const Vector& sigma_x = sx_candidates[best_x];
  const double sigma_y = sy_candidates[best_y], lambda = lambdas[best_l];
  double jitter = 0.0;
  auto model = std::make_shared<KcefModel>(kcef_solve(kcef_system(X, Y, sigma_x, sigma_y, opt_.q0_sd), X, Y,
                                                      sigma_x, sigma_y, opt_.q0_sd, lambda, &jitter));
  in.report.iterations = 1;
  in.report.values["lambda"] = lambda;
  in.report.values["sigma_y"] = sigma_y;
  for (Index d = 0; d < dx; ++d) in.report.values["sigma_x_" + std::to_string(d)] = sigma_x[d];
  in.report.values["system_size"] = static_cast<double>(n * dy);
  in.report.values["jitter"] = jitter;
  if (jitter > 0)
    in.report.notes.push_back("the kcef system needed jitter " + number_text(jitter) + " to factorise");
  in.context.progress().done("kcef", "σ_y = " + number_text(sigma_y) + ", λ = " + number_text(lambda));
  return model;
}

}  // namespace kef::kcef
