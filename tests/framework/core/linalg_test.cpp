#include "kef/linalg.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "kef/error.hpp"
#include "kef/random.hpp"

namespace kef {
namespace {

TEST(Linalg, CholeskySolvesAndReportsNoJitterWhenDefinite) {
  RandomStream rng(1, "spd");
  Matrix B = rng.normal_matrix(20, 20);
  Matrix A = B * B.transpose() + Matrix::Identity(20, 20);
  Vector b = rng.normal_matrix(20, 1).col(0);
  SpdFactor f(A, "test");
  EXPECT_EQ(f.jitter(), 0.0);
  EXPECT_LT((A * f.solve(b) - b).norm(), 1e-10);
  EXPECT_NEAR(f.log_determinant(), std::log(A.determinant()), 1e-9);
}

TEST(Linalg, SingularMatrixGetsTheSmallestWorkingJitter) {
  Matrix v = Matrix::Ones(5, 1);
  Matrix A = v * v.transpose();  // rank one
  SpdFactor f(A, "test");
  EXPECT_GT(f.jitter(), 0.0);
  EXPECT_LE(f.jitter(), 1e-3);
}

TEST(Linalg, IndefiniteMatrixIsANumericalErrorNamingThePlace) {
  Matrix A = -Matrix::Identity(3, 3);
  try {
    SpdFactor f(A, "my system");
    FAIL();
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("my system"), std::string::npos);
  }
}

TEST(Linalg, NonFiniteInputIsNamedWithItsPosition) {
  Matrix A = Matrix::Identity(3, 3);
  A(2, 1) = std::nan("");
  try {
    check_finite(A, "where");
    FAIL();
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("row 2, column 1"), std::string::npos) << e.what();
  }
}

TEST(Linalg, LogSumExpIsStable) {
  Vector v(3);
  v << 1000.0, 1000.0, -1e300;
  EXPECT_NEAR(logsumexp(v), 1000.0 + std::log(2.0), 1e-12);
}

TEST(Linalg, RowLogSumExpAndSoftmaxAgreeWithTheDefinitionsAndKeepEmptyRows) {
  // Rows with terms 700 apart (exp of the raw values overflows), a row of −inf (a point no component
  // claims) and an ordinary row.
  const double inf = std::numeric_limits<double>::infinity();
  Matrix T(3, 3);
  T << 1000.0, 300.0, 999.0, -inf, -inf, -inf, 0.5, -1.0, 2.0;
  const Vector r = row_logsumexp(T);
  EXPECT_NEAR(r[0], 1000.0 + std::log(1.0 + std::exp(-700.0) + std::exp(-1.0)), 1e-12);
  EXPECT_EQ(r[1], -inf);
  EXPECT_NEAR(r[2], std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0)), 1e-14);
  Vector w;
  for (Index i = 0; i < 3; ++i) {
    const double lse = logsumexp_softmax(T.row(i).transpose(), w);
    if (i == 1) {
      EXPECT_EQ(lse, -inf);
      EXPECT_EQ(w, Vector::Zero(3));  // no NaN weights
      continue;
    }
    EXPECT_NEAR(lse, r[i], 1e-12 * std::max(1.0, std::abs(r[i]))) << i;
    EXPECT_NEAR(w.sum(), 1.0, 1e-15) << i;
    // Against the weights shifted by the row's maximum (exp(T − lse) would inherit lse's rounding).
    const double m = T.row(i).maxCoeff();
    const double total = (T.row(i).array() - m).exp().sum();
    for (Index k = 0; k < 3; ++k) EXPECT_NEAR(w[k], std::exp(T(i, k) - m) / total, 1e-15) << i << "," << k;
  }
}

TEST(Linalg, SquaredDistanceBetweenRowsOfTwoMatrices) {
  Matrix A(2, 3), B(1, 3);
  A << 1, 2, 3, -1, 0, 4;
  B << 0, 2, 5;
  EXPECT_EQ(squared_distance(A, 0, B, 0), 1.0 + 0.0 + 4.0);
  EXPECT_EQ(squared_distance(A, 1, B, 0), 1.0 + 4.0 + 1.0);
}

TEST(Linalg, MedianPairwiseDistance) {
  Matrix X(3, 1);
  X << 0.0, 1.0, 3.0;  // distances 1, 3, 2
  EXPECT_DOUBLE_EQ(median_pairwise_distance(X), 2.0);
}

}  // namespace
}  // namespace kef

