// kernel/deep_scalar (DKEF-L-50-1's kernel, k = ψ(x)ψ(y) with ψ = wᵀφ + b): the value against a
// per-pair brute force built from kef::Mlp directly, every derivative stack and the whole backward pass
// against central differences, DKEF's closed-form meta-gradient with this kernel against central
// differences of the validation loss, and the dkef estimator with M = 1 end to end.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "closed_form_gradient.hpp"
#include "kef/data_source.hpp"
#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/progress.hpp"
#include "mlp.hpp"
#include "gradient_check.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

constexpr Index kLayers = 2, kWidth = 3;

std::string kernel_toml(Index layers = kLayers, Index width = kWidth) {
  return "type = \"deep_scalar\"\nlayers = " + std::to_string(layers) + "\nwidth = " + std::to_string(width);
}

// Built from stream (seed, "scalar"); then every parameter perturbed by N(0, 0.2²) so that the biases
// and b are non-zero and no term of a gradient vanishes by symmetry.
KernelPtr make_kernel(Index dim, std::uint64_t seed) {
  Registry& reg = test::plugin_registry();
  RandomStream rng(seed, "scalar");
  KernelPtr k = reg.make_kernel(test::config_from(kernel_toml()), BuildContext{dim, &reg, &rng});
  Vector theta = k->parameters();
  theta += 0.2 * rng.normal_matrix(theta.size(), 1).col(0);
  k->set_parameters(theta);
  return k;
}

double max_abs(const Matrix& m) { return m.size() ? m.cwiseAbs().maxCoeff() : 0.0; }

TEST(DeepScalarKernel, ValueIsThePerPairProductOfTheScalarHead) {
  const Index D = 3;
  KernelPtr k = make_kernel(D, 1);
  // The documented layout: the network's parameters, then w (W), then b.
  const Vector theta = k->parameters();
  Mlp net(D, kWidth, kLayers);
  ASSERT_EQ(k->parameter_count(), net.parameter_count() + kWidth + 1);
  ASSERT_EQ(static_cast<Index>(k->parameter_names().size()), k->parameter_count());
  EXPECT_EQ(k->parameter_names().back(), "head_b");
  net.set_parameters(theta.head(net.parameter_count()));
  const Vector w = theta.segment(net.parameter_count(), kWidth);
  const double b = theta[theta.size() - 1];
  auto psi = [&](const Matrix& row) {
    FeatureStacks f;
    net.forward(row, 0, f);
    return f.features.row(0).dot(w) + b;
  };
  RandomStream rng(2, "points");
  Matrix X = rng.normal_matrix(5, D), Y = rng.normal_matrix(4, D);
  Matrix G = k->gram(X, Y);
  ASSERT_EQ(G.rows(), 5);
  ASSERT_EQ(G.cols(), 4);
  for (Index n = 0; n < 5; ++n)
    for (Index m = 0; m < 4; ++m)
      // Same arithmetic up to summation order: a few ulps of the O(1) product.
      EXPECT_NEAR(G(n, m), psi(X.row(n)) * psi(Y.row(m)), 1e-14 * std::max(1.0, std::abs(G(n, m))));
  KernelStacks st;
  k->derivatives(X, Y, 2, st);
  // gram() and derivatives() evaluate the same formula through separately compiled code, which the
  // optimiser may vectorise or contract differently: equal to a few ulps of the O(1) values.
  EXPECT_LE(max_abs(st.value - G), 1e-14 * std::max(1.0, max_abs(G)));
  EXPECT_FALSE(k->capabilities().bounded_unit);
  EXPECT_TRUE(k->capabilities().differentiable_parameters);
  EXPECT_TRUE(k->capabilities().inducing_point_gradients);
}

