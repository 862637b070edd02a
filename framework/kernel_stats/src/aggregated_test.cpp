#include "kef/aggregated_test.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"
#include "kef/parallel.hpp"

namespace kef {
namespace {

// The largest kernel matrix formed (2 GB); larger samples are refused before any work.
constexpr double kAggMaxKernelEntries = double(Index{1} << 28);

std::string option_key(const AggregateOptions& o, std::string name) {
  if (!o.flag_names) return "`" + name + "`";
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

// The options every aggregated test shares, checked before any data is looked at.
void check_agg_options(const AggregateOptions& o, std::string_view test) {
  const std::string t(test);
  if (!(o.alpha > 0 && o.alpha < 1))
    throw ConfigError(t + ": " + option_key(o, "alpha") + " must be in (0, 1), got " + number_text(o.alpha));
  if (o.bootstrap_draws < 1)
    throw ConfigError(t + ": " + option_key(o, "bootstrap_draws") + " must be at least 1, got " +
                      std::to_string(o.bootstrap_draws));
  if (o.level_draws < 1)
    throw ConfigError(t + ": " + option_key(o, "level_draws") + " must be at least 1, got " +
                      std::to_string(o.level_draws));
  if (o.bisection_steps < 1)
    throw ConfigError(t + ": " + option_key(o, "bisection_steps") + " must be at least 1, got " +
                      std::to_string(o.bisection_steps));
}

// The smallest p-value, 1/(B1 + 1), must be able to reach the smallest Bonferroni threshold α·w_t,
// or that single test could never reject whatever the data.
void check_agg_draws(const AggregateOptions& o, std::string_view test, const std::vector<double>& weights,
                     std::size_t tests) {
  const double smallest = *std::min_element(weights.begin(), weights.end());
  // (The small allowance keeps 1/(α·w) = 60 from rounding up to 61.)
  const double needed = std::ceil(1.0 / (o.alpha * smallest) - 1e-9) - 1;
  if (static_cast<double>(o.bootstrap_draws) < needed)
    throw ConfigError(std::string(test) + ": " + option_key(o, "bootstrap_draws") + " = " +
                      std::to_string(o.bootstrap_draws) + " is too few for alpha = " + number_text(o.alpha) +
                      " over " + std::to_string(tests) +
                      " single tests: the smallest p-value, 1/(draws + 1), must be at most alpha times the "
                      "smallest weight (" +
                      number_text(smallest) + "); use at least " + number_text(needed) + " draws");
}

// "X (x.npy), the first sample," when the caller names the sample, else "the first sample".
std::string agg_sample_name(const std::string& given, std::string_view role) {
  return given.empty() ? std::string(role) : given + ", " + std::string(role) + ",";
}

void check_agg_sample(const Matrix& X, std::string_view test, std::string_view name, Index min_rows) {
  if (X.rows() < min_rows)
    throw DataError(std::string(test) + ": " + std::string(name) + " has " + std::to_string(X.rows()) +
                    (X.rows() == 1 ? " row" : " rows") + "; the test needs at least " +
                    std::to_string(min_rows));
  if (X.cols() < 1) throw DataError(std::string(test) + ": " + std::string(name) + " has no columns");
  check_finite(X, std::string(test) + ": " + std::string(name));
}

void check_agg_size(Index n, std::string_view test) {
  if (static_cast<double>(n) * static_cast<double>(n) > kAggMaxKernelEntries)
    throw ConfigError(std::string(test) + ": a " + std::to_string(n) + " x " + std::to_string(n) +
                      " kernel matrix is more than 2^28 entries (2 GB); test a subsample");
}

void agg_zero_diagonal(Matrix& H) { H.diagonal().setZero(); }

AggregatedTest agg_report_head(std::string test, std::string statistic, std::string approximation,
                               const AggregateOptions& o, AggregateWeights weights, Index rows) {
  AggregatedTest out;
  out.test = std::move(test);
  out.statistic = std::move(statistic);
  out.approximation = std::move(approximation);
  out.alpha = o.alpha;
  out.bootstrap_draws = o.bootstrap_draws;
  out.level_draws = o.level_draws;
  out.bisection_steps = o.bisection_steps;
  out.weights = weights_name(weights);
  out.rows = rows;
  return out;
}

// Fills the single tests' results from the simulated statistics (their kernel, bandwidths and weights
// already set).
void agg_decide(AggregatedTest& out, Matrix simulated, const AggregateOptions& o) {
  std::vector<double> weights;
  for (const SingleTest& t : out.tests) weights.push_back(t.weight);
  const AggregateDecision d =
      aggregate_decision(simulated, weights, o.alpha, o.bootstrap_draws, o.level_draws, o.bisection_steps);
  out.level_correction = d.level_correction;
  for (std::size_t i = 0; i < out.tests.size(); ++i) {
    SingleTest& t = out.tests[i];
    const Index r = static_cast<Index>(i);
    t.statistic = simulated(r, 0);
    t.quantile = d.quantiles[r];
    t.p_value = d.p_values[r];
    t.threshold = d.thresholds[r];
    t.reject = d.reject[i];
    out.reject = out.reject || t.reject;
  }
  if (o.keep_simulated) out.simulated = std::move(simulated);
}

struct MmdCollection {
  std::vector<AggregateKernel> kernels;
  AggregateWeights weight_type = AggregateWeights::Uniform;
  std::vector<double> weights;  // of the bandwidths of one family, divided by the number of families
};

MmdCollection mmd_collection(const AggregateOptions& o) {
  check_agg_options(o, "mmdagg");
  MmdCollection c;
  c.kernels = parse_aggregate_kernels(o.kernels, "mmdagg: " + option_key(o, "kernels"));
  c.weight_type = parse_aggregate_weights(o.weights, "mmdagg: " + option_key(o, "weights"));
  if (o.bandwidths < 2)
    throw ConfigError("mmdagg: " + option_key(o, "number_bandwidths") + " = " + std::to_string(o.bandwidths) +
                      "; an aggregated test needs at least 2 bandwidths per kernel (one is a single test)");
  c.weights = aggregate_weights(o.bandwidths, c.weight_type);
  for (double& w : c.weights) w /= static_cast<double>(c.kernels.size());
  check_agg_draws(o, "mmdagg", c.weights, c.kernels.size() * c.weights.size());
  return c;
}

std::vector<double> hsic_weights(const AggregateOptions& o) {
  check_agg_options(o, "hsicagg");
  const AggregateWeights weight_type =
      parse_aggregate_weights(o.weights, "hsicagg: " + option_key(o, "weights"));
  if (weight_type != AggregateWeights::Uniform)
    throw ConfigError(
        "hsicagg: " + option_key(o, "weights") + " = " + o.weights +
        "; HSICAgg's collection is a grid of bandwidth pairs with no order to weight by: use uniform");
  if (!(o.hsic_power > 1) || !std::isfinite(o.hsic_power))
    throw ConfigError("hsicagg: " + option_key(o, "hsic_power") + " must be a number above 1, got " +
                      number_text(o.hsic_power));
  if (o.hsic_upper <= o.hsic_lower)
    throw ConfigError("hsicagg: " + option_key(o, "hsic_lower") + " = " + std::to_string(o.hsic_lower) +
                      " and " + option_key(o, "hsic_upper") + " = " + std::to_string(o.hsic_upper) +
                      " give one bandwidth per sample; an aggregated test needs at least 2");
  const Index per_sample = o.hsic_upper - o.hsic_lower + 1;
  const std::vector<double> weights(static_cast<std::size_t>(per_sample * per_sample),
                                    1.0 / static_cast<double>(per_sample * per_sample));
  check_agg_draws(o, "hsicagg", weights, weights.size());
  return weights;
}

std::vector<double> ksd_weights(const AggregateOptions& o) {
  check_agg_options(o, "ksdagg");
  const AggregateWeights weight_type =
      parse_aggregate_weights(o.weights, "ksdagg: " + option_key(o, "weights"));
  if (o.bandwidths < 2)
    throw ConfigError("ksdagg: " + option_key(o, "number_bandwidths") + " = " + std::to_string(o.bandwidths) +
                      "; an aggregated test needs at least 2 bandwidths (one is a single test)");
  const std::vector<double> weights = aggregate_weights(o.bandwidths, weight_type);
  check_agg_draws(o, "ksdagg", weights, weights.size());
  return weights;
}

}  // namespace

void check_aggregate_options(const AggregateOptions& o, AggregateKind kind) {
  switch (kind) {
    case AggregateKind::Mmd:
      mmd_collection(o);
      return;
    case AggregateKind::Hsic:
      hsic_weights(o);
      return;
    case AggregateKind::Ksd:
      ksd_weights(o);
      return;
  }
}

AggregateDecision aggregate_decision(const Matrix& M, const std::vector<double>& weights, double alpha,
                                     Index B1, Index B2, Index B3) {
  const Index T = M.rows();
  if (M.cols() != 1 + B1 + B2 || static_cast<Index>(weights.size()) != T)
    throw Error("aggregate_decision: simulated statistics of the wrong shape");
  // Each test's observed statistic and first B1 draws, sorted.
  Matrix sorted(T, B1 + 1);
  for (Index t = 0; t < T; ++t) {
    std::vector<double> row(static_cast<std::size_t>(B1 + 1));
    for (Index b = 0; b <= B1; ++b) row[static_cast<std::size_t>(b)] = M(t, b);
    std::sort(row.begin(), row.end());
    for (Index b = 0; b <= B1; ++b) sorted(t, b) = row[static_cast<std::size_t>(b)];
  }
  Vector quantiles(T);
  auto set_quantiles = [&](double u) {
    for (Index t = 0; t < T; ++t) {
      // The (1 − u·w_t)-quantile: position ⌈(B1 + 1)(1 − u·w_t)⌉ − 1 of the sorted B1 + 1 values.
      const double position =
          std::ceil(static_cast<double>(B1 + 1) * (1 - u * weights[static_cast<std::size_t>(t)])) - 1;
      quantiles[t] = sorted(t, std::clamp<Index>(static_cast<Index>(position), 0, B1));
    }
  };
  double u_min = 0, u_max = 1 / *std::max_element(weights.begin(), weights.end());
  for (Index step = 0; step < B3; ++step) {
    const double u = (u_max + u_min) / 2;
    set_quantiles(u);
    Index exceed = 0;
    for (Index b = 1 + B1; b < 1 + B1 + B2; ++b)
      for (Index t = 0; t < T; ++t)
        if (M(t, b) - quantiles[t] > 0) {
          ++exceed;
          break;
        }
    if (static_cast<double>(exceed) / static_cast<double>(B2) <= alpha)
      u_min = u;
    else
      u_max = u;
  }
  AggregateDecision d;
  d.level_correction = u_min;
  set_quantiles(u_min);
  d.quantiles = quantiles;
  d.p_values.resize(T);
  d.thresholds.resize(T);
  for (Index t = 0; t < T; ++t) {
    Index at_least = 0;
    for (Index b = 0; b <= B1; ++b) at_least += sorted(t, b) >= M(t, 0) ? 1 : 0;
    d.p_values[t] = static_cast<double>(at_least) / static_cast<double>(B1 + 1);
    d.thresholds[t] = u_min * weights[static_cast<std::size_t>(t)];
    d.reject.push_back(d.p_values[t] <= d.thresholds[t]);
  }
  return d;
}

void wild_bootstrap_mmd_matrix(const AggregateKernel& k, double lambda, const Matrix& Dxx, const Matrix& Dyy,
                               const Matrix& Dxy, const Matrix& Dyx, Matrix& H, const Context& context) {
  const Index n = Dxx.rows();
  H.resize(n, n);
  parallel_for_chunks(n, 32, context.threads(), [&](Index begin, Index count) {
    Vector part(n);
    for (Index j = begin; j < begin + count; ++j) {
      auto h = H.col(j).head(j);
      aggregate_kernel_values(k, lambda, Dxx.col(j).data(), j, h.data());
      aggregate_kernel_values(k, lambda, Dyy.col(j).data(), j, part.data());
      h += part.head(j);
      aggregate_kernel_values(k, lambda, Dxy.col(j).data(), j, part.data());
      h -= part.head(j);
      aggregate_kernel_values(k, lambda, Dyx.col(j).data(), j, part.data());
      h -= part.head(j);
      H(j, j) = 0;
    }
  });
}

double labelled_mmd2(double aKa, double aK1, double oneK1, Index n1, Index n2) {
  const double a = static_cast<double>(n1), b = static_cast<double>(n2);
  const double sxy = aK1 - aKa;              // aᵀK0(1 − a)
  const double syy = oneK1 - 2 * aK1 + aKa;  // (1 − a)ᵀK0(1 − a)
  return aKa / (a * (a - 1)) + syy / (b * (b - 1)) - 2 * sxy / (a * b);
}

AggregatedTest mmd_agg(const Matrix& X, const Matrix& Y, const AggregateOptions& o, RandomStream& rng,
                       const Context& context) {
  const MmdCollection collection = mmd_collection(o);
  const std::vector<AggregateKernel>& kernels = collection.kernels;
  const std::vector<double>& family_weights = collection.weights;
  const AggregateWeights weight_type = collection.weight_type;
  check_agg_sample(X, "mmdagg", agg_sample_name(o.x_name, "the first sample"), 2);
  check_agg_sample(Y, "mmdagg", agg_sample_name(o.y_name, "the second sample"), 2);
  if (X.cols() != Y.cols())
    throw DataError("mmdagg: samples of dimension " + std::to_string(X.cols()) + " and " +
                    std::to_string(Y.cols()) + "; a two-sample test needs the same columns in both");
  const Index n1 = X.rows(), n2 = Y.rows();
  const bool bootstrap = n1 == n2 && !o.permutations;
  check_agg_size(bootstrap ? n1 : n1 + n2, "mmdagg");

  AggregatedTest out = agg_report_head("mmdagg", "MMD²", bootstrap ? "wild bootstrap" : "permutations", o,
                                       weight_type, n1 + n2);
  const Index draws = o.bootstrap_draws + o.level_draws;
  // Permutations need the labels themselves too (aᵀK0 1 below); the wild bootstrap only their patterns.
  const Matrix W = bootstrap ? Matrix() : permutation_draws(n1, n1 + n2, draws, rng);
  const TwoValuedDraws patterns = bootstrap ? rademacher_patterns(n1, draws, rng) : two_valued_draws(W, 0, 1);
  Matrix Z;
  if (!bootstrap) {
    Z.resize(n1 + n2, X.cols());
    Z << X, Y;
  }
  Matrix simulated(static_cast<Index>(kernels.size()) * o.bandwidths, 1 + draws);
  // Distances for one norm at a time (families are ordered L1 first), kernel matrices one at a time.
  std::optional<AggregateDistance> norm;
  std::vector<double> bandwidths;
  Matrix Dxx, Dyy, Dxy, Dyx, H;
  Index row = 0;
  for (const AggregateKernel& k : kernels) {
    if (norm != k.distance) {
      norm = k.distance;
      // The bandwidths from the distances between the samples' first rows, a corner of those formed here.
      const Index r1 = std::min(n1, kAggregateCollectionRows), r2 = std::min(n2, kAggregateCollectionRows);
      if (bootstrap) {
        Dxx = pairwise_distances(X, X, k.distance);
        Dyy = pairwise_distances(Y, Y, k.distance);
        Dxy = pairwise_distances(X, Y, k.distance);
        Dyx = Dxy.transpose();
        bandwidths = r1 == n1 && r2 == n2
                         ? mmdagg_bandwidths(Dxy, o.bandwidths)
                         : mmdagg_bandwidths(Matrix(Dxy.topLeftCorner(r1, r2)), o.bandwidths);
      } else {
        Dxx = pairwise_distances(Z, Z, k.distance);
        bandwidths = mmdagg_bandwidths(Matrix(Dxx.block(0, n1, r1, r2)), o.bandwidths);
      }
    }
    for (Index r = 0; r < o.bandwidths; ++r, ++row) {
      const double lambda = bandwidths[static_cast<std::size_t>(r)];
      SingleTest t;
      t.kernel = k.name;
      t.bandwidth = lambda;
      t.weight = family_weights[static_cast<std::size_t>(r)];
      out.tests.push_back(t);
      if (bootstrap) {
        wild_bootstrap_mmd_matrix(k, lambda, Dxx, Dyy, Dxy, Dyx, H, context);
        const double norm_const = static_cast<double>(n1) * static_cast<double>(n1 - 1);
        simulated.row(row) = quadratic_forms(H, patterns, context).transpose() / norm_const;
      } else {
        aggregate_kernel_matrix(k, lambda, Dxx, H);
        agg_zero_diagonal(H);
        const Vector q = quadratic_forms(H, patterns, context);
        const Vector k1 = H.rowwise().sum();
        const Vector aK1 = W.transpose() * k1;
        const double oneK1 = k1.sum();
        for (Index b = 0; b <= draws; ++b) simulated(row, b) = labelled_mmd2(q[b], aK1[b], oneK1, n1, n2);
      }
      check_finite(Vector(simulated.row(row).transpose()),
                   "mmdagg: the statistics of kernel " + k.name + " at bandwidth " + number_text(lambda));
    }
  }
  agg_decide(out, std::move(simulated), o);
  return out;
}

namespace {

// h(i, j) = k(a_i, a_j) − k(a_i, b_j) − k(b_i, a_j) + k(b_i, b_j) for the Gaussian exp(−d²/λ²), from
// the three distance matrices of the halves a and b.
void agg_half_pair_h(double lambda, const Matrix& Daa, const Matrix& Dbb, const Matrix& Dab, Matrix& h,
                     Matrix& tmp) {
  static const AggregateKernel kGaussian{AggregateKernel::Profile::Gaussian, AggregateDistance::L2,
                                         "gaussian"};
  aggregate_kernel_matrix(kGaussian, lambda, Daa, h);
  aggregate_kernel_matrix(kGaussian, lambda, Dbb, tmp);
  h += tmp;
  aggregate_kernel_matrix(kGaussian, lambda, Dab, tmp);
  h -= tmp;
  h -= tmp.transpose();
}

}  // namespace

AggregatedTest hsic_agg(const Matrix& X, const Matrix& Y, const AggregateOptions& o, RandomStream& rng,
                        const Context& context) {
  const std::vector<double> weights = hsic_weights(o);
  const AggregateWeights weight_type = AggregateWeights::Uniform;
  const Index per_sample = o.hsic_upper - o.hsic_lower + 1;
  check_agg_sample(X, "hsicagg", agg_sample_name(o.x_name, "the first sample"), 4);
  check_agg_sample(Y, "hsicagg", agg_sample_name(o.y_name, "the second sample"), 4);
  if (X.rows() != Y.rows())
    throw DataError("hsicagg: paired samples of " + std::to_string(X.rows()) + " and " +
                    std::to_string(Y.rows()) + " rows; an independence test needs the same rows in both");
  const Index N = X.rows() / 2;
  check_agg_size(N, "hsicagg");
  const std::vector<double> bx = hsicagg_bandwidths(X, o.hsic_power, o.hsic_lower, o.hsic_upper);
  const std::vector<double> by = hsicagg_bandwidths(Y, o.hsic_power, o.hsic_lower, o.hsic_upper);

  AggregatedTest out = agg_report_head("hsicagg", "HSIC", "wild bootstrap", o, weight_type, N);
  const Index draws = o.bootstrap_draws + o.level_draws;
  const TwoValuedDraws W = rademacher_patterns(N, draws, rng);
  const auto AX = X.topRows(N), BX = X.middleRows(N, N), AY = Y.topRows(N), BY = Y.middleRows(N, N);
  const Matrix Dxx = pairwise_distances(AX, AX, AggregateDistance::L2),
               Dxx2 = pairwise_distances(BX, BX, AggregateDistance::L2),
               Dxx12 = pairwise_distances(AX, BX, AggregateDistance::L2);
  const Matrix Dyy = pairwise_distances(AY, AY, AggregateDistance::L2),
               Dyy2 = pairwise_distances(BY, BY, AggregateDistance::L2),
               Dyy12 = pairwise_distances(AY, BY, AggregateDistance::L2);
  std::vector<Matrix> hx(bx.size());
  Matrix tmp, hy, H;
  for (std::size_t i = 0; i < bx.size(); ++i) agg_half_pair_h(bx[i], Dxx, Dxx2, Dxx12, hx[i], tmp);
  Matrix simulated(per_sample * per_sample, 1 + draws);
  const double norm_const = static_cast<double>(N) * static_cast<double>(N - 1);
  Index row = 0;
  for (std::size_t j = 0; j < by.size(); ++j) {
    agg_half_pair_h(by[j], Dyy, Dyy2, Dyy12, hy, tmp);
    for (std::size_t i = 0; i < bx.size(); ++i, ++row) {
      SingleTest t;
      t.kernel = "gaussian";
      t.bandwidth = bx[i];
      t.bandwidth_y = by[j];
      t.weight = weights[static_cast<std::size_t>(row)];
      out.tests.push_back(t);
      H = hx[i].cwiseProduct(hy);
      agg_zero_diagonal(H);
      simulated.row(row) = quadratic_forms(H, W, context).transpose() / norm_const;
    }
  }
  agg_decide(out, std::move(simulated), o);
  return out;
}

AggregatedTest ksd_agg(const Matrix& X, const Matrix& S, const AggregateOptions& o, RandomStream& rng,
                       const Context& context) {
  const std::vector<double> weights = ksd_weights(o);
  const AggregateWeights weight_type =
      parse_aggregate_weights(o.weights, "ksdagg: " + option_key(o, "weights"));
  check_agg_sample(X, "ksdagg", agg_sample_name(o.x_name, "the sample"), 2);
  if (S.rows() != X.rows() || S.cols() != X.cols())
    throw DataError("ksdagg: the scores are " + std::to_string(S.rows()) + " x " + std::to_string(S.cols()) +
                    " for a sample of " + std::to_string(X.rows()) + " x " + std::to_string(X.cols()));
  check_finite(S, "ksdagg: the model's score");
  const Index n = X.rows();
  check_agg_size(n, "ksdagg");
  const std::vector<double> bandwidths = ksdagg_bandwidths(X, o.bandwidths);

  AggregatedTest out = agg_report_head("ksdagg", "KSD²", "wild bootstrap", o, weight_type, n);
  const Index draws = o.bootstrap_draws + o.level_draws;
  const TwoValuedDraws W = rademacher_patterns(n, draws, rng);
  // The bandwidth-free parts of the Stein kernel h(x_i, x_j) of k = (1 + g r²)^(−β), β = 1/2, g = 1/λ²:
  // h = (s_i·s_j) k + 2βg (1 + g r²)^(−β−1) c_ij + 2βg D (1 + g r²)^(−β−1) − 4β(β+1) g² r² (1 + g r²)^(−β−2),
  // with c_ij = s_i·(x_i − x_j) + s_j·(x_j − x_i).
  Matrix r2(n, n);
  for (Index j = 0; j < n; ++j)
    for (Index i = 0; i < j; ++i) r2(i, j) = squared_distance(X, i, X, j);  // upper triangle: H's
  const Matrix SS = S * S.transpose();
  const Matrix XS = X * S.transpose();  // (i, j): x_i·s_j
  const Vector xs = X.cwiseProduct(S).rowwise().sum();
  Matrix c(n, n);
  for (Index j = 0; j < n; ++j)
    for (Index i = 0; i < j; ++i) c(i, j) = (xs[i] - XS(i, j)) + (xs[j] - XS(j, i));
  const double beta = 0.5, dim = static_cast<double>(X.cols());
  const double norm_const = static_cast<double>(n) * static_cast<double>(n - 1);
  Matrix simulated(o.bandwidths, 1 + draws);
  Matrix H(n, n);
  for (Index r = 0; r < o.bandwidths; ++r) {
    const double lambda = bandwidths[static_cast<std::size_t>(r)], g = 1 / (lambda * lambda);
    SingleTest t;
    t.kernel = "imq";
    t.bandwidth = lambda;
    t.weight = weights[static_cast<std::size_t>(r)];
    out.tests.push_back(t);
    // β = 1/2: (1 + g r²)^(−β) is one reciprocal square root and the higher powers follow by division,
    // where three std::pow per entry were most of KSDAgg's time; only the upper triangle, the part
    // quadratic_forms reads, is filled.
    const double a1 = 2 * beta * g, a2 = 4 * beta * (beta + 1) * g * g;
    for (Index j = 0; j < n; ++j) {
      for (Index i = 0; i < j; ++i) {
        const double q = 1.0 + g * r2(i, j);
        const double k = 1.0 / std::sqrt(q), k1 = k / q, k2 = k1 / q;
        H(i, j) = SS(i, j) * k + a1 * k1 * (c(i, j) + dim) - a2 * r2(i, j) * k2;
      }
      H(j, j) = 0;
    }
    simulated.row(r) = quadratic_forms(H, W, context).transpose() / norm_const;
    check_finite(Vector(simulated.row(r).transpose()),
                 "ksdagg: the statistics at bandwidth " + number_text(lambda));
  }
  agg_decide(out, std::move(simulated), o);
  return out;
}

}  // namespace kef
