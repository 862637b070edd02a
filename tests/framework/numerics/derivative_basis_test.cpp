// The derivative-basis building block (kef/derivative_basis.hpp, docs/math.md §6): features against
// central differences of the basis values, the Gram against the features at the basis points, the
// chunked parallel accumulation against a dense twin and across thread counts, and both solvers,
// including a rank-deficient system.
#include "kef/derivative_basis.hpp"

#include <gtest/gtest.h>

#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

KernelPtr make_kernel(const std::string& toml) {
  return test::plugin_registry().make_kernel(test::config_from(toml), {});
}
BaseMeasurePtr make_base() {
  return test::plugin_registry().make_base_measure(test::config_from("type = \"gaussian\"\nstd = 2.0"), {});
}

DerivativeBasis basis_of(const Matrix& Z, std::vector<int> orders, std::vector<Index> atoms = {}) {
  DerivativeBasis b;
  b.points = Z;
  b.orders = std::move(orders);
  b.atoms = std::move(atoms);
  return b;
}

const char* const kGaussian = "type = \"gaussian\"\nsigma = 1.1";
const char* const kImq = "type = \"imq\"\nc = 1.2\nbeta = -0.5";

// ∂_i and ∂²_i of every basis function, by central differences of derivative_basis_values in x.
TEST(DerivativeBasis, FeaturesAreDerivativesOfTheBasisValues) {
  for (const char* kt : {kGaussian, kImq}) {
    auto k = make_kernel(kt);
    auto p = test::random_points(5, 3, 2, 11, "features");
    const DerivativeBasis basis = basis_of(p.Y, {1, 2});
    const Index N = 5, D = 2;
    Matrix first, second;
    derivative_basis_features(*k, basis, p.X, first, &second);
    ASSERT_EQ(first.rows(), N * D);
    ASSERT_EQ(first.cols(), basis.size());
    const double h = 1e-4;
    const Matrix v0 = derivative_basis_values(*k, basis, p.X);
    for (Index i = 0; i < D; ++i) {
      Matrix Xp = p.X, Xm = p.X;
      Xp.col(i).array() += h;
      Xm.col(i).array() -= h;
      const Matrix vp = derivative_basis_values(*k, basis, Xp), vm = derivative_basis_values(*k, basis, Xm);
      EXPECT_LT((first.middleRows(i * N, N) - (vp - vm) / (2 * h)).cwiseAbs().maxCoeff(), 1e-7) << kt;
      EXPECT_LT((second.middleRows(i * N, N) - (vp - 2 * v0 + vm) / (h * h)).cwiseAbs().maxCoeff(), 1e-5)
          << kt;
    }
  }
}

// Row (i, b) of the first features at the basis points is ⟨∂_i k(z_b, ·), y_c⟩, i.e. row (1, i, b) of
// G_YY; the second features give the order-2 rows. And a kept subset of atoms selects rows and columns.
TEST(DerivativeBasis, GramEqualsTheFeaturesAtTheBasisPoints) {
  for (const char* kt : {kGaussian, kImq}) {
    auto k = make_kernel(kt);
    auto p = test::random_points(1, 4, 3, 12, "gram");
    const DerivativeBasis basis = basis_of(p.Y, {1, 2});
    const Matrix G = derivative_basis_gram(*k, basis);
    Matrix first, second;
    derivative_basis_features(*k, basis, p.Y, first, &second);
    const Index mD = 12;
    EXPECT_LT((G.topRows(mD) - first).cwiseAbs().maxCoeff(), 1e-14) << kt;
    EXPECT_LT((G.bottomRows(mD) - second).cwiseAbs().maxCoeff(), 1e-13) << kt;
    // positive semi-definite: a Gram matrix of functions
    Eigen::SelfAdjointEigenSolver<Matrix> eig(G);
    EXPECT_GT(eig.eigenvalues().minCoeff(), -1e-12 * eig.eigenvalues().maxCoeff()) << kt;
    const std::vector<Index> atoms{0, 5, 7, 13, 20};
    const Matrix Gs = derivative_basis_gram(*k, basis_of(p.Y, {1, 2}, atoms));
    for (Index r = 0; r < 5; ++r)
      for (Index c = 0; c < 5; ++c)
        EXPECT_EQ(Gs(r, c), G(atoms[static_cast<std::size_t>(r)], atoms[static_cast<std::size_t>(c)]));
  }
}

