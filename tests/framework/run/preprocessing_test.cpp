// DKEF's real-data preprocessing in the [data] table: `exclude`, `dequantize`,
// `drop_correlated`, `statistics_rows` and the split rule "dkef", each against values computed here
// directly from the definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kef/config.hpp"
#include "kef/error.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// Writes `X` as a CSV with the given header and returns a [data] table reading it with `keys`.
Config data_table(const fs::path& dir, const std::vector<std::string>& header, const Matrix& X,
                  const std::string& keys) {
  std::ostringstream csv;
  csv.precision(17);
  for (std::size_t c = 0; c < header.size(); ++c) csv << (c ? "," : "") << header[c];
  csv << "\n";
  for (Index n = 0; n < X.rows(); ++n) {
    for (Index d = 0; d < X.cols(); ++d) csv << (d ? "," : "") << X(n, d);
    csv << "\n";
  }
  std::ofstream(dir / "data.csv") << csv.str();
  const fs::path toml = dir / "p.toml";
  std::ofstream(toml) << "[data]\ntype = \"file\"\npath = \"data.csv\"\n" << keys << "\n";
  return Config::parse_file(toml.string()).table("data");
}

Dataset prepare(const Config& data, std::uint64_t seed = 3) {
  return prepare_dataset(test::plugin_registry(), data, seed);
}

Matrix normal_rows(Index n, Index d, const std::string& tag) {
  RandomStream rng(11, tag);
  return rng.normal_matrix(n, d);
}

TEST(Preprocessing, ExcludeRemovesNamedColumnsFromEverySplit) {
  const fs::path dir = test::temp_dir("pre-exclude");
  const Matrix X = normal_rows(100, 3, "exclude");
  const Dataset d =
      prepare(data_table(dir, {"a", "b", "quality"}, X, "exclude = [\"quality\"]\nshuffle = false"));
  ASSERT_EQ(d.dim(), 2);
  EXPECT_EQ(d.columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d.preprocessing.excluded, (std::vector<std::string>{"quality"}));
  EXPECT_EQ(d.train.rows() + d.test.rows(), 100);
  // shuffle = false: the training rows are the first rows, without column 2.
  EXPECT_EQ(d.train.row(0), X.row(0).head(2));
  EXPECT_EQ(d.test.row(d.test.rows() - 1), X.row(99).head(2));

  try {
    prepare(data_table(dir, {"a", "b", "quality"}, X, "exclude = [\"qualty\"]"));
    FAIL() << "an unknown column must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no column \"qualty\" in the data (its columns: a, b, quality)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("p.toml"), std::string::npos) << e.what();
  }
  EXPECT_THROW(prepare(data_table(dir, {"a", "b", "quality"}, X, "exclude = [\"a\", \"b\", \"quality\"]")),
               ConfigError);
  EXPECT_THROW(prepare(data_table(dir, {"a", "b", "quality"}, X, "exclude = [\"a\", \"a\"]")), ConfigError);
}

TEST(Preprocessing, DkefSplitRuleAndTheRoundingOfFractions) {
  const fs::path dir = test::temp_dir("pre-split");
  const Matrix X = normal_rows(1599, 2, "split");  // RedWine's row count
  // DKEF: test = floor(1599/10) = 159, validation = min(floor(1440/10), 1000) = 144.
  const Dataset dkef =
      prepare(data_table(dir, {"a", "b"}, X, "split = { rule = \"dkef\" }\nshuffle = false"));
  EXPECT_EQ(dkef.test.rows(), 159);
  EXPECT_EQ(dkef.validation.rows(), 144);
  EXPECT_EQ(dkef.train.rows(), 1599 - 159 - 144);
  EXPECT_EQ(dkef.preprocessing.split_rule, "dkef");
  // The last rows are the test set, the ones before them validation (shuffle = false).
  EXPECT_EQ(dkef.test.row(0), X.row(1599 - 159));
  EXPECT_EQ(dkef.validation.row(0), X.row(1599 - 159 - 144));
  // The validation cap: 20000 rows give 2000 test rows and 1000 (not 1800) validation rows.
  const Dataset big =
      prepare(data_table(dir, {"a", "b"}, normal_rows(20000, 2, "big"), "split = { rule = \"dkef\" }"));
  EXPECT_EQ(big.test.rows(), 2000);
  EXPECT_EQ(big.validation.rows(), 1000);
  // Fractions of the "counts" rule round to the nearest row: 0.1 of 1599 is 160.
  const Dataset counts = prepare(data_table(dir, {"a", "b"}, X, "split = { test = 0.1 }"));
  EXPECT_EQ(counts.test.rows(), 160);
  EXPECT_EQ(counts.preprocessing.split_rule, "counts");
  EXPECT_THROW(prepare(data_table(dir, {"a", "b"}, X, "split = { rule = \"dkef\", test = 0.2 }")),
               ConfigError);
  EXPECT_THROW(prepare(data_table(dir, {"a", "b"}, X, "split = { rule = \"maf\" }")), ConfigError);
}