TEST(DeepScalarKernel, DerivativeStacksMatchCentralDifferencesOfTheGram) {
  const Index D = 3, N = 4, M = 3;
  KernelPtr k = make_kernel(D, 3);
  RandomStream rng(4, "points");
  Matrix X = rng.normal_matrix(N, D), Y = rng.normal_matrix(M, D);
  KernelStacks st;
  k->derivatives(X, Y, 2, st);
  ASSERT_EQ(st.d1.rows(), N * D);
  ASSERT_EQ(st.d2.rows(), N * D);
  const double scale = std::max(1.0, max_abs(st.value));
  for (Index d = 0; d < D; ++d) {
    auto shifted = [&](double h) {
      Matrix Xh = X;
      Xh.col(d).array() += h;
      return k->gram(Xh, Y);
    };
    // First derivative, h = 1e-5: truncation h²|k'''|/6 ~ 1e-11 and rounding ~eps·|k|/h ~ 1e-11·|k|,
    // so 1e-8 relative to max(1, |k|) is three orders above both.
    const double h1 = 1e-5;
    const Matrix fd1 = (shifted(h1) - shifted(-h1)) / (2 * h1);
    EXPECT_LT(max_abs(st.d1.middleRows(d * N, N) - fd1), 1e-8 * scale) << "d1, coordinate " << d;
    // Second derivative from the Gram alone, h = 1e-4: truncation h²|k''''|/12 ~ 1e-9 and rounding
    // ~4·eps·|k|/h² ~ 4e-8·|k|: 1e-6 relative to max(1, |k|) leaves a margin of 20 over both.
    const double h2 = 1e-4;
    const Matrix fd2 = (shifted(h2) - 2.0 * k->gram(X, Y) + shifted(-h2)) / (h2 * h2);
    EXPECT_LT(max_abs(st.d2.middleRows(d * N, N) - fd2), 1e-6 * scale) << "d2, coordinate " << d;
  }
  // Lower orders give the same leading stacks and leave the others empty.
  KernelStacks s0, s1;
  k->derivatives(X, Y, 0, s0);
  k->derivatives(X, Y, 1, s1);
  EXPECT_EQ(max_abs(s0.value - st.value), 0.0);
  EXPECT_EQ(s0.d1.size(), 0);
  EXPECT_EQ(max_abs(s1.d1 - st.d1), 0.0);
  EXPECT_EQ(s1.d2.size(), 0);
}

TEST(DeepScalarKernel, BackwardMatchesCentralDifferencesForEveryParameterAndY) {
  const Index D = 2, N = 4, M = 3;
  KernelPtr k = make_kernel(D, 5);
  RandomStream rng(6, "adjoints");
  Matrix X = rng.normal_matrix(N, D), Y = rng.normal_matrix(M, D);
  // Every combination of present adjoints: each stack alone, and all three.
  const std::vector<std::array<bool, 3>> combos = {
      {true, false, false}, {false, true, false}, {false, false, true}, {true, true, true}};
  for (const auto& c : combos) {
    KernelStacks adj;
    if (c[0]) adj.value = rng.normal_matrix(N, M);
    if (c[1]) adj.d1 = rng.normal_matrix(N * D, M);
    if (c[2]) adj.d2 = rng.normal_matrix(N * D, M);
    Vector gp = Vector::Zero(k->parameter_count());
    Matrix gy = Matrix::Zero(M, D);
    k->backward(X, Y, adj, &gp, &gy);

    KernelPtr probe = make_kernel(D, 5);
    const Vector fd = test::numerical_gradient(
        [&](const Vector& t) {
          probe->set_parameters(t);
          return test::stack_adjoint_loss(*probe, X, Y, adj);
        },
        k->parameters());
    // h = 1e-5 on a smooth function of O(1..10) values: error ~1e-9, so 1e-7 relative has margin.
    EXPECT_TRUE(test::gradients_agree(gp, fd, 1e-7))
        << "adjoints " << c[0] << c[1] << c[2] << "\nanalytic " << gp.transpose() << "\nnumeric  "
        << fd.transpose();

    const Matrix fdy = test::stack_adjoint_loss_gradient_y(*k, X, Y, adj);
    EXPECT_TRUE(test::gradients_agree(gy, fdy, 1e-7))
        << "adjoints " << c[0] << c[1] << c[2] << " (Y)";

    // backward accumulates: a second call adds the same gradients again (bitwise, since x + x = 2x).
    Vector gp2 = gp;
    Matrix gy2 = gy;
    k->backward(X, Y, adj, &gp2, &gy2);
    EXPECT_EQ(max_abs(gp2 - 2.0 * gp), 0.0);
    EXPECT_EQ(max_abs(gy2 - 2.0 * gy), 0.0);
  }
  // Wrong adjoint shapes are errors, not silent garbage.
  KernelStacks bad;
  bad.d1 = Matrix::Zero(N, M);
  Vector g;
  EXPECT_THROW(k->backward(X, Y, bad, &g, nullptr), Error);
}

