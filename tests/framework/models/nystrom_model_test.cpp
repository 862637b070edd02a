// NystromModel (kef/nystrom_model.hpp): f = Σ_c β_c ∂^o_{z_j} k(z_b, ·) against the derivative
// expansion written out for the Gaussian kernel, over several evaluation chunks; score and Hessian
// diagonal against central differences, for orders {1} and {1, 2}; bad constructions; the saved model
// read back.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numbers>

#include "kef/derivative_basis.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/nystrom_model.hpp"
#include "kef/random.hpp"
#include "model_checks.hpp"
#include "test_support.hpp"

namespace kef::nystrom_model_test {

constexpr double kSigma = 1.1;
constexpr double kBaseStd = 2.0;

BaseMeasurePtr standard_base() {
  return test::plugin_registry().make_base_measure(test::config_from("type = \"gaussian\"\nstd = 2.0"), {});
}

struct Fixture {
  DerivativeBasis basis;
  Vector beta;
  std::shared_ptr<NystromModel> model;
};

Fixture make_fixture(Index points, Index dim, std::vector<int> orders, std::uint64_t seed) {
  RandomStream rng(seed, "nystrom-model-test");
  Fixture f;
  f.basis.points = rng.normal_matrix(points, dim);
  f.basis.orders = std::move(orders);
  f.beta = 0.3 * rng.normal_matrix(f.basis.atom_count(), 1).col(0);
  f.model = std::make_shared<NystromModel>(test::gaussian_kernel(kSigma), standard_base(), f.basis, f.beta,
                                           "nystrom");
  return f;
}

// log p~(x) written out: with u = x − z_b and k_b = exp(−‖u‖²/(2σ²)), the atoms are
// ∂_{z_j} k(z_b, x) = (u_j/σ²) k_b and ∂²_{z_j} k(z_b, x) = (u_j²/σ⁴ − 1/σ²) k_b, coefficient index
// o_pos·m·D + j·m + b; log q0 = −(D/2) log(2πσ0²) − ‖x‖²/(2σ0²).
double expansion(const Fixture& fx, const Vector& x) {
  const Matrix& Z = fx.basis.points;
  const Index m = Z.rows(), D = Z.cols();
  const double s2 = kSigma * kSigma, b2 = kBaseStd * kBaseStd;
  double f = -0.5 * static_cast<double>(D) * std::log(2 * std::numbers::pi * b2) - x.squaredNorm() / (2 * b2);
  for (Index b = 0; b < m; ++b) {
    const Vector u = x - Z.row(b).transpose();
    const double k = std::exp(-u.squaredNorm() / (2 * s2));
    for (Index j = 0; j < D; ++j) {
      f += fx.beta[j * m + b] * (u[j] / s2) * k;
      if (fx.basis.orders.size() == 2) f += fx.beta[m * D + j * m + b] * (u[j] * u[j] / (s2 * s2) - 1 / s2) * k;
    }
  }
  return f;
}

// 40 points in 3 dimensions with both orders: 240 atoms, so an evaluation chunk is
// derivative_chunk_rows(3, 240) = 347 rows and 800 rows take three chunks.
TEST(NystromModel, TheLogDensityEqualsTheDerivativeExpansionOverSeveralChunks) {
  const Fixture fx = make_fixture(40, 3, {1, 2}, 1);
  ASSERT_LT(derivative_chunk_rows(3, 240), 800 / 2);
  RandomStream rng(2, "nystrom-model-rows");
  const Matrix X = 1.5 * rng.normal_matrix(800, 3);
  const Vector logp = fx.model->log_unnormalized(X);
  const Vector base = standard_base()->log_density(X);
  const Vector ratio = fx.model->log_ratio_to_base(X);
  ASSERT_EQ(logp.size(), 800);
  for (Index n = 0; n < X.rows(); ++n) {
    const double e = expansion(fx, X.row(n).transpose());
    ASSERT_NEAR(logp[n], e, 1e-11 * (1 + std::abs(e))) << "row " << n;
    ASSERT_NEAR(ratio[n], logp[n] - base[n], 1e-11 * (1 + std::abs(e))) << "row " << n;
  }
  // The derivatives of the whole matrix, chunk by chunk, against each row evaluated alone (one chunk),
  // at the chunk boundaries: a chunk written to the wrong rows shows here.
  Matrix S, L;
  fx.model->score_and_laplacian(X, S, L);
  const Index chunk = derivative_chunk_rows(3, 240);
  for (Index n : {Index{0}, chunk - 1, chunk, chunk + 1, 2 * chunk - 1, 2 * chunk, Index{799}}) {
    Matrix s, l;
    fx.model->score_and_laplacian(X.row(n), s, l);
    EXPECT_TRUE(S.row(n).isApprox(s, 1e-12)) << "row " << n;
    EXPECT_TRUE(L.row(n).isApprox(l, 1e-12)) << "row " << n;
  }
}

TEST(NystromModel, ScoreAndLaplacianMatchCentralDifferencesForBothBases) {
  for (const auto& orders : {std::vector<int>{1}, std::vector<int>{1, 2}}) {
    const Fixture fx = make_fixture(6, 2, orders, 3);
    RandomStream rng(4, "nystrom-model-points");
    const Matrix X = 1.2 * rng.normal_matrix(5, 2);
    EXPECT_TRUE(model_checks::derivatives_match_differences(*fx.model, X, 1e-8, 1e-5))
        << "orders " << orders.size();
    // The value against the expansion for orders {1} too (the first test has {1, 2}).
    for (Index n = 0; n < X.rows(); ++n)
      EXPECT_NEAR(fx.model->log_unnormalized(X.row(n))[0], expansion(fx, X.row(n).transpose()), 1e-12);
  }
}

TEST(NystromModel, RefusesAPartialBasisMismatchedCoefficientsAndData) {
  Fixture fx = make_fixture(3, 2, {1}, 5);
  DerivativeBasis partial = fx.basis;
  partial.atoms = {0, 2};
  const std::string atoms = test::message_of<Error>(
      [&] { NystromModel(test::gaussian_kernel(1.0), standard_base(), partial, Vector::Zero(2), "nystrom"); });
  EXPECT_TRUE(test::contains(atoms, "the basis must keep every atom")) << atoms;
  const std::string count = test::message_of<ModelFileError>(
      [&] { NystromModel(test::gaussian_kernel(1.0), standard_base(), fx.basis, Vector::Zero(5), "nystrom"); });
  EXPECT_TRUE(test::contains(count, "5 coefficients for 6 basis functions")) << count;
  const std::string data = test::message_of<DataError>([&] { fx.model->log_unnormalized(Matrix::Zero(1, 3)); });
  EXPECT_TRUE(test::contains(data, "data has 3 columns, the model dimension 2")) << data;
}

TEST(NystromModel, ASavedModelReadsBackBitwiseWithItsOrdersAndMethod) {
  const Fixture fx = make_fixture(4, 2, {1, 2}, 6);
  const auto model = std::make_shared<NystromModel>(test::gaussian_kernel(kSigma), standard_base(), fx.basis,
                                                    fx.beta, "full");
  const std::filesystem::path dir = test::temp_dir("nystrom-model") / "m";
  save_model(*model, dir);
  const ModelPtr back = load_model(dir, test::plugin_registry());
  // The loader is the nystrom plugin's; the model's description carries its method, orders and points.
  EXPECT_EQ(back->type_name(), "nystrom");
  EXPECT_EQ(back->describe(), model->describe());
  EXPECT_TRUE(test::contains(back->describe(), "full kernel exponential family: derivative basis of order 1 2 at 4 "
                                               "points (16 functions)"))
      << back->describe();
  RandomStream rng(7, "nystrom-model-saved");
  const Matrix X = rng.normal_matrix(10, 2);
  EXPECT_EQ(back->log_unnormalized(X), model->log_unnormalized(X));
  Matrix S0, L0, S1, L1;
  model->score_and_laplacian(X, S0, L0);
  back->score_and_laplacian(X, S1, L1);
  EXPECT_EQ(S1, S0);
  EXPECT_EQ(L1, L0);
}

}  // namespace kef::nystrom_model_test