TEST(Preprocessing, DequantizeAddsUniformNoiseScaledByTheMedianGap) {
  const fs::path dir = test::temp_dir("pre-dequantize");
  // Column a on the grid 2·k (gap 2); column b on {0, 1, 3, 6, 10} (gaps 1, 2, 3, 4: median 2.5).
  const double b_values[] = {0, 1, 3, 6, 10};
  Matrix X(500, 2);
  for (Index n = 0; n < 500; ++n) {
    X(n, 0) = 2.0 * static_cast<double>(n % 37);
    X(n, 1) = b_values[(n * 7) % 5];
  }
  const std::string keys = "dequantize = true\nshuffle = false\nsplit = { test = 100, validation = 50 }";
  const Dataset d = prepare(data_table(dir, {"a", "b"}, X, keys));
  ASSERT_EQ(d.preprocessing.dequantized.size(), 2u);
  EXPECT_EQ(d.preprocessing.dequantized[0].column, "a");
  EXPECT_EQ(d.preprocessing.dequantized[0].gap, 2.0);
  EXPECT_EQ(d.preprocessing.dequantized[1].gap, 2.5);
  const double gaps[] = {2.0, 2.5};
  // Every value moved by less than its column's gap; the moves look uniform on (−g, g).
  const std::pair<const Matrix*, Index> splits[] = {{&d.train, 0}, {&d.validation, 350}, {&d.test, 400}};
  for (Index c = 0; c < 2; ++c) {
    std::vector<double> u;
    for (const auto& [S, offset] : splits)
      for (Index n = 0; n < S->rows(); ++n) u.push_back(((*S)(n, c) - X(offset + n, c)) / gaps[c]);
    ASSERT_EQ(u.size(), 500u);
    double mean = 0, mean_sq = 0;
    for (double v : u) {
      EXPECT_LT(std::abs(v), 1.0);
      EXPECT_NE(v, 0.0);
      mean += v / 500.0;
      mean_sq += v * v / 500.0;
    }
    // U(−1, 1): mean 0 (sd of the mean 0.026), second moment 1/3 (sd of the estimate 0.013).
    EXPECT_NEAR(mean, 0.0, 0.1);
    EXPECT_NEAR(mean_sq, 1.0 / 3.0, 0.05);
    EXPECT_GT(*std::max_element(u.begin(), u.end()), 0.95);
    EXPECT_LT(*std::min_element(u.begin(), u.end()), -0.95);
  }
  // Seeded: the same seed gives the same values, another seed other values.
  const Dataset again = prepare(data_table(dir, {"a", "b"}, X, keys));
  EXPECT_EQ(again.train, d.train);
  EXPECT_EQ(again.test, d.test);
  const Dataset other = prepare(data_table(dir, {"a", "b"}, X, keys), 4);
  EXPECT_NE(other.train, d.train);
  // A column with one value in the training split has no gap.
  Matrix constant = X;
  constant.col(1).setConstant(1.0);
  EXPECT_THROW(prepare(data_table(dir, {"a", "b"}, constant, keys)), DataError);
}

