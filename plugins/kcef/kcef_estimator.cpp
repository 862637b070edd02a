#include "kcef_estimator.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "kef/column_summary.hpp"
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

// The population sd of column d. The squared deviations of a column narrower than about 1e-150
// underflow to a zero sd; the column summary's sd, taken relative to the column's range, tells such a
// column from a constant one (kef/column_summary.hpp, as the flows and [data] standardize do).
double column_sd(const Matrix& A, Index d) {
  const double mean = A.col(d).mean();
  const double sd = std::sqrt((A.col(d).array() - mean).square().sum() / static_cast<double>(A.rows()));
  if (sd > 0.0 || A.rows() < 2) return sd;
  return summarize_columns(Matrix(A.col(d))).sd(0)[0];
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
  Vector column(Y.cols());
  for (Index d = 0; d < Y.cols(); ++d) {
    column[d] = column_sd(Y, d);
    var += std::pow(column[d], 2);
  }
  double sd = std::sqrt(var / static_cast<double>(Y.cols()));
  // Targets narrower than about 1e-154 have squared sds below the smallest normal double: the root
  // mean square is then taken relative to the largest sd, so that such targets are not called constant.
  const double widest = column.maxCoeff();
  if (var < std::numeric_limits<double>::min() && widest > 0 && std::isfinite(widest))
    sd = widest * std::sqrt((column / widest).squaredNorm() / static_cast<double>(Y.cols()));
  if (!(sd > 0) || !std::isfinite(sd))
    sites.fail("sigma_y",
               "the targets are constant on the training split (sd " + number_text(sd) + "); give `sigma_y`");
  return sd / std::sqrt(2.0);
}

