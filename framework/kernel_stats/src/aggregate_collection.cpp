#include "kef/aggregate_collection.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "kef/error.hpp"
#include "kef/linalg.hpp"

namespace kef {
namespace {

using AggProfile = AggregateKernel::Profile;

AggregateKernel agg_family(AggProfile profile, AggregateDistance distance, std::string name) {
  return AggregateKernel{profile, distance, std::move(name)};
}

AggregateKernel agg_matern(int p, AggregateDistance distance) {
  static constexpr AggProfile kProfiles[] = {AggProfile::Matern05, AggProfile::Matern15, AggProfile::Matern25,
                                             AggProfile::Matern35, AggProfile::Matern45};
  return agg_family(
      kProfiles[p], distance,
      "matern_" + std::to_string(p) + ".5_" + (distance == AggregateDistance::L1 ? "l1" : "l2"));
}

std::vector<double> agg_geometric(double low, double high, Index count) {
  const double ratio = std::pow(high / low, 1.0 / static_cast<double>(count - 1));
  std::vector<double> out(static_cast<std::size_t>(count));
  for (Index i = 0; i < count; ++i)
    out[static_cast<std::size_t>(i)] = std::pow(ratio, static_cast<double>(i)) * low;
  return out;
}

void check_agg_count(Index count, std::string_view what) {
  if (count < 2)
    throw ConfigError(std::string(what) +
                      ": an aggregated test needs at least 2 bandwidths per kernel, got " +
                      std::to_string(count) + " (one bandwidth is a single test)");
}

}  // namespace

std::vector<AggregateKernel> parse_aggregate_kernels(std::string_view text, std::string_view where) {
  using D = AggregateDistance;
  std::vector<AggregateKernel> out;
  if (text == "gaussian") return {agg_family(AggProfile::Gaussian, D::L2, "gaussian")};
  if (text == "imq") return {agg_family(AggProfile::Imq, D::L2, "imq")};
  if (text == "laplace") return {agg_family(AggProfile::Matern05, D::L1, "laplace")};
  if (text == "laplace_gaussian" || text == "gaussian_laplace")
    return {agg_family(AggProfile::Matern05, D::L1, "laplace"),
            agg_family(AggProfile::Gaussian, D::L2, "gaussian")};
  for (int p = 0; p < 5; ++p)
    for (const D d : {D::L1, D::L2}) {
      AggregateKernel k = agg_matern(p, d);
      if (text == k.name) return {k};
    }
  if (text == "all_matern_l1" || text == "all_matern_l1_l2" || text == "all")
    for (int p = 0; p < 5; ++p) out.push_back(agg_matern(p, D::L1));
  if (text == "all_matern_l2" || text == "all_matern_l1_l2" || text == "all")
    for (int p = 0; p < 5; ++p) out.push_back(agg_matern(p, D::L2));
  if (text == "all") {
    out.push_back(agg_family(AggProfile::Gaussian, D::L2, "gaussian"));
    out.push_back(agg_family(AggProfile::Imq, D::L2, "imq"));
  }
  if (out.empty())
    throw ConfigError(std::string(where) + ": unknown kernel collection `" + std::string(text) +
                      "`; expected gaussian, laplace, imq, matern_P.5_l1 or matern_P.5_l2 (P = 0..4), "
                      "laplace_gaussian, all_matern_l1, all_matern_l2, all_matern_l1_l2 or all");
  return out;
}

double aggregate_kernel_value(AggProfile profile, double d) {
  // The Matérn polynomials written out with the papers' coefficients.
  switch (profile) {
    case AggProfile::Gaussian:
      return std::exp(-d * d);
    case AggProfile::Imq:
      return 1.0 / std::sqrt(1.0 + d * d);
    case AggProfile::Matern05:
      return std::exp(-d);
    case AggProfile::Matern15: {
      const double s = std::sqrt(3.0) * d;
      return (1 + s) * std::exp(-s);
    }
    case AggProfile::Matern25: {
      const double s = std::sqrt(5.0);
      return (1 + s * d + 5.0 / 3.0 * d * d) * std::exp(-s * d);
    }
    case AggProfile::Matern35: {
      const double s = std::sqrt(7.0);
      return (1 + s * d + 2.0 * 7.0 / 5.0 * d * d + 7.0 * s / 3.0 / 5.0 * d * d * d) * std::exp(-s * d);
    }
    case AggProfile::Matern45:
      return (1 + 3 * d + 3.0 * 36.0 / 28.0 * d * d + 216.0 / 84.0 * d * d * d +
              1296.0 / 1680.0 * d * d * d * d) *
             std::exp(-3 * d);
  }
  throw Error("aggregate kernel: unknown profile");
}

void aggregate_kernel_values(const AggregateKernel& kernel, double bandwidth, const double* distances,
                             Index count, double* out) {
  const auto d = Eigen::Map<const Eigen::ArrayXd>(distances, count) / bandwidth;
  Eigen::Map<Eigen::ArrayXd> o(out, count);
  switch (kernel.profile) {
    case AggProfile::Gaussian:
      o = (-d.square()).exp();
      return;
    case AggProfile::Imq:
      o = (1.0 + d.square()).rsqrt();
      return;
    case AggProfile::Matern05:
      o = (-d).exp();
      return;
    case AggProfile::Matern15: {
      const double s = std::sqrt(3.0);
      o = (1 + s * d) * (-s * d).exp();
      return;
    }
    case AggProfile::Matern25: {
      const double s = std::sqrt(5.0);
      o = (1 + s * d + 5.0 / 3.0 * d.square()) * (-s * d).exp();
      return;
    }
    case AggProfile::Matern35: {
      const double s = std::sqrt(7.0);
      o = (1 + s * d + 2.0 * 7.0 / 5.0 * d.square() + 7.0 * s / 3.0 / 5.0 * d.cube()) * (-s * d).exp();
      return;
    }
    case AggProfile::Matern45:
      o = (1 + 3 * d + 3.0 * 36.0 / 28.0 * d.square() + 216.0 / 84.0 * d.cube() +
           1296.0 / 1680.0 * d.square().square()) *
          (-3 * d).exp();
      return;
  }
}

void aggregate_kernel_matrix(const AggregateKernel& kernel, double bandwidth, const Matrix& distances,
                             Matrix& out) {
  out.resize(distances.rows(), distances.cols());
  aggregate_kernel_values(kernel, bandwidth, distances.data(), distances.size(), out.data());
}

Matrix pairwise_distances(const Matrix& A, const Matrix& B, AggregateDistance distance) {
  if (A.cols() != B.cols())
    throw DataError("pairwise distances: rows of dimension " + std::to_string(A.cols()) + " and " +
                    std::to_string(B.cols()));
  Matrix out = Matrix::Zero(A.rows(), B.rows());
  const Index n = A.rows();
  // Column j sums over the coordinates in order, as squared_distance does, with A's rows innermost (its
  // columns are contiguous), so the loop runs on whole vectors.
  for (Index j = 0; j < B.rows(); ++j) {
    double* o = out.col(j).data();
    for (Index c = 0; c < A.cols(); ++c) {
      const double* a = A.col(c).data();
      const double b = B(j, c);
      if (distance == AggregateDistance::L2) {
        for (Index i = 0; i < n; ++i) {
          const double u = a[i] - b;
          o[i] += u * u;
        }
      } else {
        for (Index i = 0; i < n; ++i) o[i] += std::abs(a[i] - b);
      }
    }
    if (distance == AggregateDistance::L2)
      for (Index i = 0; i < n; ++i) o[i] = std::sqrt(o[i]);
  }
  return out;
}

std::vector<double> mmdagg_bandwidths(const Matrix& X, const Matrix& Y, AggregateDistance distance,
                                      Index count) {
  check_agg_count(count, "mmdagg");
  return mmdagg_bandwidths(
      pairwise_distances(X.topRows(std::min(X.rows(), kAggregateCollectionRows)),
                         Y.topRows(std::min(Y.rows(), kAggregateCollectionRows)), distance),
      count);
}

std::vector<double> mmdagg_bandwidths(const Matrix& D, Index count) {
  check_agg_count(count, "mmdagg");
  const double smallest = D.minCoeff();
  double low = smallest;
  if (smallest < 0.1) {
    // The 5% order statistic, position floor(0.05 · size) of the sorted distances.
    std::vector<double> d(D.data(), D.data() + D.size());
    const auto k = static_cast<std::ptrdiff_t>(std::floor(static_cast<double>(d.size()) * 0.05));
    std::nth_element(d.begin(), d.begin() + k, d.end());
    low = std::max(d[static_cast<std::size_t>(k)], 0.1);
  }
  const double high = std::max(D.maxCoeff(), 0.3);
  return agg_geometric(low / 2, high * 2, count);
}

std::vector<double> ksdagg_bandwidths(const Matrix& X, Index count) {
  check_agg_count(count, "ksdagg");
  const Index n = std::min(X.rows(), kAggregateCollectionRows);
  const Matrix D = pairwise_distances(X.topRows(n), X.topRows(n), AggregateDistance::L2);
  std::vector<double> out = agg_geometric(1.0, std::max(D.maxCoeff(), 2.0), count);
  for (double& b : out) b /= static_cast<double>(X.cols());
  return out;
}

std::vector<double> hsicagg_bandwidths(const Matrix& X, double power, int lower, int upper) {
  if (upper <= lower)
    throw ConfigError("hsicagg: the bandwidth exponents run from " + std::to_string(lower) + " to " +
                      std::to_string(upper) + "; an aggregated test needs at least 2 bandwidths");
  const Index n = std::min(X.rows(), kAggregateCollectionRows);
  std::vector<double> d;
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) {
      const double v = std::sqrt(squared_distance(X, i, X, j));
      if (v > 0) d.push_back(v);
    }
  if (d.empty()) throw DataError("hsicagg: every row of a sample is the same point; no bandwidth to scale");
  // The median of an even count is the mean of the two middle values.
  const auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
  std::nth_element(d.begin(), mid, d.end());
  double median = *mid;
  if (d.size() % 2 == 0) median = 0.5 * (median + *std::max_element(d.begin(), mid));
  std::vector<double> out;
  for (int i = lower; i <= upper; ++i) out.push_back(std::pow(power, i) * median);
  return out;
}

