// The Bayesian witness function (kef/bayesian_witness.hpp, docs/math.md §9.5) against its brute-force
// twins: the dense joint Gaussian of (μ_P, μ_Q) mapped by [I, −I] for a fixed ℓ, a scan of the
// mixture's CDF for the band integrated over ℓ; and `kef test witness` (CSV, PNG, JSON, bad input).
#include "kef/bayesian_witness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kef/bandwidth_rule.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "kernel_embedding.hpp"
#include "test_support.hpp"

namespace kef::bayesian_witness_test {
namespace {

namespace fs = std::filesystem;

Matrix gauss(const Matrix& A, const Matrix& B, double s) {
  Matrix K(A.rows(), B.rows());
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < B.rows(); ++j)
      K(i, j) = std::exp(-(A.row(i) - B.row(j)).squaredNorm() / (2 * s * s));
  return K;
}

double phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The posterior mean and covariance of one embedding at the points, explicit inverse (docs/math.md §9.1).
void dense_posterior(const Matrix& S, const Matrix& G, double ell, double tau2, Vector& mean, Matrix& cov) {
  const Index n = S.rows();
  const Matrix Ainv = (gauss(S, S, std::sqrt(2.0) * ell) + (tau2 / n) * Matrix::Identity(n, n)).inverse();
  const Vector muhat = gauss(S, S, ell).colwise().mean().transpose();
  const Matrix Rs = gauss(S, G, std::sqrt(2.0) * ell);
  mean = Rs.transpose() * Ainv * muhat;
  cov = gauss(G, G, std::sqrt(2.0) * ell) - Rs.transpose() * Ainv * Rs;
}

struct Samples {
  Matrix X, Y, G;
};

Samples tiny(Index d = 1) {
  RandomStream rng(3, "witness");
  Samples s;
  s.X = rng.normal_matrix(12, d);
  s.Y = (1.5 * rng.normal_matrix(9, d).array() + 0.4).matrix();
  s.G = 3.0 * rng.normal_matrix(7, d);
  return s;
}

TEST(BayesianWitness, MeanIsTheDifferenceOfTheTwoEmbeddingPosteriorMeans) {
  const Samples s = tiny(2);
  WitnessOptions o;
  o.tau2 = 0.4;
  const WitnessPosterior w = bayesian_witness(s.X, s.Y, s.G, 0.8, o, Context(0, 1));
  const Vector want =
      BayesianKernelEmbedding(s.X, 0.8, 0.4).mean(s.G) - BayesianKernelEmbedding(s.Y, 0.8, 0.4).mean(s.G);
  ASSERT_EQ(w.mean.size(), 7);
  for (Index j = 0; j < 7; ++j) EXPECT_EQ(w.mean[j], want[j]);
  EXPECT_EQ(w.lengthscales, 1);
}

// For a fixed ℓ: the dense joint Gaussian of (μ_P(G), μ_Q(G)) (block diagonal: the samples are
// independent) mapped by [I, −I]; the band's ends must sit at the 10% and 90% points of N(mean, sd²).
TEST(BayesianWitness, FixedLengthscaleBandMatchesTheDenseJointGaussian) {
  const Samples s = tiny();
  const double ell = 0.6, tau2 = 0.7;
  Vector mp, mq;
  Matrix cp, cq;
  dense_posterior(s.X, s.G, ell, tau2, mp, cp);
  dense_posterior(s.Y, s.G, ell, tau2, mq, cq);
  const Index P = s.G.rows();
  Matrix joint = Matrix::Zero(2 * P, 2 * P);
  joint.topLeftCorner(P, P) = cp;
  joint.bottomRightCorner(P, P) = cq;
  Vector jm(2 * P);
  jm << mp, mq;
  Matrix A(P, 2 * P);
  A << Matrix::Identity(P, P), -Matrix::Identity(P, P);
  const Vector mean = A * jm;
  const Matrix cov = A * joint * A.transpose();
  WitnessOptions o;
  o.tau2 = tau2;
  const WitnessPosterior w = bayesian_witness(s.X, s.Y, s.G, ell, o, Context(0, 1));
  for (Index j = 0; j < P; ++j) {
    const double sd = std::sqrt(cov(j, j));
    EXPECT_NEAR(w.mean[j], mean[j], 1e-10);
    EXPECT_NEAR(w.sd[j], sd, 1e-9);
    EXPECT_NEAR(phi((w.lower[j] - mean[j]) / sd), 0.1, 1e-9) << j;
    EXPECT_NEAR(phi((w.upper[j] - mean[j]) / sd), 0.9, 1e-9) << j;
  }
  o.level = 0.5;
  const WitnessPosterior h = bayesian_witness(s.X, s.Y, s.G, ell, o, Context(0, 1));
  for (Index j = 0; j < P; ++j) EXPECT_NEAR(phi((h.upper[j] - h.mean[j]) / h.sd[j]), 0.75, 1e-9);
}

// Integrated over ℓ: the band is the mixture's quantiles. The twin scans the mixture CDF (built from
// the dense posteriors at each distinct ℓ, weighted by how often it was drawn) on a fine grid.
TEST(BayesianWitness, MixtureBandMatchesAScanOfTheMixtureCdf) {
  const Samples s = tiny();
  const double tau2 = 1.0;
  Vector draws(6);
  draws << std::log(0.3), std::log(0.9), std::log(0.3), std::log(2.0), std::log(0.9), std::log(0.3);
  const std::vector<std::pair<double, double>> atoms = {{0.3, 0.5}, {0.9, 2.0 / 6}, {2.0, 1.0 / 6}};
  WitnessOptions o;
  const WitnessPosterior w = bayesian_witness(s.X, s.Y, s.G, draws, o, Context(0, 1));
  EXPECT_EQ(w.lengthscales, 6);
  const Index P = s.G.rows();
  std::vector<Vector> means, sds;
  for (const auto& [ell, weight] : atoms) {
    Vector mp, mq;
    Matrix cp, cq;
    dense_posterior(s.X, s.G, ell, tau2, mp, cp);
    dense_posterior(s.Y, s.G, ell, tau2, mq, cq);
    means.push_back(mp - mq);
    sds.push_back((cp + cq).diagonal().cwiseSqrt());
  }
  for (Index j = 0; j < P; ++j) {
    double mean = 0, second = 0;
    for (std::size_t k = 0; k < atoms.size(); ++k) {
      mean += atoms[k].second * means[k][j];
      second += atoms[k].second * (sds[k][j] * sds[k][j] + means[k][j] * means[k][j]);
    }
    EXPECT_NEAR(w.mean[j], mean, 1e-10);
    EXPECT_NEAR(w.sd[j], std::sqrt(second - mean * mean), 1e-8);
    auto cdf = [&](double x) {
      double F = 0;
      for (std::size_t k = 0; k < atoms.size(); ++k)
        F += atoms[k].second * phi((x - means[k][j]) / sds[k][j]);
      return F;
    };
    // The first scan point whose CDF reaches the tail probability, on a grid of spacing h.
    const double lo = mean - 12 * w.sd[j], hi = mean + 12 * w.sd[j], h = (hi - lo) / 400000;
    double q10 = NAN, q90 = NAN;
    for (double x = lo; x <= hi; x += h) {
      if (std::isnan(q10) && cdf(x) >= 0.1) q10 = x;
      if (std::isnan(q90) && cdf(x) >= 0.9) q90 = x;
    }
    EXPECT_NEAR(w.lower[j], q10, 2 * h) << j;
    EXPECT_NEAR(w.upper[j], q90, 2 * h) << j;
    EXPECT_LT(w.lower[j], w.upper[j]);
  }
}

TEST(BayesianWitness, OneRepeatedDrawIsTheFixedLengthscaleWitness) {
  const Samples s = tiny();
  const WitnessOptions o;
  const WitnessPosterior fixed = bayesian_witness(s.X, s.Y, s.G, 0.7, o, Context(0, 1));
  const WitnessPosterior mix =
      bayesian_witness(s.X, s.Y, s.G, Vector::Constant(5, std::log(0.7)), o, Context(0, 1));
  for (Index j = 0; j < s.G.rows(); ++j) {
    EXPECT_NEAR(mix.mean[j], fixed.mean[j], 1e-15);
    EXPECT_NEAR(mix.sd[j], fixed.sd[j], 1e-15);
    EXPECT_NEAR(mix.lower[j], fixed.lower[j], 1e-12);
    EXPECT_NEAR(mix.upper[j], fixed.upper[j], 1e-12);
  }
}

TEST(BayesianWitness, IdenticalSamplesGiveZeroMeanAndABandAroundZero) {
  const Samples s = tiny();
  const WitnessPosterior w = bayesian_witness(s.X, s.X, s.G, 0.5, WitnessOptions{}, Context(0, 1));
  for (Index j = 0; j < s.G.rows(); ++j) {
    EXPECT_EQ(w.mean[j], 0.0);
    EXPECT_LT(w.lower[j], 0.0);
    EXPECT_GT(w.upper[j], 0.0);
  }
}

TEST(BayesianWitness, MixtureDoesNotDependOnTheThreadCount) {
  const Samples s = tiny();
  RandomStream rng(5, "draws");
  const Vector draws = (0.3 * rng.normal_matrix(40, 1).array() - 0.5).matrix().col(0);
  const WitnessPosterior a = bayesian_witness(s.X, s.Y, s.G, draws, WitnessOptions{}, Context(0, 1));
  const WitnessPosterior b = bayesian_witness(s.X, s.Y, s.G, draws, WitnessOptions{}, Context(0, 3));
  EXPECT_TRUE(a.mean == b.mean);
  EXPECT_TRUE(a.sd == b.sd);
  EXPECT_TRUE(a.lower == b.lower);
  EXPECT_TRUE(a.upper == b.upper);
}

// ℓ by BKL on the pooled sample: the mode is bkl_bandwidth's on the pooled rows with the same stream,
// and the witness is the fixed-ℓ one there; with HMC, the mixture over bkl_bandwidth's draws.
TEST(BayesianWitness, BklUsesThePooledSampleAndItsDraws) {
  RandomStream rng(8, "witness-bkl");
  const Matrix X = rng.normal_matrix(60, 1), Y = (rng.normal_matrix(60, 1).array() * 1.3).matrix();
  Matrix G(21, 1);
  for (Index i = 0; i < 21; ++i) G(i, 0) = -3.0 + 0.3 * static_cast<double>(i);
  Matrix pooled(120, 1);
  pooled << X, Y;
  BklOptions b;
  b.landmarks = 12;
  const Context c(4, 1);
  const LearnedWitness lw = bayesian_witness_bkl(X, Y, G, b, WitnessOptions{}, c);
  const BklResult want = bkl_bandwidth(pooled, b, c.child("bkl"));
  EXPECT_EQ(lw.bkl.sigma, want.sigma);
  EXPECT_EQ(lw.bkl.rows, 108);
  const WitnessPosterior at_mode = bayesian_witness(X, Y, G, want.sigma, WitnessOptions{}, c);
  EXPECT_TRUE(lw.witness.mean == at_mode.mean);
  EXPECT_TRUE(lw.witness.upper == at_mode.upper);

  b.method = BklMethod::Hmc;
  b.hmc.warmup = 50;
  b.hmc.samples = 50;
  const LearnedWitness lh = bayesian_witness_bkl(X, Y, G, b, WitnessOptions{}, c);
  ASSERT_EQ(lh.bkl.draws.size(), 200);
  EXPECT_EQ(lh.witness.lengthscales, 200);
  const WitnessPosterior mix = bayesian_witness(X, Y, G, lh.bkl.draws, WitnessOptions{}, c);
  EXPECT_TRUE(lh.witness.mean == mix.mean);
  EXPECT_TRUE(lh.witness.lower == mix.lower);
}

TEST(BayesianWitness, RefusesBadInputNamingIt) {
  const Samples s = tiny();
  const Samples t = tiny(2);
  WitnessOptions o;
  o.where = "here";
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.kind()) + ": " + e.what();
    }
    return std::string("no error");
  };
  const Context c(0, 1);
  std::string m = message([&] { bayesian_witness(s.X, t.Y, s.G, 1.0, o, c); });
  EXPECT_TRUE(test::contains(m, "here: Y has 2 columns, X has 1")) << m;
  m = message([&] { bayesian_witness(s.X, s.Y, t.G, 1.0, o, c); });
  EXPECT_TRUE(test::contains(m, "the points have 2 columns")) << m;
  m = message([&] { bayesian_witness(s.X, s.Y, Matrix(0, 1), 1.0, o, c); });
  EXPECT_TRUE(test::contains(m, "no points")) << m;
  m = message([&] { bayesian_witness(s.X, s.Y, s.G, 0.0, o, c); });
  EXPECT_TRUE(test::contains(m, "length scale must be a positive number")) << m;
  m = message([&] { bayesian_witness(s.X, s.Y, s.G, Vector(0), o, c); });
  EXPECT_TRUE(test::contains(m, "no draws")) << m;
  o.level = 1.0;
  m = message([&] { bayesian_witness(s.X, s.Y, s.G, 1.0, o, c); });
  EXPECT_TRUE(test::contains(m, "level must be in (0, 1)")) << m;
  // The dimension check comes before BKL runs.
  o.level = 0.8;
  m = message([&] { bayesian_witness_bkl(s.X, t.Y, s.G, BklOptions{}, o, c); });
  EXPECT_TRUE(test::contains(m, "Y has 2 columns")) << m;
}

