#include "fssd_evaluator.hpp"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "fssd.hpp"
#include "fssd_power.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "stein_common.hpp"

namespace kef::stein {

namespace {

constexpr Index kDkefLocations = 100;      // DKEF's protocol (docs/math.md §8)
constexpr Index kOptimizedLocations = 10;  // kgof's experiments use J ≤ 10: optimised locations overfit less

std::vector<KeySpec> location_keys(bool relative) {
  std::vector<std::string> modes = {"dkef", "given"};
  if (!relative) modes.push_back("optimized");
  return {
      KeySpec::string("locations", "how the test locations and bandwidth are chosen", std::string("dkef"))
          .one_of(modes),
      KeySpec::integer("J", relative
                                ? "number of test locations (default 100 with dkef; given: the file's rows)"
                                : "number of test locations (default 100 with dkef, 10 with optimized; "
                                  "given: the file's rows)")
          .at_least(1)
          .optional(),
      KeySpec::number("noise", "std of the Gaussian noise added to the data points chosen as locations", 0.2)
          .non_negative(),
      KeySpec::number("bandwidth", "Gaussian kernel length scale σ (default: median pairwise distance)")
          .positive()
          .optional(),
      KeySpec::string(
          "bandwidth_rule",
          "without `bandwidth` (dkef locations): how σ is chosen on the split, median (the median "
          "pairwise distance) or bkl (Bayesian kernel learning, docs/math.md §9)")
          .one_of({"median", "bkl"})
          .optional(),
      KeySpec::string("locations_file", "J x D test locations (.npy or .csv), for locations = \"given\"")
          .optional(),
      split_key(),
  };
}

std::string format(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

KeyList fssd_keys() {
  KeyList keys = location_keys(false);
  keys.push_back(KeySpec::integer("null_draws",
                                  "draws from the null Σ ω_i (χ²_1 − 1) for the p-value (0: no test)",
                                  std::int64_t{2000})
                     .non_negative());
  keys.push_back(
      KeySpec::number("train_fraction", "optimized: fraction of the split used to choose the locations", 0.2)
          .positive()
          .at_most(1.0));
  keys.push_back(KeySpec::integer("optimization_steps", "optimized: Adam steps of the power criterion",
                                  std::int64_t{100})
                     .non_negative());
  keys.push_back(
      KeySpec::number("learning_rate",
                      "optimized: Adam step size (locations in units of the initial bandwidth, log σ)", 0.05)
          .positive());
  keys.push_back(
      KeySpec::number("gamma", "optimized: regulariser γ of the criterion FSSD² / √(σ²_H1 + γ)", 1e-4)
          .positive());
  return keys;
}

KeyList relative_fssd_keys() { return location_keys(true); }

FssdEvaluator::FssdEvaluator(const Config& cfg, const BuildContext& ctx, bool relative)
    : sites_(cfg), registry_(ctx.registry), relative_(relative) {
  if (!registry_)
    throw Error(std::string(relative ? "relative_fssd" : "fssd") + ": built without a registry");
  split_ = cfg.string("split");
  mode_ = cfg.string("locations");
  noise_ = cfg.number("noise");
  if (cfg.has("J")) J_ = cfg.integer("J");
  if (cfg.has("bandwidth")) bandwidth_ = cfg.number("bandwidth");
  if (cfg.has("bandwidth_rule")) {
    if (mode_ != "dkef")
      cfg.fail("bandwidth_rule",
               "applies to locations = \"dkef\" (given locations need `bandwidth`; optimized "
               "ones start from the median and learn σ)");
    rule_ = bandwidth_rule_from_keys(bandwidth_, cfg.string("bandwidth_rule"), sites_);
  }
  if (!relative) {
    null_draws_ = cfg.integer("null_draws");
    train_fraction_ = cfg.number("train_fraction");
    steps_ = cfg.integer("optimization_steps");
    learning_rate_ = cfg.number("learning_rate");
    gamma_ = cfg.number("gamma");
    if (mode_ == "optimized" && train_fraction_ >= 1.0)
      cfg.fail("train_fraction",
               "must leave rows to test on (expected < 1, got " + format(train_fraction_) + ")");
  }
  if (cfg.has("locations_file") != (mode_ == "given"))
    cfg.fail(cfg.has("locations_file") ? "locations_file" : "locations",
             "`locations_file` goes with locations = \"given\", and only with it");
  if (mode_ == "given") {
    if (!bandwidth_) cfg.fail("bandwidth", "locations = \"given\" needs the kernel's `bandwidth`");
    std::filesystem::path path(cfg.string("locations_file"));
    // Relative paths are relative to the pipeline file, like data files.
    if (path.is_relative()) path = std::filesystem::path(cfg.source()).parent_path() / path;
    given_ = read_table(path).values;
    if (given_.rows() == 0) cfg.fail("locations_file", "the file has no rows");
    if (ctx.dim > 0 && given_.cols() != ctx.dim)
      cfg.fail("locations_file", "locations of dimension " + std::to_string(given_.cols()) +
                                     ", the data has " + std::to_string(ctx.dim));
    if (J_ && *J_ != given_.rows())
      cfg.fail("J", "J = " + std::to_string(*J_) + " but the locations file has " +
                        std::to_string(given_.rows()) + " rows");
  }
  if (ctx.rng) stream_ = ctx.rng->derive("locations");
}

Index FssdEvaluator::locations_for(Index rows) const {
  const Index J = J_.value_or(mode_ == "optimized" ? kOptimizedLocations : kDkefLocations);
  if (J > rows)
    sites_.fail(J_ ? "J" : "locations",
                "J = " + std::to_string(J) + " test locations are drawn from the data, which has only " +
                    std::to_string(rows) + " rows" + (mode_ == "optimized" ? " in its training part" : "") +
                    "; set a smaller `J`");
  return J;
}

void FssdEvaluator::check(const DataShape& data) const {
  const Index N = data.rows(split_);
  if (N == 0) sites_.fail("split", "the " + split_ + " split is empty");
  if (N < 2) sites_.fail("split", "the " + split_ + " split has " + std::to_string(N) + " row; FSSD needs 2");
  if (data.dim > 0) {
    // The rows' features (rows x J·D), their covariance and its eigenvectors ((J·D)² each) and the
    // null's draws, before any is formed.
    const Index J = mode_ == "given" ? given_.rows()
                                     : J_.value_or(mode_ == "optimized" ? kOptimizedLocations : kDkefLocations);
    const double JD = static_cast<double>(J) * static_cast<double>(data.dim);
    require_memory(8.0 * (2.0 * static_cast<double>(N) * JD + 3.0 * JD * JD + static_cast<double>(null_draws_)),
                   sites_.where(J_ ? "J" : "null_draws"), "the features and their covariance (J, the split's rows)");
  }
  if (mode_ == "given") {
    if (data.dim > 0 && given_.cols() != data.dim)
      sites_.fail("locations_file", "locations of dimension " + std::to_string(given_.cols()) +
                                        ", the data has " + std::to_string(data.dim));
  } else if (mode_ == "optimized") {
    // The same arithmetic as evaluate(): the part that chooses the locations, and the rest.
    const Index n_train = static_cast<Index>(std::llround(train_fraction_ * static_cast<double>(N)));
    if (n_train < 2 || N - n_train < 2)
      sites_.fail("train_fraction", "splits the " + std::to_string(N) + " rows into " +
                                        std::to_string(n_train) + " to optimise and " +
                                        std::to_string(N - n_train) + " to test; each needs 2");
    (void)locations_for(n_train);
  } else {
    (void)locations_for(N);
  }
}

namespace {

// J distinct rows of X plus N(0, noise²) noise (DKEF's protocol).
Matrix random_locations(const Matrix& X, Index J, double noise, RandomStream& rng) {
  Matrix V = random_rows(X, J, rng);
  if (noise > 0.0) V += noise * rng.normal_matrix(J, X.cols());
  return V;
}

Matrix take_rows(const Matrix& X, const std::vector<Index>& rows, Index begin, Index end) {
  Matrix out(end - begin, X.cols());
  for (Index i = begin; i < end; ++i) out.row(i - begin) = X.row(rows[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace

EvaluationResult FssdEvaluator::evaluate(const EvalInput& in) {
  const std::string name = relative_ ? "relative_fssd" : "fssd";
  const Matrix& X = evaluation_rows(in, split_, sites_, name, 2);
  if (relative_ && !in.other)
    sites_.fail("against", "relative_fssd compares two models: set `against = \"NAME\"`");
  if (mode_ == "given" && given_.cols() != X.cols())
    sites_.fail("locations_file", "locations of dimension " + std::to_string(given_.cols()) +
                                      ", the data has " + std::to_string(X.cols()));
  auto what = [&](const std::string& model) {
    return name + ": the score of model " + model + " on the " + split_ + " split";
  };
  const Matrix S = checked_score_all(in.model, X, in.context, what(in.model_name));
  RandomStream locations_rng = stream_ ? *stream_ : in.context.rng().derive("locations");

  EvaluationResult r;
  Matrix V, X_part, S_part;  // the test part of an optimised split
  const Matrix* X_test = &X;
  const Matrix* S_test = &S;
  double sigma = 0.0;
  KernelPtr kernel;
  if (mode_ == "optimized") {
    // kgof: choose locations on a random training part, test on the disjoint rest.
    const Index N = X.rows();
    const Index n_train = static_cast<Index>(std::llround(train_fraction_ * static_cast<double>(N)));
    if (n_train < 2 || N - n_train < 2)
      sites_.fail("train_fraction", "splits the " + std::to_string(N) + " rows into " +
                                        std::to_string(n_train) + " to optimise and " +
                                        std::to_string(N - n_train) + " to test; each needs 2");
    std::vector<Index> perm(static_cast<std::size_t>(N));
    for (Index i = 0; i < N; ++i) perm[static_cast<std::size_t>(i)] = i;
    for (Index i = N - 1; i > 0; --i)  // Fisher–Yates with kef's own integer draws (portable)
      std::swap(perm[static_cast<std::size_t>(i)],
                perm[static_cast<std::size_t>(locations_rng.uniform_int(static_cast<std::uint64_t>(i + 1)))]);
    const Matrix X_train = take_rows(X, perm, 0, n_train), S_train = take_rows(S, perm, 0, n_train);
    X_part = take_rows(X, perm, n_train, N);
    S_part = take_rows(S, perm, n_train, N);
    X_test = &X_part;
    S_test = &S_part;
    const Index J = locations_for(n_train);
    const double sigma0 = bandwidth_.value_or(median_pairwise_distance(X_train));
    if (!(sigma0 > 0.0))
      sites_.fail("bandwidth", "the median distance of the training part is 0; set `bandwidth`");
    kernel = make_gaussian_kernel(*registry_, sigma0);
    PowerOptions opt{gamma_, steps_, learning_rate_};
    const OptimizedLocations best =
        optimize_fssd_locations(*kernel, random_locations(X_train, J, noise_, locations_rng), sigma0, X_train,
                                S_train, opt, in.context, &in.context.progress());
    V = best.V;
    sigma = best.bandwidth;
    r.notes.push_back("locations and bandwidth optimised on " + std::to_string(n_train) +
                      " rows (power criterion " + format(best.initial_criterion) + " -> " +
                      format(best.final_criterion) + "), tested on the other " + std::to_string(N - n_train));
  } else {
    if (mode_ == "given") {
      V = given_;
    } else {
      V = random_locations(X, locations_for(X.rows()), noise_, locations_rng);
    }
    std::string how;
    sigma =
        stein_bandwidth(bandwidth_, rule_, X, relative_ ? "relative_fssd" : "fssd", sites_, in.context, &how);
    r.notes.push_back("bandwidth: " + how);
    kernel = make_gaussian_kernel(*registry_, sigma);
  }

  if (relative_) {
    const Matrix S_q = checked_score_all(*in.other, X, in.context, what(in.other_name));
    const RelativeFssdResult rel = relative_fssd_test(*kernel, V, X, S, S_q, in.context);
    r.metrics = {{"relative_fssd_statistic", rel.statistic},
                 {"relative_fssd_pvalue", rel.pvalue},
                 {"relative_fssd_fssd2", rel.fssd2_p},
                 {"relative_fssd_fssd2_against", rel.fssd2_q},
                 {"relative_fssd_bandwidth", sigma},
                 {"relative_fssd_locations", static_cast<double>(V.rows())}};
    if (rel.sigma == 0.0)
      r.notes.push_back("the two models have identical FSSD features: the p-value is not informative");
    r.summary = "relative_fssd against " + in.other_name + ": statistic " + format(rel.statistic) +
                ", p-value " + format(rel.pvalue) + ": " +
                relative_fssd_verdict(rel.pvalue, kRelativeFssdLevel, in.model_name, in.other_name);
    return r;
  }
  RandomStream null_rng = in.context.rng().derive("null");
  const FssdResult res = fssd_test(*kernel, V, *X_test, *S_test, null_draws_, null_rng, in.context);
  r.metrics.emplace_back("fssd2", res.fssd2);
  if (null_draws_ > 0) r.metrics.emplace_back("fssd_pvalue", res.pvalue);
  r.metrics.emplace_back("fssd_bandwidth", sigma);
  r.metrics.emplace_back("fssd_locations", static_cast<double>(V.rows()));
  r.summary = "fssd: FSSD² " + format(res.fssd2) + (null_draws_ > 0 ? ", p-value " + format(res.pvalue) : "");
  return r;
}

}  // namespace kef::stein