AggregateWeights parse_aggregate_weights(std::string_view text, std::string_view where) {
  if (text == "uniform") return AggregateWeights::Uniform;
  if (text == "decreasing") return AggregateWeights::Decreasing;
  if (text == "increasing") return AggregateWeights::Increasing;
  if (text == "centred") return AggregateWeights::Centred;
  throw ConfigError(std::string(where) + ": unknown weights `" + std::string(text) +
                    "`; expected uniform, decreasing, increasing or centred");
}

std::string weights_name(AggregateWeights weights) {
  switch (weights) {
    case AggregateWeights::Uniform:
      return "uniform";
    case AggregateWeights::Decreasing:
      return "decreasing";
    case AggregateWeights::Increasing:
      return "increasing";
    case AggregateWeights::Centred:
      return "centred";
  }
  return "uniform";
}

std::vector<double> aggregate_weights(Index count, AggregateWeights weights) {
  const double R = static_cast<double>(count);
  std::vector<double> out(static_cast<std::size_t>(count), 1.0 / R);
  if (weights == AggregateWeights::Uniform) return out;
  // w_r = 1 / (c_r · Σ_s 1/c_s) with c_r the weight's denominator.
  std::vector<double> c(static_cast<std::size_t>(count));
  for (Index i = 1; i <= count; ++i) {
    const double r = static_cast<double>(i);
    double v = r;
    if (weights == AggregateWeights::Increasing) v = R + 1 - r;
    if (weights == AggregateWeights::Centred) v = std::abs((R + 1) / 2 - r) + (count % 2 == 1 ? 1.0 : 0.5);
    c[static_cast<std::size_t>(i - 1)] = v;
  }
  double normaliser = 0;
  for (const double v : c) normaliser += 1.0 / v;
  for (std::size_t r = 0; r < c.size(); ++r) out[r] = 1.0 / (c[r] * normaliser);
  return out;
}

}  // namespace kef