// `kef test witness`: the CSV holds the framework's numbers, the PNG is written, --json reports the
// bandwidth and the fraction of points where the band excludes 0.
struct CliFiles {
  fs::path dir, x, y, y2, g0;
  Matrix X, Y;
};

const CliFiles& cli_files() {
  static const CliFiles f = [] {
    CliFiles f;
    f.dir = test::temp_dir("witness-cli");
    RandomStream rng(2, "witness-cli");
    f.X = rng.normal_matrix(40, 1);
    f.Y = (0.5 * rng.normal_matrix(30, 1).array() + 0.3).matrix();
    f.x = f.dir / "x.npy";
    f.y = f.dir / "y.npy";
    f.y2 = f.dir / "y2.npy";
    write_npy(f.x, f.X);
    write_npy(f.y, f.Y);
    write_npy(f.y2, rng.normal_matrix(30, 2));
    f.g0 = test::write_file(f.dir, "g0.csv", "x\n");
    return f;
  }();
  return f;
}

TEST(KefTestWitness, WritesTheFrameworksNumbersAsCsvAndAFigure) {
  const CliFiles& f = cli_files();
  const fs::path csv = f.dir / "w.csv", png = f.dir / "w.png";
  const auto r = test::kef_cmd("test witness " + f.x.string() + " " + f.y.string() +
                               " --grid=-3:3:25 --kernel-bandwidth 0.7 --json --out " + csv.string() +
                               " --plot " + png.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["bandwidth"]["sigma"].get<double>(), 0.7);
  EXPECT_EQ(j["points"].get<int>(), 25);
  Matrix G(25, 1);
  for (Index i = 0; i < 25; ++i) G(i, 0) = -3.0 + 6.0 * static_cast<double>(i) / 24.0;
  const WitnessPosterior w = bayesian_witness(f.X, f.Y, G, 0.7, WitnessOptions{}, Context(0, 1));
  const TableData t = read_table(csv);
  ASSERT_EQ(t.columns, (std::vector<std::string>{"x", "mean", "lower", "upper", "sd"}));
  ASSERT_EQ(t.values.rows(), 25);
  Index excludes = 0;
  for (Index i = 0; i < 25; ++i) {
    EXPECT_EQ(t.values(i, 0), G(i, 0));
    EXPECT_EQ(t.values(i, 1), w.mean[i]);
    EXPECT_EQ(t.values(i, 2), w.lower[i]);
    EXPECT_EQ(t.values(i, 3), w.upper[i]);
    excludes += (w.lower[i] > 0 || w.upper[i] < 0);
  }
  EXPECT_EQ(j["band_excludes_zero"].get<double>(), static_cast<double>(excludes) / 25.0);
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  // BKL: the command's choice is bkl_bandwidth's on the pooled rows (the stream of the command's
  // "witness" child), reported with its profile.
  const auto k = test::kef_cmd("test witness " + f.x.string() + " " + f.y.string() +
                               " --grid=-3:3:11 --kernel-bandwidth bkl --json");
  ASSERT_EQ(k.status, 0) << k.output;
  const nlohmann::json jb = nlohmann::json::parse(k.output.substr(k.output.find('{')));
  Matrix pooled(70, 1);
  pooled << f.X, f.Y;
  BklOptions bo;
  bo.landmarks = bkl_landmarks(70, 1);
  const BklResult want = bkl_bandwidth(pooled, bo, Context(0, 1).child("witness").child("bkl"));
  EXPECT_EQ(jb["bandwidth"]["sigma"].get<double>(), want.sigma);
  const nlohmann::json& prof = jb["bandwidth"]["bkl"]["profile"];
  ASSERT_EQ(prof["lengthscale"].size(), want.profile.lengthscale.size());
  for (std::size_t i = 0; i < want.profile.lengthscale.size(); ++i) {
    EXPECT_EQ(prof["lengthscale"][i].get<double>(), want.profile.lengthscale[i]);
    if (std::isfinite(want.profile.log_likelihood[i]))
      EXPECT_EQ(prof["log_likelihood"][i].get<double>(), want.profile.log_likelihood[i]);
    else
      EXPECT_TRUE(prof["log_likelihood"][i].is_null());
  }
  // The median heuristic and BKL (mode and integrated over ℓ) run end to end.
  for (const std::string bw : {"median", "bkl", "bkl --integrate-lengthscale"}) {
    const auto b = test::kef_cmd("test witness " + f.x.string() + " " + f.y.string() +
                                 " --grid=-3:3:11 --kernel-bandwidth " + bw);
    EXPECT_EQ(b.status, 0) << bw << ": " << b.output;
    EXPECT_TRUE(test::contains(b.output, "band excludes 0 at")) << b.output;
  }
}