// The brute-force twin of the chunked accumulation: B formed whole.
DerivativeSystem dense_system(const Kernel& k, const BaseMeasure& base, const Matrix& X,
                              const DerivativeBasis& basis) {
  Matrix first, second, q1, q2;
  derivative_basis_features(k, basis, X, first, &second);
  base.derivatives(X, q1, q2);
  const double n = static_cast<double>(X.rows());
  DerivativeSystem s;
  s.BtB = first.transpose() * first / n;
  s.h = (first.transpose() * Eigen::Map<const Vector>(q1.data(), q1.size()) +
         second.colwise().sum().transpose()) /
        n;
  s.G = derivative_basis_gram(k, basis);
  s.rows = X.rows();
  return s;
}

TEST(DerivativeBasis, ChunkedAccumulationEqualsTheDenseSystem) {
  auto base = make_base();
  RandomStream rng(3, "chunked");
  const Matrix X = rng.normal_matrix(203, 3), Z = rng.normal_matrix(6, 3);
  for (const char* kt : {kGaussian, kImq}) {
    auto k = make_kernel(kt);
    for (const DerivativeBasis& basis :
         {basis_of(Z, {1}), basis_of(Z, {1, 2}), basis_of(Z, {1, 2}, {1, 4, 9, 17, 18, 30})}) {
      const DerivativeSystem dense = dense_system(*k, *base, X, basis);
      for (Index chunk : {Index{7}, Index{64}, Index{0}}) {
        DerivativeAccumulateOptions opt;
        opt.chunk_rows = chunk;
        const DerivativeSystem s = accumulate_derivative_system(*k, *base, X, basis, opt, Context(1, 2));
        const double scale = dense.BtB.cwiseAbs().maxCoeff();
        EXPECT_LT((s.BtB - dense.BtB).cwiseAbs().maxCoeff(), 1e-13 * scale) << kt << " chunk " << chunk;
        EXPECT_LT((s.h - dense.h).cwiseAbs().maxCoeff(), 1e-13 * dense.h.cwiseAbs().maxCoeff()) << kt;
        EXPECT_EQ((s.G - dense.G).cwiseAbs().maxCoeff(), 0.0);
        EXPECT_EQ(s.rows, 203);
      }
    }
  }
}

TEST(DerivativeBasis, AccumulationIsBitwiseIndependentOfThreads) {
  auto base = make_base();
  auto k = make_kernel(kGaussian);
  RandomStream rng(4, "threads");
  const Matrix X = rng.normal_matrix(517, 2), Z = rng.normal_matrix(9, 2);
  const DerivativeBasis basis = basis_of(Z, {1, 2});
  DerivativeAccumulateOptions opt;
  opt.chunk_rows = 23;
  const DerivativeSystem one = accumulate_derivative_system(*k, *base, X, basis, opt, Context(1, 1));
  for (int threads : {2, 3}) {
    const DerivativeSystem s = accumulate_derivative_system(*k, *base, X, basis, opt, Context(1, threads));
    EXPECT_EQ((s.BtB - one.BtB).cwiseAbs().maxCoeff(), 0.0) << threads;
    EXPECT_EQ((s.h - one.h).cwiseAbs().maxCoeff(), 0.0) << threads;
  }
}

// The solution is a stationary point of the quadratic objective ½βᵀAβ + hᵀβ: Aβ = −h.
TEST(DerivativeBasis, BothSolversSolveAWellPosedSystem) {
  auto base = make_base();
  auto k = make_kernel(kGaussian);
  RandomStream rng(5, "solve");
  const Matrix X = rng.normal_matrix(300, 2), Z = rng.normal_matrix(8, 2);
  const DerivativeSystem s = accumulate_derivative_system(*k, *base, X, basis_of(Z, {1}),
                                                          DerivativeAccumulateOptions{}, Context(1, 2));
  DerivativeSolveOptions opt;
  opt.lambda = 1e-2;
  const DerivativeSolution chol = solve_derivative_system(s, opt);
  opt.solver = DerivativeSolver::pseudo_inverse;
  const DerivativeSolution pinv = solve_derivative_system(s, opt);
  const Matrix A = s.BtB + 1e-2 * s.G;
  EXPECT_LT((A * chol.beta + s.h).norm(), 1e-10 * s.h.norm());
  EXPECT_LT((chol.beta - pinv.beta).norm(), 1e-9 * chol.beta.norm());
  EXPECT_EQ(chol.rank, 16);
  EXPECT_EQ(pinv.rank, 16);
  EXPECT_EQ(chol.ridge_added, 0.0);
}

