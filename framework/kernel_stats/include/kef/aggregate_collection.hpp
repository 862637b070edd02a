#pragma once
// The collection of single tests an aggregated kernel test combines (MMDAgg, HSICAgg, KSDAgg; Schrab
// et al., JMLR 2023 and NeurIPS 2022): the kernel families, each a function of a scaled L1 or L2
// distance, the bandwidths each family is tried at, and the weights that share the level between the
// single tests. The rules are the papers' (and their reference implementation's), so a collection can
// be compared with it number for number.
#include <string>
#include <string_view>
#include <vector>

#include "kef/types.hpp"

namespace kef {

enum class AggregateDistance { L1, L2 };

// One kernel family, k(x, y) = κ(‖x − y‖ / λ) in the L1 or L2 norm with bandwidth λ:
//   gaussian exp(−d²), imq (1 + d²)^(−1/2), laplace exp(−d) (L1), and the Matérn kernels of
//   smoothness ν = p + 1/2, p = 0..4, κ(d) = exp(−√(2ν) d) · Σ_{i≤p} (p + i)! / (i! (p − i)!) ·
//   (2√(2ν) d)^(p−i) · p! / (2p)!, in either norm.
struct AggregateKernel {
  enum class Profile { Gaussian, Imq, Matern05, Matern15, Matern25, Matern35, Matern45 };
  Profile profile = Profile::Gaussian;
  AggregateDistance distance = AggregateDistance::L2;
  std::string name;  // "gaussian", "imq", "laplace", "matern_1.5_l1", ...
};

// A collection by name: one family ("gaussian", "laplace", "imq", "matern_0.5_l1" .. "matern_4.5_l1",
// "matern_0.5_l2" .. "matern_4.5_l2") or a group ("laplace_gaussian" = "gaussian_laplace",
// "all_matern_l1", "all_matern_l2", "all_matern_l1_l2", "all": the ten Matérn kernels, gaussian and
// imq). L1 families come before L2 ones, the order the single tests are reported in. ConfigError
// naming `where` for any other name.
std::vector<AggregateKernel> parse_aggregate_kernels(std::string_view text, std::string_view where);

// out[i] = κ(distances[i] / bandwidth) for i < count.
void aggregate_kernel_values(const AggregateKernel& kernel, double bandwidth, const double* distances,
                             Index count, double* out);
// out(i, j) = κ(distances(i, j) / bandwidth), elementwise.
void aggregate_kernel_matrix(const AggregateKernel& kernel, double bandwidth, const Matrix& distances,
                             Matrix& out);
// κ(d) for one scaled distance (the brute-force twin of the matrix form).
double aggregate_kernel_value(AggregateKernel::Profile profile, double scaled_distance);

// ‖a_i − b_j‖ in the given norm for all rows (A.rows() x B.rows()), each summed over the columns in
// order (no Gram-matrix shortcut: the statistics are compared with the reference's to 1e-10).
Matrix pairwise_distances(const Matrix& A, const Matrix& B, AggregateDistance distance);

// The rows of each sample the papers' bandwidth rules look at.
constexpr Index kAggregateCollectionRows = 500;

// MMDAgg's bandwidths: from the distances between the first 500 rows of X and of Y, λ_min = the
// smallest distance, or, when that is below 0.1, the larger of 0.1 and the 5% order statistic; λ_max
// = the larger of the largest distance and 0.3; then `count` values geometric from λ_min / 2 to
// 2 λ_max. count >= 2.
std::vector<double> mmdagg_bandwidths(const Matrix& X, const Matrix& Y, AggregateDistance distance,
                                      Index count);
// The same from those distances already formed: D (at most 500 x 500) the distances between the first
// rows of X and of Y.
std::vector<double> mmdagg_bandwidths(const Matrix& D, Index count);
// KSDAgg's: `count` values geometric from 1 to max(2, the largest L2 distance between the first 500
// rows of X), each divided by the dimension.
std::vector<double> ksdagg_bandwidths(const Matrix& X, Index count);
// HSICAgg's, for one of the two samples: power^i · (median of the positive L2 distances between the
// first 500 rows), i = lower..upper.
std::vector<double> hsicagg_bandwidths(const Matrix& X, double power, int lower, int upper);

// How the level is shared between the single tests of one kernel family (position r = 1..R in the
// bandwidth order): uniform 1/R, decreasing ∝ 1/r, increasing ∝ 1/(R + 1 − r), centred ∝ 1/(|(R+1)/2 − r|
// + 1) for odd R and 1/(|(R+1)/2 − r| + 1/2) for even R; each sums to 1.
enum class AggregateWeights { Uniform, Decreasing, Increasing, Centred };
AggregateWeights parse_aggregate_weights(std::string_view text, std::string_view where);
std::string weights_name(AggregateWeights weights);
std::vector<double> aggregate_weights(Index count, AggregateWeights weights);

}  // namespace kef