// The system and the model's Laplacian carry s² = 1/σ_y⁴ (docs/math.md §17.4): for targets on a scale
// below about 1e-77 it overflows, and the fit could only produce non-finite numbers. Refused up front,
// for the smallest bandwidth the search would try, naming the scale and the remedy.
void check_target_bandwidth_range(double sigma_y_base, const KcefKeys& opt, const KeySites& sites) {
  double smallest = sigma_y_base;
  if (!opt.sigma_y)
    for (double g : opt.scale_grid) smallest = std::min(smallest, sigma_y_base * g);
  const double s = 1.0 / (smallest * smallest);
  if (!std::isfinite(s * s))
    sites.fail("sigma_y", "a target bandwidth of " + number_text(smallest) +
                              " puts 1/σ_y⁴ beyond double precision, so the model's derivatives would "
                              "overflow; rescale the targets ([data] standardize = true)");
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
    s.integer("grid_extensions", &O::grid_extensions,
              "how many steps the search may continue a searched grid past either end when the best "
              "candidate lies at that end (each step: the end value times the ratio of the two values "
              "at that end); 0: the grids as given (the default: on tied targets the continued search "
              "runs to degenerate spikes, README)",
              0)
        .non_negative();
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

namespace {

// One searched dimension of the cross-validation: its values sorted, continued geometrically past
// either end (index −1 is the first value times first/second, index n the last times last/previous),
// and the index range searched so far.
class SearchGrid {
 public:
  explicit SearchGrid(std::vector<double> values) : values_(std::move(values)) {
    std::sort(values_.begin(), values_.end());
    values_.erase(std::unique(values_.begin(), values_.end()), values_.end());
    hi = static_cast<long>(values_.size()) - 1;
  }
  double at(long i) const {
    const long n = static_cast<long>(values_.size());
    if (i < 0) return values_[0] * std::pow(values_[0] / values_[1], static_cast<double>(-i));
    if (i >= n) return values_[n - 1] * std::pow(values_[n - 1] / values_[n - 2], static_cast<double>(i - n + 1));
    return values_[static_cast<std::size_t>(i)];
  }
  bool searched() const { return values_.size() > 1; }
  // Moves the end at which `best` lies one step out; false at an inner index or when that end has
  // been moved `max_steps` times already.
  bool extend_at(long best, long max_steps) {
    if (!searched()) return false;
    if (best == lo && lo_steps < max_steps) {
      --lo;
      ++lo_steps;
      return true;
    }
    if (best == hi && hi_steps < max_steps) {
      ++hi;
      ++hi_steps;
      return true;
    }
    return false;
  }
  long lo = 0, hi = 0, lo_steps = 0, hi_steps = 0;

 private:
  std::vector<double> values_;
};

struct SearchResult {
  Vector sigma_x;
  double sigma_y = 0, lambda = 0;
};

// K-fold cross-validation of the held-out conditional score-matching loss over σ_x = c_x · sx_base,
// σ_y = c_y · sy_base and λ: first the given grids; while the best candidate lies at an end of a
// searched grid, that grid is continued one step past it (at most `grid_extensions` steps per end)
// and the new candidates are scored too. Each candidate's loss is the mean over the folds, summed in
// fold order; ties go to the first in grid order. Reports cv_loss, the candidates scored and notes.
SearchResult cross_validate(const Matrix& X, const Matrix& Y, const Vector& sx_base, double sy_base,
                            const KcefKeys& opt, const FitInput& in) {
  SearchGrid gx(opt.sigma_x ? std::vector<double>{1.0} : opt.scale_grid);
  SearchGrid gy(opt.sigma_y ? std::vector<double>{1.0} : opt.scale_grid);
  SearchGrid gl(opt.lambda ? std::vector<double>{*opt.lambda} : opt.lambda_grid);
  if (!gx.searched() && !gy.searched() && !gl.searched()) return {gx.at(0) * sx_base, gy.at(0) * sy_base, gl.at(0)};

  const Index n = X.rows(), K = static_cast<Index>(opt.folds);
  RandomStream fold_rng = in.context.rng().derive("folds");
  const std::vector<Index> folds = random_folds(n, K, fold_rng);
  std::vector<Matrix> Xtr, Ytr, Xte, Yte;
  for (Index k = 0; k < K; ++k) {
    const std::vector<Index> tr = rows_outside_fold(folds, k), te = rows_in_fold(folds, k);
    Xtr.push_back(gather_rows(X, tr));
    Ytr.push_back(gather_rows(Y, tr));
    Xte.push_back(gather_rows(X, te));
    Yte.push_back(gather_rows(Y, te));
  }
  // The held-out loss of a candidate, on this process alone: every process runs the whole search.
  const Context fold_context(0, 1);
  std::map<std::array<long, 3>, double> mean;  // (x, y, λ) indices -> mean held-out loss
  std::array<long, 3> best{0, 0, 0};
  for (int round = 0;; ++round) {
    in.context.progress().update(
        "kcef", 0.0,
        std::to_string(K) + "-fold cross-validation, round " + std::to_string(round + 1) + ": " +
            std::to_string(gx.hi - gx.lo + 1) + " σ_x x " + std::to_string(gy.hi - gy.lo + 1) + " σ_y x " +
            std::to_string(gl.hi - gl.lo + 1) + " λ");
    for (long ix = gx.lo; ix <= gx.hi; ++ix)
      for (long iy = gy.lo; iy <= gy.hi; ++iy) {
        std::vector<long> missing;
        for (long il = gl.lo; il <= gl.hi; ++il)
          if (!mean.count({ix, iy, il})) missing.push_back(il);
        if (missing.empty()) continue;
        const Vector sx = gx.at(ix) * sx_base;
        const double sy = gy.at(iy) * sy_base;
        std::vector<double> total(missing.size(), 0.0);
        for (Index k = 0; k < K; ++k) {
          const KcefSystem sys = kcef_system(Xtr[k], Ytr[k], sx, sy, opt.q0_sd);
          for (std::size_t j = 0; j < missing.size(); ++j) {
            double loss = std::numeric_limits<double>::infinity();
            try {
              const KcefModel m = kcef_solve(sys, Xtr[k], Ytr[k], sx, sy, opt.q0_sd, gl.at(missing[j]));
              loss = conditional_score_matching_loss(m, Xte[k], Yte[k], fold_context);
            } catch (const NumericalError&) {
              // A candidate whose system does not factorise is never chosen.
            }
            if (std::isnan(loss)) loss = std::numeric_limits<double>::infinity();
            total[j] += loss;
          }
        }
        for (std::size_t j = 0; j < missing.size(); ++j)
          mean[{ix, iy, missing[j]}] = total[j] / static_cast<double>(K);
      }
    double best_loss = std::numeric_limits<double>::infinity();
    for (const auto& [key, v] : mean)  // in grid order, so ties go to the first
      if (v < best_loss) {
        best_loss = v;
        best = key;
      }
    if (!std::isfinite(best_loss))
      throw NumericalError(
          "kcef: no candidate of the cross-validation grid gives a finite held-out loss; "
          "widen `scale_grid` or `lambda_grid`");
    in.report.values["cv_loss"] = best_loss;
    // One step per grid and round, for every grid whose best index is at an end.
    bool extended = false;
    extended |= gx.extend_at(best[0], opt.grid_extensions);
    extended |= gy.extend_at(best[1], opt.grid_extensions);
    extended |= gl.extend_at(best[2], opt.grid_extensions);
    if (!extended) break;
  }
  in.report.values["cv_candidates"] = static_cast<double>(mean.size());
  const auto describe = [&](const SearchGrid& g, long index, const char* key, double value) {
    if (!g.searched()) return;
    if (g.lo_steps > 0 || g.hi_steps > 0)
      in.report.notes.push_back(std::string("the search continued the ") + key + " grid " +
                                std::to_string(g.lo_steps) + " step(s) down and " + std::to_string(g.hi_steps) +
                                " up; chosen " + number_text(value));
    if (index == g.lo || index == g.hi)
      in.report.notes.push_back(std::string("the chosen ") + key + " value " + number_text(value) + " is at the " +
                                (index == g.lo ? "lower" : "upper") + " end of its grid" +
                                (opt.grid_extensions > 0 ? " after " + std::to_string(opt.grid_extensions) +
                                                               " extensions; widen the grid"
                                                         : "; extend it (grid_extensions)"));
  };
  describe(gx, best[0], "sigma_x scale", gx.at(best[0]));
  describe(gy, best[1], "sigma_y scale", gy.at(best[1]));
  describe(gl, best[2], "lambda", gl.at(best[2]));
  return {gx.at(best[0]) * sx_base, gy.at(best[1]) * sy_base, gl.at(best[2])};
}

}  // namespace

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

  // Bandwidths: the given ones, or the median heuristic (times a searched scale).
  const Vector sx_base = opt_.sigma_x ? (opt_.sigma_x->size() == 1
                                             ? Vector(Vector::Constant(dx, opt_.sigma_x->front()))
                                             : Vector(Eigen::Map<const Vector>(opt_.sigma_x->data(), dx)))
                                      : median_input_bandwidths(X, sites_);
  const double sy_base = opt_.sigma_y ? *opt_.sigma_y : reference_target_bandwidth(Y, sites_);
  check_target_bandwidth_range(sy_base, opt_, sites_);
  const SearchResult chosen = cross_validate(X, Y, sx_base, sy_base, opt_, in);
  const Vector sigma_x = chosen.sigma_x;
  const double sigma_y = chosen.sigma_y, lambda = chosen.lambda;
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