TEST(DeepScalarKernel, BadInputIsAnErrorNamingTheKeyOrTheDimension) {
  Registry& reg = test::plugin_registry();
  auto expect = [&](const std::string& toml, const std::string& key, Index dim) {
    try {
      reg.make_kernel(test::config_from("type = \"deep_scalar\"\n" + toml), BuildContext{dim});
      ADD_FAILURE() << toml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect("width = 0", "width", 2);
  expect("layers = 0", "layers", 2);
  expect("on = \"linear\"", "on", 2);  // no such key on this kernel
  expect("", "dimension", -1);
  KernelPtr k = make_kernel(2, 7);
  EXPECT_THROW(k->gram(Matrix::Zero(3, 3), Matrix::Zero(2, 3)), DataError);
}

// DKEF's meta-gradient (docs/math.md §5) with this kernel, for every parameter group, against central
// differences of the validation loss; M = 1 is DKEF-L-50-1's setting, M = 4 the general one.
void check_closed_form(Index M) {
  Registry& reg = test::plugin_registry();
  KernelPtr kernel = make_kernel(2, 11);
  BaseMeasurePtr base = reg.make_base_measure(
      test::config_from("type = \"generalized_normal\"\nstd = 2.0\nbeta = 2.0"), BuildContext{2});
  // A non-symmetric q0 (μ ≠ 0, β ≠ 2) so its gradient has no vanishing terms.
  Vector bt = base->parameters();
  bt += 0.1 * RandomStream(12, "base").normal_matrix(bt.size(), 1).col(0);
  base->set_parameters(bt);
  RandomStream rng(13, "closed-form");
  const Matrix train = rng.normal_matrix(12, 2), validation = rng.normal_matrix(9, 2),
               Z = rng.normal_matrix(M, 2);
  const double la = 0.05, lc = 0.02;
  auto loss = [&](const Kernel& k, const BaseMeasure& q, const Matrix& z, double a, double c) {
    return closed_form_validation_loss(k, q, train, validation, z, a, c, Context(1, 1));
  };
  const ClosedFormGradient g =
      closed_form_validation_gradient(*kernel, *base, train, validation, Z, la, lc, Context(1, 1));
  EXPECT_NEAR(g.loss, loss(*kernel, *base, Z, la, lc), 1e-12 * std::max(1.0, std::abs(g.loss)));
  ASSERT_EQ(g.alpha.size(), M);
  // Central differences with h = 1e-5 on a smooth function: error ~1e-9 in absolute terms for O(1)
  // values; relative 1e-6 leaves room for the condition number of the Cholesky solve.
  auto tol = [](const Vector& fd) { return 1e-6 * std::max(1.0, fd.cwiseAbs().maxCoeff()); };

  KernelPtr probe = make_kernel(2, 11);
  const Vector fd_k = test::numerical_gradient(
      [&](const Vector& t) {
        probe->set_parameters(t);
        return loss(*probe, *base, Z, la, lc);
      },
      kernel->parameters());
  EXPECT_TRUE(test::gradients_agree(g.kernel, fd_k, 1e-6)) << "kernel parameters, M = " << M;

  Eigen::Map<const Vector> z0(Z.data(), Z.size());
  const Vector fd_z = test::numerical_gradient(
      [&](const Vector& z) { return loss(*kernel, *base, Eigen::Map<const Matrix>(z.data(), M, 2), la, lc); },
      Vector(z0));
  Eigen::Map<const Vector> gz(g.inducing.data(), g.inducing.size());
  EXPECT_TRUE(test::gradients_agree(gz, fd_z, 1e-6)) << "inducing points, M = " << M;

  Vector ll(2);
  ll << std::log(la), std::log(lc);
  const Vector fd_l = test::numerical_gradient(
      [&](const Vector& l) { return loss(*kernel, *base, Z, std::exp(l[0]), std::exp(l[1])); }, ll);
  EXPECT_NEAR(g.log_lambda_alpha, fd_l[0], tol(fd_l)) << "log lambda_alpha, M = " << M;
  EXPECT_NEAR(g.log_lambda_c, fd_l[1], tol(fd_l)) << "log lambda_C, M = " << M;

  BaseMeasurePtr qprobe = reg.make_base_measure(
      test::config_from("type = \"generalized_normal\"\nstd = 2.0\nbeta = 2.0"), BuildContext{2});
  const Vector fd_b = test::numerical_gradient(
      [&](const Vector& t) {
        qprobe->set_parameters(t);
        return loss(*kernel, *qprobe, Z, la, lc);
      },
      bt);
  EXPECT_TRUE(test::gradients_agree(g.base, fd_b, 1e-6)) << "base measure, M = " << M;
}

TEST(DeepScalarKernel, ClosedFormMetaGradientMatchesCentralDifferencesWithOneInducingPoint) {
  check_closed_form(1);
}

TEST(DeepScalarKernel, ClosedFormMetaGradientMatchesCentralDifferencesWithFourInducingPoints) {
  check_closed_form(4);
}

// DKEF-L-50-1's estimator setting (dkef, M = 1, generalised-normal q0) on banana samples, in process:
// the meta-learning moves the kernel, and the saved model reloads with bitwise identical outputs.
TEST(DeepScalarKernel, DkefWithOneInducingPointLearnsSavesAndReloadsBitwise) {
  Registry& reg = test::plugin_registry();
  BuildContext data_ctx;
  data_ctx.registry = &reg;
  RandomStream data_rng(21, "data");
  const Matrix all = reg.make_data_source(test::config_from("type = \"synthetic/banana\"\nn = 700"), data_ctx)
                         ->load(data_rng)
                         .samples;
  const Matrix train = all.topRows(500), validation = all.middleRows(500, 150),
               test_rows = all.bottomRows(50);

  RandomStream init(22, "init");
  KernelPtr kernel = reg.make_kernel(test::config_from(kernel_toml(3, 10)), BuildContext{2, &reg, &init});
  const Vector theta0 = kernel->parameters();
  BaseMeasurePtr base =
      reg.make_base_measure(test::config_from("type = \"generalized_normal\"\nstd = 2.0"), BuildContext{2});
  EstimatorPtr est = reg.make_estimator(test::config_from(R"(type = "dkef"
inducing_points = 1
batch_fit = 50
batch_loss = 50
max_steps = 30
patience = 30
eval_every = 10
validation_fit_rows = 200
stage2_steps = 5
learning_rate = 0.01)"),
                                        EstimatorParts{kernel, base, &reg}, {});
  Context fit_context = Context(23, 2).child("fit");
  FitReport report;
  ModelPtr model = est->fit(FitInput{train, validation, fit_context, report});
  EXPECT_GT(report.iterations, 0);

  const fs::path dir = test::temp_dir("deep-scalar-dkef") / "m";
  save_model(*model, dir);
  EXPECT_EQ(read_npy(dir / "inducing_points.npy").rows(), 1);
  const Matrix theta = read_npy(dir / "kernel_parameters.npy");
  ASSERT_EQ(theta.size(), theta0.size());
  EXPECT_GT((Eigen::Map<const Vector>(theta.data(), theta.size()) - theta0).cwiseAbs().maxCoeff(), 1e-4)
      << "stage 1 must move the kernel's parameters";

  ModelPtr back = load_model(dir, reg);
  EXPECT_EQ(back->dim(), 2);
  EXPECT_EQ(max_abs(back->log_unnormalized(test_rows) - model->log_unnormalized(test_rows)), 0.0);
  Matrix s1, l1, s2, l2;
  model->score_and_laplacian(test_rows, s1, l1);
  back->score_and_laplacian(test_rows, s2, l2);
  EXPECT_EQ(max_abs(s2 - s1), 0.0);
  EXPECT_EQ(max_abs(l2 - l1), 0.0);
  EXPECT_TRUE(s1.allFinite() && l1.allFinite());
}

// The same through the `kef` command: a pipeline on synthetic/banana with DKEF-L-50-1's model block
// (smaller network, few steps) runs, reports finite metrics, writes a model that loads, and gives the
// same results on 1 and 3 threads.
TEST(DeepScalarKernel, DkefPipelineOnBananaRunsAndSavesTheModel) {
  const fs::path dir = test::temp_dir("deep-scalar-pipeline");
  const std::string text = test::PipelineText()
      .seed(12)
      .banana(900, 200, 200)
      .model("name = \"DKEF-L-50-1\"\n[model.estimator]\ntype = \"dkef\"\ninducing_points = 1\nbatch_fit = 50\nbatch_loss = 50\nmax_steps = 20\npatience = 20\neval_every = 10\nvalidation_fit_rows = 200\nstage2_steps = 5\n[model.kernel]\ntype = \"deep_scalar\"\nlayers = 3\nwidth = 8\n[model.base_measure]\ntype = \"generalized_normal\"\nstd = 2.0")
      .evaluate("score_matching_loss")
      .evaluate("fisher_divergence")
      .str();
  std::ofstream(dir / "p.toml") << text;
  // Twice, on 1 and 3 threads: the dkef estimator runs the kernel's passes in parallel over row blocks,
  // and the results must not depend on the thread count.
  for (const char* threads : {"1", "3"}) {
    std::string out;
    const int st = test::run_command(test::kef_executable() + " run " + (dir / "p.toml").string() +
                                         " --quiet --threads " + threads + " --output " +
                                         (dir / ("out" + std::string(threads))).string(),
                                     &out);
    ASSERT_EQ(st, 0) << out;
  }
  auto results = [&](const char* run) {
    std::ifstream in(dir / run / "results.json");
    return nlohmann::json::parse(in)["models"]["DKEF-L-50-1"]["metrics"];
  };
  const auto metrics = results("out1");
  for (const char* name : {"score_matching_loss", "fisher_divergence"}) {
    ASSERT_TRUE(metrics.contains(name)) << metrics.dump();
    EXPECT_TRUE(std::isfinite(metrics[name].get<double>())) << name;
  }
  EXPECT_EQ(metrics, results("out3"));
  const fs::path m1 = dir / "out1/models/DKEF-L-50-1", m3 = dir / "out3/models/DKEF-L-50-1";
  EXPECT_EQ(read_npy(m1 / "kernel_parameters.npy"), read_npy(m3 / "kernel_parameters.npy"));
  EXPECT_EQ(read_npy(m1 / "alpha.npy"), read_npy(m3 / "alpha.npy"));
  ModelPtr m = load_model(m1, test::plugin_registry());
  Matrix X = RandomStream(31, "x").normal_matrix(5, 2);
  EXPECT_TRUE(m->log_unnormalized(X).allFinite());
  // The saved kernel is DKEF-L-50-1's: L = 3 layers of width 8 with the skip (Mlp layout), w, b.
  const Index P = Mlp(2, 8, 3).parameter_count();
  EXPECT_EQ(read_npy(m1 / "kernel_parameters.npy").size(), P + 8 + 1);
}

}  // namespace
}  // namespace kef
