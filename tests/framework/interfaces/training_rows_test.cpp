// The consumers of a training split that read it by position or in blocks (kef/training_rows.hpp), so
// that a distributed run can leave the split in the data file: each is checked against its
// brute-force twin on the held matrix (the direct formula), and against the same rows behind another
// TrainingRows (a copy that counts what is read), which must give the same bits and read only the
// rows it should.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kef/column_summary.hpp"
#include "kef/defensive_proposal.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/model.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "kef/student_t_proposal.hpp"
#include "kef/training_rows.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

// The same rows held elsewhere (as a file reader holds none), counting the rows read.
class CountingRows final : public TrainingRows {
 public:
  explicit CountingRows(Matrix rows) : rows_(std::move(rows)) {}
  Index rows() const override { return rows_.rows(); }
  Index cols() const override { return rows_.cols(); }
  Matrix range(Index begin, Index end) const override {
    read_ += end - begin;
    return rows_.middleRows(begin, end - begin);
  }
  Matrix pick(const std::vector<Index>& positions) const override {
    read_ += static_cast<Index>(positions.size());
    Matrix out(static_cast<Index>(positions.size()), rows_.cols());
    for (std::size_t i = 0; i < positions.size(); ++i) out.row(static_cast<Index>(i)) = rows_.row(positions[i]);
    return out;
  }
  Index read() const { return read_; }

 private:
  Matrix rows_;
  mutable Index read_ = 0;
};

Matrix skewed_rows(Index n, Index D, std::uint64_t seed) {
  RandomStream rng(seed, "training-rows");
  Matrix X = rng.normal_matrix(n, D);
  for (Index i = 0; i < n; ++i) X(i, 0) = 1e3 + std::exp(X(i, 0));  // a large mean and a skewed column
  return X;
}

TEST(ColumnSummary, AgreesWithTheDirectFormulasForEveryBlockSize) {
  const Matrix X = skewed_rows(1001, 3, 1);
  const Vector mean = X.colwise().mean().transpose();
  const Matrix C = X.rowwise() - mean.transpose();
  const Matrix cov = C.transpose() * C / 1000.0;
  for (Index block : {1, 7, 100, 1000, 1001, 5000}) {
    const ColumnSummary s = summarize_columns(MatrixRows(X), block);
    EXPECT_EQ(s.rows, 1001);
    EXPECT_TRUE(s.finite);
    EXPECT_LT((s.mean - mean).cwiseAbs().maxCoeff(), 1e-12 * 1e3) << block;
    EXPECT_LT((s.covariance() - cov).cwiseAbs().maxCoeff(), 1e-12 * cov.cwiseAbs().maxCoeff()) << block;
    EXPECT_EQ(s.min, Vector(X.colwise().minCoeff().transpose())) << block;
    EXPECT_EQ(s.max, Vector(X.colwise().maxCoeff().transpose())) << block;
  }
}

TEST(ColumnSummary, WithinOneBlockItIsTheDirectExpressionsBits) {
  // So that the proposals, bandwidths and standardize statistics of a split of up to 4096 rows are
  // what they were before they were read by blocks.
  const Matrix X = skewed_rows(777, 3, 12);
  const ColumnSummary s = summarize_columns(X);
  const Vector mean = X.colwise().mean().transpose();
  const Matrix C = X.rowwise() - mean.transpose();
  EXPECT_EQ(s.mean, mean);
  EXPECT_EQ(s.covariance(), Matrix((C.transpose() * C) / 776.0));
  EXPECT_EQ(s.sd(), Vector((C.array().square().colwise().sum() / 776.0).sqrt().transpose()));
  EXPECT_EQ(s.sd(0), Vector((C.array().square().colwise().sum() / 777.0).sqrt().transpose()));
  // The first `count` rows only.
  const ColumnSummary head = summarize_columns(MatrixRows(X), 100, 300);
  EXPECT_EQ(head.rows, 300);
  EXPECT_LT((head.mean - X.topRows(300).colwise().mean().transpose()).cwiseAbs().maxCoeff(), 1e-9);
  const auto [row, value] = largest_magnitude(MatrixRows(X), 0, 300, 64);
  Index want = 0;
  const double largest = X.col(0).head(300).cwiseAbs().maxCoeff(&want);
  EXPECT_EQ(row, want);
  EXPECT_EQ(value, largest);
}

TEST(ColumnSummary, IsTheSameBitsWhereverTheRowsAreHeldAndReadsThemTwice) {
  const Matrix X = skewed_rows(9000, 4, 2);  // more than two default blocks
  const CountingRows elsewhere(X);
  const ColumnSummary a = summarize_columns(X), b = summarize_columns(elsewhere);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.scatter, b.scatter);
  EXPECT_EQ(a.centred_squares, b.centred_squares);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(elsewhere.read(), 2 * 9000);  // the means, then the centred products
}

TEST(ColumnSummary, NonFiniteRowsAndTinySplitsAreReported) {
  Matrix X = skewed_rows(10, 2, 3);
  X(4, 1) = NAN;
  EXPECT_FALSE(summarize_columns(X).finite);
  EXPECT_THROW((void)StudentTProposal::fit(X, 3.0), DataError);
  const ColumnSummary one = summarize_columns(Matrix(X.topRows(1)));
  EXPECT_EQ(one.rows, 1);
  EXPECT_EQ(one.covariance(), Matrix::Zero(2, 2));
  EXPECT_EQ(one.sd(), Vector::Zero(2));
  EXPECT_THROW((void)StudentTProposal::fit(Matrix(X.topRows(1)), 3.0), DataError);
}