TEST(Preprocessing, DropCorrelatedDropsTheFirstColumnOfEachCorrelatedPair) {
  const fs::path dir = test::temp_dir("pre-corr");
  const Matrix Z = normal_rows(400, 3, "corr");
  // a and b = 2a + small noise (corr > 0.99); c, and d = −c + small noise (corr < −0.99); e independent.
  Matrix X(400, 5);
  X.col(0) = Z.col(0);
  X.col(1) = 2.0 * Z.col(0) + 0.05 * Z.col(1);
  X.col(2) = Z.col(1);
  X.col(3) = -Z.col(1) + 0.05 * Z.col(2);
  X.col(4) = Z.col(2);
  const Dataset d =
      prepare(data_table(dir, {"a", "b", "c", "d", "e"}, X, "drop_correlated = 0.98\nshuffle = false"));
  EXPECT_EQ(d.columns, (std::vector<std::string>{"b", "d", "e"}));
  ASSERT_EQ(d.dim(), 3);
  ASSERT_EQ(d.preprocessing.dropped.size(), 2u);
  EXPECT_EQ(d.preprocessing.dropped[0].column, "a");
  EXPECT_EQ(d.preprocessing.dropped[0].partner, "b");
  EXPECT_GT(d.preprocessing.dropped[0].correlation, 0.98);
  EXPECT_EQ(d.preprocessing.dropped[1].column, "c");
  EXPECT_EQ(d.preprocessing.dropped[1].partner, "d");
  EXPECT_LT(d.preprocessing.dropped[1].correlation, -0.98);
  EXPECT_EQ(d.test.row(0), (Vector(3) << X(360, 1), X(360, 3), X(360, 4)).finished().transpose());
  // Brute-force twin: the correlations of the kept training columns, pair by pair, are all <= 0.98.
  for (Index i = 0; i < 3; ++i)
    for (Index j = i + 1; j < 3; ++j) {
      const Vector x = d.train.col(i).array() - d.train.col(i).mean();
      const Vector y = d.train.col(j).array() - d.train.col(j).mean();
      EXPECT_LE(std::abs(x.dot(y) / std::sqrt(x.squaredNorm() * y.squaredNorm())), 0.98);
    }
  EXPECT_THROW(prepare(data_table(dir, {"a", "b", "c", "d", "e"}, X, "drop_correlated = 1.5")), ConfigError);
}

// A column of values near 1e-200 varies (its sd is about 1e-200), though the squares of its deviations
// underflow to 0: it is standardised, not called constant. A truly constant column still is.
TEST(Preprocessing, StandardizeJudgesConstancyOnTheColumnsOwnScale) {
  const fs::path dir = test::temp_dir("pre-tiny-scale");
  Matrix X = normal_rows(200, 2, "tiny");
  const Vector tiny = X.col(1) * 1e-200;
  X.col(1) = tiny;
  const Dataset d = prepare(data_table(dir, {"a", "tiny"}, X, "standardize = true\nshuffle = false"));
  const Eigen::ArrayXd z = d.train.col(1).array();
  const double mean = z.mean(), sd = std::sqrt((z - mean).square().mean());
  EXPECT_NEAR(mean, 0.0, 1e-12);
  EXPECT_NEAR(sd, 1.0, 0.05);  // the training split's population sd is 1 on the 180 rows' statistics
  X.col(1).setConstant(1e-200);
  try {
    (void)prepare(data_table(dir, {"a", "tiny"}, X, "standardize = true"));
    ADD_FAILURE() << "a constant column was standardised";
  } catch (const DataError& e) {
    EXPECT_TRUE(test::contains(e.what(), "column tiny is constant")) << e.what();
  }
}

// `header = false` reads a CSV file's first line as data, with the columns named x0, x1, ...; without
// it such a file is refused rather than read one row short.
TEST(Preprocessing, HeaderFalseReadsEveryLineAsData) {
  const fs::path dir = test::temp_dir("pre-no-header");
  const Matrix X = normal_rows(50, 2, "no-header");
  Config refused = data_table(dir, {}, X, "shuffle = false");
  // data_table wrote an empty first line for an empty header: write the file without one.
  {
    std::ostringstream csv;
    csv.precision(17);
    for (Index n = 0; n < X.rows(); ++n) csv << X(n, 0) << "," << X(n, 1) << "\n";
    std::ofstream(dir / "data.csv") << csv.str();
  }
  try {
    (void)prepare(refused);
    ADD_FAILURE() << "a file without a header was read";
  } catch (const DataError& e) {
    EXPECT_TRUE(test::contains(e.what(), "seems to have no header row")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "header = false")) << e.what();
  }
  std::ofstream(dir / "p.toml")
      << "[data]\ntype = \"file\"\npath = \"data.csv\"\nheader = false\nshuffle = false\n"
         "exclude = [\"x0\"]\n";
  const Dataset d = prepare(Config::parse_file((dir / "p.toml").string()).table("data"));
  EXPECT_EQ(d.columns, (std::vector<std::string>{"x1"}));
  EXPECT_EQ(d.train.rows() + d.validation.rows() + d.test.rows(), 50);
  EXPECT_EQ(d.train(0, 0), X(0, 1));  // the first line is the first row
}