// A basis point given twice makes D atoms exact duplicates: the system is singular. Cholesky without a
// ridge refuses it; the pseudo-inverse drops the D null directions and gives the same function as the
// basis without the duplicate (a duplicated atom only splits its coefficient).
TEST(DerivativeBasis, RankDeficientSystemPseudoInverseAndCholeskyRefusal) {
  auto base = make_base();
  auto k = make_kernel(kGaussian);
  RandomStream rng(6, "rank");
  const Matrix X = rng.normal_matrix(300, 2), Z = rng.normal_matrix(6, 2);
  Matrix Zdup(7, 2);
  Zdup << Z, Z.row(2);
  const DerivativeSystem sd = accumulate_derivative_system(*k, *base, X, basis_of(Zdup, {1}),
                                                           DerivativeAccumulateOptions{}, Context(1, 2));
  const DerivativeSystem s = accumulate_derivative_system(*k, *base, X, basis_of(Z, {1}),
                                                          DerivativeAccumulateOptions{}, Context(1, 2));
  DerivativeSolveOptions opt;
  opt.lambda = 1e-2;
  const std::string msg = test::message_of<NumericalError>([&] { solve_derivative_system(sd, opt); });
  EXPECT_TRUE(test::contains(msg, "ridge")) << msg;
  const DerivativeSolution ref = solve_derivative_system(s, opt);
  opt.solver = DerivativeSolver::pseudo_inverse;
  const DerivativeSolution pinv = solve_derivative_system(sd, opt);
  EXPECT_EQ(pinv.rank, 12);  // 14 atoms, 2 of them duplicates
  const Matrix T = rng.normal_matrix(50, 2);
  Matrix f_dup, f_ref;
  derivative_basis_features(*k, basis_of(Zdup, {1}), T, f_dup, nullptr);
  derivative_basis_features(*k, basis_of(Z, {1}), T, f_ref, nullptr);
  const Vector g_dup = f_dup * pinv.beta, g_ref = f_ref * ref.beta;
  EXPECT_LT((g_dup - g_ref).norm(), 1e-8 * g_ref.norm());
  // The minimum-norm solution splits the duplicated coefficients equally.
  for (Index j = 0; j < 2; ++j)
    EXPECT_NEAR(pinv.beta[j * 7 + 2], pinv.beta[j * 7 + 6], 1e-8 * pinv.beta.norm());
  // A ridge makes Cholesky accept it, and reports the value added.
  opt.solver = DerivativeSolver::cholesky;
  opt.ridge = 1e-10;
  const DerivativeSolution ridged = solve_derivative_system(sd, opt);
  EXPECT_GT(ridged.ridge_added, 0.0);
  EXPECT_LT((f_dup * ridged.beta - g_ref).norm(), 1e-5 * g_ref.norm());
}

TEST(DerivativeBasis, RefusesBadBasesAndKernelsWithoutMixedDerivatives) {
  auto k = make_kernel(kGaussian);
  const Matrix Z = Matrix::Random(3, 2);
  EXPECT_THROW(check_derivative_basis(*k, basis_of(Z, {2}), "test"), Error);
  EXPECT_THROW(check_derivative_basis(*k, basis_of(Z, {1}, {3, 1}), "test"), Error);
  EXPECT_THROW(check_derivative_basis(*k, basis_of(Z, {1}, {6}), "test"), Error);
  EXPECT_NO_THROW(check_derivative_basis(*k, basis_of(Z, {1, 2}, {0, 11}), "test"));
}

}  // namespace
}  // namespace kef