TEST(DefensiveProposal, FromRowsReadByPositionIsTheHeldRowsMixture) {
  const Matrix X = skewed_rows(3000, 2, 4);
  const Matrix inducing = skewed_rows(30, 2, 5);
  DefensiveOptions o;
  o.max_centres = 200;  // a subset of the pool of inducing and data rows
  RandomStream r1(9, "centres"), r2(9, "centres");
  const MixtureProposal held = make_defensive_proposal(nullptr, X, inducing, o, r1);
  const CountingRows elsewhere(X);
  const MixtureProposal read = make_defensive_proposal(nullptr, elsewhere, inducing, o, r2);
  ASSERT_EQ(held.components().size(), read.components().size());
  for (std::size_t k = 0; k < held.components().size(); ++k) {
    const Matrix probe = skewed_rows(50, 2, 6 + k);
    EXPECT_EQ(held.components()[k]->log_density(probe), read.components()[k]->log_density(probe)) << k;
  }
  // Twice over the rows for the statistics, and only the drawn data rows for the bumps.
  const auto* bumps = dynamic_cast<const GaussianCentresProposal*>(read.components().back().get());
  ASSERT_NE(bumps, nullptr);
  Index from_data = 0;
  for (Index i = 0; i < bumps->centres().rows(); ++i) {
    bool is_inducing = false;
    for (Index j = 0; j < inducing.rows(); ++j) is_inducing |= bumps->centres().row(i) == inducing.row(j);
    from_data += is_inducing ? 0 : 1;
  }
  EXPECT_EQ(elsewhere.read(), 2 * 3000 + from_data);
  // The bandwidth is Silverman's rule on the data's standard deviations (the direct formula).
  const Vector sd = ((X.rowwise() - X.colwise().mean()).array().square().colwise().sum() / 2999.0).sqrt().transpose();
  const double rule = std::pow(4.0 / (4.0 * 3000.0), 1.0 / 6.0);
  EXPECT_LT((bumps->bandwidth() - 0.25 * rule * sd).cwiseAbs().maxCoeff(), 1e-12);
}

// A standard normal with no exact sampler (HMC runs).
class Normal2 final : public Model {
 public:
  Index dim() const override { return 2; }
  std::string type_name() const override { return "test/normal"; }
  Vector log_unnormalized(const Matrix& X) const override { return -0.5 * X.rowwise().squaredNorm(); }
  Matrix score(const Matrix& X) const override { return -X; }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = -X;
    l = Matrix::Constant(X.rows(), 2, -1.0);
  }
  std::string describe() const override { return "N(0, I)"; }
};

TEST(HmcStartingRows, RowsReadByPositionGiveTheHeldRowsDrawsAndReadOnlyTheStarts) {
  const Matrix X = skewed_rows(500, 2, 7).rowwise() - Eigen::RowVector2d(1e3, 0.0);
  const Normal2 model;
  HmcOptions o;
  o.chains = 6;
  o.warmup = 30;
  o.samples = 20;
  o.init = HmcInit::Points;
  o.init_points = X;
  RandomStream r1(3, "hmc");
  const Matrix held = run_hmc(model, r1, o, Context(1, 1));
  auto elsewhere = std::make_shared<CountingRows>(X);
  o.init_points.resize(0, 0);
  o.init_rows = elsewhere;
  RandomStream r2(3, "hmc");
  const Matrix read = run_hmc(model, r2, o, Context(1, 2));
  EXPECT_EQ(held, read);
  EXPECT_EQ(elsewhere->read(), 6);  // one row a chain
  // A starting row of the wrong width is an error naming the option.
  o.init_rows = std::make_shared<CountingRows>(Matrix::Zero(5, 3));
  RandomStream r3(3, "hmc");
  try {
    (void)run_hmc(model, r3, o, Context(1, 1));
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(test::contains(e.what(), "init_rows")) << e.what();
  }
}

TEST(NpyBlocks, AFileWrittenByBlocksIsTheWholeMatrixFile) {
  const auto dir = test::temp_dir("npy-blocks");
  const Matrix X = skewed_rows(1003, 3, 8);
  write_npy(dir / "whole.npy", X);
  for (Index block : {1, 100, 1003, 4096}) {
    const auto p = dir / ("blocks-" + std::to_string(block) + ".npy");
    write_npy_blocks(p, X.rows(), X.cols(), block, [&](Index b, Index e) { return Matrix(X.middleRows(b, e - b)); });
    std::ifstream a(dir / "whole.npy", std::ios::binary), b(p, std::ios::binary);
    const std::string whole((std::istreambuf_iterator<char>(a)), {}), blocks((std::istreambuf_iterator<char>(b)), {});
    EXPECT_EQ(whole, blocks) << block;
  }
  // An empty matrix, and a block of the wrong shape: an error, and no file left behind.
  write_npy_blocks(dir / "empty.npy", 0, 3, 10, [&](Index, Index) { return Matrix(0, 3); });
  EXPECT_EQ(read_npy(dir / "empty.npy").rows(), 0);
  EXPECT_THROW(write_npy_blocks(dir / "bad.npy", 10, 3, 4, [&](Index b, Index e) { return Matrix::Zero(e - b, 2).eval(); }),
               Error);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename().string().find("bad.npy"), std::string::npos) << entry.path();
}

TEST(FirstRows, AreTheFirstRowsOrAllOfThem) {
  const Matrix X = skewed_rows(20, 2, 9);
  EXPECT_EQ(first_rows(MatrixRows(X), 5), Matrix(X.topRows(5)));
  EXPECT_EQ(first_rows(MatrixRows(X), 50), X);
  EXPECT_THROW((void)MatrixRows(X).range(3, 21), Error);
  EXPECT_THROW((void)MatrixRows(X).pick({20}), Error);
}

}  // namespace
}  // namespace kef
