#pragma once
// Aggregated kernel tests: MMDAgg (two samples), HSICAgg (independence of paired samples) and KSDAgg
// (goodness of fit from a model's score), after Schrab, Kim, Guedj and Gretton. Each runs one test per
// kernel and bandwidth of a collection (kef/aggregate_collection.hpp) and corrects the level for the
// multiple testing with a second set of simulated statistics, so the combined test keeps level α
// without a bandwidth to choose.
//
// Every statistic is a quadratic form of a symmetric matrix with a zero diagonal, wᵀHw / norm, and
// every simulated statistic is the same form at a column of a draw matrix W (Rademacher signs for the
// wild bootstrap, sample labels for permutations); so, one kernel matrix at a time, all B1 + B2 + 1
// statistics of a single test come from one pass over H's upper triangle: since every column of W takes
// two values only, each pair of small row blocks of H is tabulated at every pattern of those values and
// each draw adds its entry (quadratic_forms on TwoValuedDraws), with no product H·W. The blocks run on
// context.threads() threads and are summed in a fixed order, and the draws are made beforehand from one
// stream, so results depend on the seed and never on the thread count.
//
// The decision (Schrab et al., JMLR 2023, Algorithm 1): the single test t (weight w_t) rejects when its
// p-value among its first B1 simulated statistics and the observed one is at most u·w_t, where u, the
// level correction, is the largest value found by B3 bisection steps on [0, min 1/w_t] for which the
// fraction of the other B2 simulated statistics above some single test's (1 − u·w_t)-quantile is at
// most α. The aggregated test rejects when a single test does.
#include <limits>
#include <string>
#include <vector>

#include "kef/aggregate_collection.hpp"
#include "kef/context.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

struct AggregateOptions {
  double alpha = 0.05;
  Index bootstrap_draws = 2000;  // B1: simulated statistics for each single test's quantiles
  Index level_draws = 2000;      // B2: simulated statistics for the level correction
  Index bisection_steps = 50;    // B3
  Index bandwidths = 10;         // `number_bandwidths`: bandwidths per kernel family (MMDAgg, KSDAgg)
  std::string kernels = "laplace_gaussian";  // MMDAgg's collection (parse_aggregate_kernels)
  std::string weights = "uniform";           // parse_aggregate_weights; HSICAgg takes uniform only
  bool permutations = false;                 // MMDAgg: permutations although the sample sizes are equal
  // HSICAgg: each sample's Gaussian bandwidths are power^i times its median distance, i = lower..upper.
  double hsic_power = 2;
  int hsic_lower = -2, hsic_upper = 2;
  bool keep_simulated = false;  // AggregatedTest::simulated
  // Errors name the options as command-line flags (`--level-draws`) rather than keys (`level_draws`).
  bool flag_names = false;
  // How errors name the samples, as the caller's user gave them (the command: "X (x.npy)"), followed by
  // their role ("the first sample"); empty: the role alone.
  std::string x_name, y_name;
};

struct SingleTest {
  std::string kernel;  // the family's name, "gaussian", "matern_2.5_l1", ...
  double bandwidth = 0;
  double bandwidth_y = std::numeric_limits<double>::quiet_NaN();  // HSICAgg: Y's bandwidth
  double weight = 0;     // w_t, the share of the level (the weights of all single tests sum to 1)
  double statistic = 0;  // the observed statistic
  double quantile = 0;   // its (1 − u·w_t)-quantile among the B1 simulated ones and itself
  double p_value = 0;    // (#{simulated >= observed} + 1) / (B1 + 1)
  double threshold = 0;  // u·w_t
  bool reject = false;   // p_value <= threshold (equivalently statistic > quantile)
};

struct AggregatedTest {
  std::string test;           // "mmdagg", "hsicagg" or "ksdagg"
  std::string statistic;      // what the statistic estimates, "MMD²", "HSIC", "KSD²"
  std::string approximation;  // "wild bootstrap" or "permutations"
  double alpha = 0;
  Index bootstrap_draws = 0, level_draws = 0, bisection_steps = 0;
  std::string weights;
  Index rows = 0;               // rows the statistics use (HSICAgg: pairs of rows)
  double level_correction = 0;  // u
  bool reject = false;
  std::vector<SingleTest> tests;
  Matrix simulated;  // with keep_simulated: tests x (1 + B1 + B2), column 0 the observed statistics
};

// The options' own checks for one kind of test (everything but the data: alpha, the draws and
// whether B1 can reach the smallest single test's level, the kernels, weights and bandwidths), which
// each test makes first and callers that read files make before reading anything.
enum class AggregateKind { Mmd, Hsic, Ksd };
void check_aggregate_options(const AggregateOptions& options, AggregateKind kind);

// The decision from simulated statistics (tests x (1 + B1 + B2): column 0 the observed statistics,
// columns 1..B1 the quantiles' draws, the rest the level correction's) and the tests' weights.
struct AggregateDecision {
  double level_correction = 0;
  Vector quantiles, p_values, thresholds;
  std::vector<bool> reject;
};
AggregateDecision aggregate_decision(const Matrix& simulated, const std::vector<double>& weights,
                                     double alpha, Index bootstrap_draws, Index level_draws,
                                     Index bisection_steps);

// rows x (1 + draws) Rademacher signs, column 0 all ones (the observed statistic); drawn column by
// column, 64 signs per draw of rng.
Matrix rademacher_draws(Index rows, Index draws, RandomStream& rng);
// rows x (1 + draws) indicators of the rows labelled "first sample": column 0 the first `first` rows,
// every other column a uniform `first`-subset (sample_without_replacement).
Matrix permutation_draws(Index first, Index rows, Index draws, RandomStream& rng);