namespace kef {
namespace {

// Far from the origin the GEMM form ‖x‖² + ‖y‖² − 2xᵀy loses digits unless the points are centred.
TEST(SquaredDistances, AccurateFarFromTheOrigin) {
  RandomStream rng(3, "sqdist");
  for (double offset : {0.0, 1.0e4, -3.0e6}) {
    Matrix X = rng.normal_matrix(13, 4).array() + offset;
    Matrix Y = rng.normal_matrix(9, 4).array() + offset;
    const Matrix R = squared_distances(X, Y);
    for (Index n = 0; n < X.rows(); ++n)
      for (Index m = 0; m < Y.rows(); ++m) {
        const double exact = (X.row(n) - Y.row(m)).squaredNorm();
        EXPECT_NEAR(R(n, m), exact, 1e-12 * (1.0 + exact)) << "offset " << offset;
      }
  }
  EXPECT_EQ(squared_distances(Matrix(0, 2), Matrix::Ones(3, 2)).rows(), 0);
}

// A row's distances must not depend on the rows beside it. The centring point is the mean of Y, so a far
// row in Y (or, through the basis calls k(Z, X), in the evaluated batch) moved it; HMC's batch of chains
// then gave one chain a log density 39 units off when another chain proposed a point at 10⁸, and that
// chain accepted the false value and never moved again (KEF on DDE's grid).
TEST(SquaredDistances, ARowDoesNotDependOnTheOtherRows) {
  RandomStream rng(5, "sqdist-rows");
  const Matrix Z = rng.normal_matrix(7, 2);
  Matrix X = rng.normal_matrix(4, 2);
  for (double far : {1.0e4, 1.0e8, -3.0e12}) {
    Matrix Xfar = X, Zfar = Z;
    Xfar.row(3) << far, -0.1 * far;
    Zfar.row(6) << -far, far;
    const Matrix in_x = squared_distances(Z, Xfar);  // the far row among the evaluated points (Y)
    const Matrix in_z = squared_distances(Xfar, Zfar);
    for (Index n = 0; n < 3; ++n)
      for (Index m = 0; m < 6; ++m) {
        const double exact = (X.row(n) - Z.row(m)).squaredNorm();
        EXPECT_NEAR(in_x(m, n), exact, 1e-12 * exact) << "far " << far << " n " << n << " m " << m;
        EXPECT_NEAR(in_z(n, m), exact, 1e-12 * exact) << "far " << far << " n " << n << " m " << m;
      }
  }
  // Coincident rows are exactly 0 apart, wherever they lie.
  const Matrix W = rng.normal_matrix(5, 3).array() + 1.0e5;
  const Matrix self = squared_distances(W, W);
  for (Index i = 0; i < 5; ++i) EXPECT_EQ(self(i, i), 0.0) << i;
  // A non-finite coordinate gives non-finite distances for its own row only.
  Matrix bad = X;
  bad(1, 0) = std::numeric_limits<double>::quiet_NaN();
  const Matrix with_nan = squared_distances(bad, Z);
  EXPECT_TRUE(with_nan.row(1).array().isNaN().all());
  EXPECT_TRUE(with_nan.row(0).allFinite());
}

// Both backends of the two hot products against the plain triple loop, on shapes that are not multiples
// of any block size, accumulating into a nonzero C (the products add, they do not overwrite).
TEST(Products, BothBackendsMatchTheDefinition) {
  RandomStream rng(3, "products");
  const Matrix A = rng.normal_matrix(203, 37), B = rng.normal_matrix(203, 11);
  const Matrix C0 = rng.normal_matrix(37, 37), E0 = rng.normal_matrix(37, 11);
  Matrix gram_ref = C0, cross_ref = E0;
  for (Index i = 0; i < 37; ++i) {
    for (Index j = 0; j < 37; ++j)
      for (Index r = 0; r < 203; ++r) gram_ref(i, j) += A(r, i) * A(r, j);
    for (Index j = 0; j < 11; ++j)
      for (Index r = 0; r < 203; ++r) cross_ref(i, j) += A(r, i) * B(r, j);
  }
  for (ProductBackend b : {ProductBackend::OpenBlas, ProductBackend::Eigen}) {
    Matrix C = C0, E = E0;
    add_gram_lower(A, C, b);
    add_cross_product(A, B, E, b);
    for (Index j = 0; j < 37; ++j)
      for (Index i = 0; i < 37; ++i) {
        if (i >= j)
          EXPECT_NEAR(C(i, j), gram_ref(i, j), 1e-12 * 203) << i << "," << j;
        else
          EXPECT_EQ(C(i, j), C0(i, j)) << "upper triangle must be left alone: " << i << "," << j;
      }
    EXPECT_LT((E - cross_ref).cwiseAbs().maxCoeff(), 1e-12 * 203);
  }
  EXPECT_FALSE(product_backend_description().empty());
}

// The Eigen backend's rank update halves C recursively (GEMMs off the diagonal, Eigen's rank update
// on blocks of at most 128 columns): a width of 300 exercises three levels with odd splits.
TEST(Products, RecursiveGramMatchesTheDefinition) {
  RandomStream rng(4, "products recursive");
  const Index k = 57, M = 300;
  const Matrix A = rng.normal_matrix(k, M), C0 = rng.normal_matrix(M, M);
  Matrix C = C0;
  add_gram_lower(A, C, ProductBackend::Eigen);
  for (Index j = 0; j < M; ++j)
    for (Index i = 0; i < M; ++i) {
      if (i < j) {
        ASSERT_EQ(C(i, j), C0(i, j)) << "upper triangle must be left alone: " << i << "," << j;
        continue;
      }
      double ref = C0(i, j);
      for (Index r = 0; r < k; ++r) ref += A(r, i) * A(r, j);
      ASSERT_NEAR(C(i, j), ref, 1e-12 * k) << i << "," << j;
    }
}

TEST(Products, ShapeMismatchIsAnError) {
  Matrix C = Matrix::Zero(3, 3), E = Matrix::Zero(3, 2);
  EXPECT_THROW(add_gram_lower(Matrix::Zero(5, 4), C), Error);
  EXPECT_THROW(add_cross_product(Matrix::Zero(5, 3), Matrix::Zero(4, 2), E), Error);
}

}  // namespace
}  // namespace kef