// Points from a file, in any dimension: the CSV names the coordinates x1..xD; a figure is 1-D only.
TEST(KefTestWitness, PointsFromAFileInTwoDimensions) {
  const CliFiles& f = cli_files();
  RandomStream rng(6, "witness-2d");
  const Matrix X = rng.normal_matrix(25, 2), Y = rng.normal_matrix(20, 2), G = rng.normal_matrix(4, 2);
  write_npy(f.dir / "x2.npy", X);
  write_npy(f.dir / "y2b.npy", Y);
  write_npy(f.dir / "g2.npy", G);
  const fs::path csv = f.dir / "w2.csv";
  const std::string args = "test witness " + (f.dir / "x2.npy").string() + " " +
                           (f.dir / "y2b.npy").string() + " --grid " + (f.dir / "g2.npy").string() +
                           " --kernel-bandwidth 0.9";
  const auto r = test::kef_cmd(args + " --out " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const TableData t = read_table(csv);
  ASSERT_EQ(t.columns, (std::vector<std::string>{"x1", "x2", "mean", "lower", "upper", "sd"}));
  const WitnessPosterior w = bayesian_witness(X, Y, G, 0.9, WitnessOptions{}, Context(0, 1));
  for (Index i = 0; i < 4; ++i) {
    EXPECT_EQ(t.values(i, 0), G(i, 0));
    EXPECT_EQ(t.values(i, 1), G(i, 1));
    EXPECT_EQ(t.values(i, 2), w.mean[i]);
    EXPECT_EQ(t.values(i, 5), w.sd[i]);
  }
  const auto p = test::kef_cmd(args + " --plot " + (f.dir / "w2.png").string());
  EXPECT_EQ(p.status, 2) << p.output;
  EXPECT_TRUE(test::contains(p.output, "--plot")) << p.output;
  const auto g = test::kef_cmd(args.substr(0, args.find(" --grid")) + " --grid 0:1:5");
  EXPECT_EQ(g.status, 2) << g.output;
  EXPECT_TRUE(test::contains(g.output, "a:b:n is a 1-D grid")) << g.output;
}

TEST(KefTestWitness, BadInputExitsTwoNamingTheArgument) {
  const CliFiles& f = cli_files();
  const std::string xy = "test witness " + f.x.string() + " " + f.y.string();
  struct Case {
    std::string args, needle;
  };
  const std::vector<Case> cases = {
      {"test witness " + f.x.string() + " " + f.y2.string() + " --grid 0:1:5", "Y ("},
      {xy + " --grid 0:1:0", "--grid"},
      {xy + " --grid 0:1:1", "--grid"},
      {xy + " --grid 1:0:5", "expected a < b"},
      {xy + " --grid 0:1", "--grid: expected a:b:n"},
      {xy + " --grid " + f.g0.string(), "--grid"},
      {xy + " --grid 0:1:5 --kernel-bandwidth=-1", "--kernel-bandwidth"},
      {xy + " --grid 0:1:5 --integrate-lengthscale", "--integrate-lengthscale"},
  };
  for (const Case& c : cases) {
    const auto r = test::kef_cmd(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(test::contains(r.output, c.needle)) << c.args << "\n" << r.output;
  }
  // Y with 2 columns: the message names both files' dimensions.
  const auto r = test::kef_cmd("test witness " + f.x.string() + " " + f.y2.string() + " --grid 0:1:5");
  EXPECT_TRUE(test::contains(r.output, "2 columns, but X")) << r.output;
}

}  // namespace
}  // namespace kef::bayesian_witness_test