// wᵀHw for every column w of W, H symmetric: H·W by fixed chunks of W's columns on context.threads()
// threads. The general form (any W); MMDAgg, HSICAgg and KSDAgg use the two-valued form below.
Vector quadratic_forms(const Matrix& H, const Matrix& W, const Context& context);

// A draw matrix whose entries are all one of two values (Rademacher signs −1/1, permutation labels
// 0/1), kept as bit patterns of `block` rows: byte (b, column) has bit l set when W(b·block + l, column)
// is `high`. Made once per test and shared by all its kernels. Signs (low =
// −high) take blocks of 7 rows and keep a pattern whose last row is high flipped (every bit of the block
// inverted, and bit 7 set): flipping every sign of a block only flips the sign of its terms, so 64
// patterns per block suffice, as for 6 rows of labels.
struct TwoValuedDraws {
  Index rows = 0, draws = 0;  // W's shape
  double low = 0, high = 0;
  Index block = 6;
  bool flipped = false;                 // signs: patterns stored up to a flip, as above
  std::vector<unsigned char> patterns;  // blocks x draws, block-major
};
// Throws kef::Error if an entry of W is neither value.
TwoValuedDraws two_valued_draws(const Matrix& W, double low, double high);
// two_valued_draws(rademacher_draws(rows, draws, rng), −1, 1) from the same random bits, without
// forming the rows x (1 + draws) matrix of doubles (at the default setting 16 MB of first-touched pages).
TwoValuedDraws rademacher_patterns(Index rows, Index draws, RandomStream& rng);

// wᵀHw for every draw w, H symmetric and only its upper triangle read (i <= j), with no product by W:
// for each pair of row blocks a <= c, a table of s_pᵀ H_ac s_q over every pattern pair (p, q) (64 x 64
// values, built one addition per entry), then each draw adds the entry at its own patterns (with its
// sign, for flipped patterns); the sum over blocks is wᵀHw. One look-up per block pair and draw instead
// of 36 to 49 multiply-adds, and as exact as the product (the same double sums in another order). Row
// blocks run on context.threads() threads and their sums are added in block order, so results never
// depend on the thread count.
Vector quadratic_forms(const Matrix& H, const TwoValuedDraws& W, const Context& context);

// The simulated statistics per draw (n the sample sizes, K0 the pooled kernel matrix with a zero
// diagonal, a a labelling): the unbiased MMD² of the labelling,
// aᵀK0a / (n1(n1−1)) + (1 − a)ᵀK0(1 − a) / (n2(n2−1)) − 2 aᵀK0(1 − a) / (n1 n2).
double labelled_mmd2(double aKa, double aK1, double oneK1, Index n1, Index n2);

// The wild bootstrap's H(i, j) = k(x_i, x_j) + k(y_i, y_j) − k(x_i, y_j) − k(y_i, x_j) on and above the
// diagonal (what quadratic_forms reads; the diagonal 0; below it H is left as it was), from the distance
// matrices and Dyx = Dxyᵀ: column by column on the context's threads, each entry on its own.
void wild_bootstrap_mmd_matrix(const AggregateKernel& k, double lambda, const Matrix& Dxx, const Matrix& Dyy,
                               const Matrix& Dxy, const Matrix& Dyx, Matrix& H, const Context& context);

// MMDAgg: X (n1 x D) against Y (n2 x D), n1, n2 >= 2. The wild bootstrap when n1 = n2 (and not
// options.permutations), on H_ij = k(x_i, x_j) + k(y_i, y_j) − k(x_i, y_j) − k(y_i, x_j), i ≠ j; the
// statistic Σ_{i≠j} H_ij / (n(n−1)). Permutations otherwise, on the pooled kernel matrix; the
// statistic the unbiased MMD². ConfigError / DataError naming the option or the sample (`where`).
AggregatedTest mmd_agg(const Matrix& X, const Matrix& Y, const AggregateOptions& options, RandomStream& rng,
                       const Context& context);

// HSICAgg: paired rows of X (n x Dx) and Y (n x Dy), n >= 4. The rows are split into halves (an odd
// last row is left out): with x, x' the halves of X and y, y' those of Y, N = ⌊n/2⌋ pairs,
// h_X(i, j) = k(x_i, x_j) − k(x_i, x'_j) − k(x'_i, x_j) + k(x'_i, x'_j), h_Y the same, and the statistic
// Σ_{i≠j} h_X h_Y / (N(N−1)) with its wild bootstrap (the complete form of Schrab et al.'s HSICAggInc).
// Gaussian kernels exp(−‖·‖²/λ²), the collection every pair of hsicagg_bandwidths of X and of Y (Y's
// outer); uniform weights.
AggregatedTest hsic_agg(const Matrix& X, const Matrix& Y, const AggregateOptions& options, RandomStream& rng,
                        const Context& context);

// KSDAgg: rows X (n x D) of the sample and S (n x D) the model's score ∇ log p at them, n >= 2. The
// Stein kernel of the IMQ kernel (1 + ‖x − y‖²/λ²)^(−1/2), the statistic the U-statistic
// Σ_{i≠j} h_ij / (n(n−1)) with its wild bootstrap, bandwidths ksdagg_bandwidths.
AggregatedTest ksd_agg(const Matrix& X, const Matrix& S, const AggregateOptions& options, RandomStream& rng,
                       const Context& context);

}  // namespace kef