TEST(Preprocessing, StatisticsRowsLimitTheWhiteningRows) {
  const fs::path dir = test::temp_dir("pre-stats");
  Matrix X = normal_rows(300, 2, "stats");
  X.col(1) = X.col(1) * 3.0 + X.col(0);  // correlated, unequal scales
  X.bottomRows(150) *= 2.0;              // the later rows are wider
  const Dataset d = prepare(data_table(
      dir, {"a", "b"}, X, "whiten = true\nstatistics_rows = 100\nshuffle = false\nsplit = { test = 50 }"));
  EXPECT_EQ(d.preprocessing.statistics_rows, 100);
  // The first 100 training rows are white (mean 0, covariance I); all 250 training rows are not.
  const Matrix first = d.train.topRows(100);
  const Matrix c1 = first.rowwise() - first.colwise().mean();
  EXPECT_LT(first.colwise().mean().norm(), 1e-12);
  EXPECT_LT((c1.transpose() * c1 / 100.0 - Matrix::Identity(2, 2)).norm(), 1e-12);
  const Matrix c2 = d.train.rowwise() - d.train.colwise().mean();
  EXPECT_GT((c2.transpose() * c2 / 250.0 - Matrix::Identity(2, 2)).norm(), 0.5);
  // Without standardize or whiten the key has nothing to do.
  EXPECT_THROW(prepare(data_table(dir, {"a", "b"}, X, "statistics_rows = 100")), ConfigError);
  EXPECT_THROW(prepare(data_table(dir, {"a", "b"}, X, "whiten = true\nstatistics_rows = 1")), ConfigError);
}

// Columns in very different units (Parkinsons: variances from 1e-9 to 1e3) are not collinear: kef
// 0.3 refused them as "singular" because it compared C's eigenvalues with 1e-12 times the largest.
// The map must still be C^{-1/2}: symmetric, and whitening the training rows to 1e-9.
TEST(Preprocessing, WhitenAcceptsColumnsOfVeryDifferentScales) {
  const fs::path dir = test::temp_dir("pre-graded");
  Matrix X = normal_rows(400, 3, "graded");
  X.col(1) = 0.6 * X.col(0) + 0.8 * X.col(1);
  X.col(2) = 0.3 * X.col(1) + X.col(2);
  X.col(0) *= 3e-5;  // variance ~1e-9
  X.col(2) *= 50.0;  // variance ~3e3: C's eigenvalues spread over ~1e12
  const Dataset d =
      prepare(data_table(dir, {"a", "b", "c"}, X, "whiten = true\nshuffle = false\nsplit = { test = 50 }"));
  const Matrix c = d.train.rowwise() - d.train.colwise().mean();
  EXPECT_LT((c.transpose() * c / static_cast<double>(d.train.rows()) - Matrix::Identity(3, 3)).norm(), 1e-9);
  // The same rows whitened from their raw values: A X_c must equal the transformed rows, with A
  // symmetric positive definite (which makes it the unique ZCA map C^{-1/2}).
  const Matrix raw = X.topRows(d.train.rows());
  const Matrix raw_c = raw.rowwise() - raw.colwise().mean();
  const Matrix A = raw_c.colPivHouseholderQr().solve(c);  // c = raw_c A^T (exactly: A^T)
  EXPECT_LT((A - A.transpose()).norm() / A.norm(), 1e-8);
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Matrix>(A).eigenvalues().minCoeff(), 0.0);
  // Truly collinear columns are still refused, whatever their scale.
  Matrix Y = X;
  Y.col(2) = 1e4 * Y.col(0) - 2.0 * Y.col(1);
  EXPECT_THROW(
      prepare(data_table(dir, {"a", "b", "c"}, Y, "whiten = true\nshuffle = false\nsplit = { test = 50 }")),
      DataError);
}

TEST(Preprocessing, StepsThatWouldFalsifyAnExactDensityAreRefused) {
  for (const char* keys : {"dequantize = true", "drop_correlated = 0.98", "exclude = [\"x0\"]"}) {
    Config data = test::config_from(std::string("type = \"synthetic/banana\"\nn = 200\n") + keys);
    try {
      prepare(data);
      ADD_FAILURE() << keys << ": accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("exact density"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kef
