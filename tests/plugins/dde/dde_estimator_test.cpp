// The dde estimator through the loaded plugin: results depend on the seed and not on the thread count,
// a saved model (networks included) reloads bitwise and samples the same, the loss curves are reported
// per block of iterations, bad keys are refused naming the key (exit 2 from `kef run`), and the example
// pipeline configs/examples/dde.toml runs, with its curves in results.json and samples from the saved
// model.
#include "dde_estimator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dde_core.hpp"
#include "dde_model.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

EstimatorPtr make(const std::string& keys) {
  Registry& reg = test::plugin_registry();
  return reg.make_estimator(test::config_from(keys), EstimatorParts{nullptr, nullptr, &reg}, {});
}

struct DdeFit {
  ModelPtr model;
  FitReport report;
};

// The test's own build of the estimator (so that models can be cast to the DdeModel type compiled here;
// the plugin's copy is another type to RTTI); the registry's build is used for key validation.
DdeFit fit_dde(const std::string& keys, const Matrix& train, std::uint64_t seed, int threads) {
  auto est = std::make_unique<dde::DdeEstimator>(test::config_from(keys));
  Context context = Context(seed, threads).child("fit");
  DdeFit f;
  const Matrix none(0, train.cols());
  FitInput in{train, none, context, f.report};
  f.model = est->fit(in);
  return f;
}

Matrix blobs(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "dde-blobs");
  Matrix X = 0.5 * rng.normal_matrix(n, 2);
  for (Index i = 0; i < n; i += 2) X(i, 0) += 2.0;
  return X;
}

const char* kSmallDde =
    "type = \"dde\"\niterations = 25\nreport_every = 10\nwidth = 16\nnoise_dim = 8\nbatch_size = 40\n"
    "learning_rate = 1e-3\n";

TEST(DdeEstimator, SeedNotThreadsDecidesAndTheModelReloadsBitwise) {
  const Matrix train = blobs(120, 1), probe = blobs(30, 2);
  const DdeFit a = fit_dde(kSmallDde, train, 5, 1), b = fit_dde(kSmallDde, train, 5, 2),
               c = fit_dde(kSmallDde, train, 6, 2);
  EXPECT_EQ(a.model->log_unnormalized(probe), b.model->log_unnormalized(probe));
  EXPECT_EQ(a.report.curves, b.report.curves);
  EXPECT_NE(a.model->log_unnormalized(probe), c.model->log_unnormalized(probe));
  const auto& m = dynamic_cast<const dde::DdeModel&>(*a.model);
  const auto& mb = dynamic_cast<const dde::DdeModel&>(*b.model);
  EXPECT_EQ(m.generator().parameters(), mb.generator().parameters());
  EXPECT_EQ(m.dual().parameters(), mb.dual().parameters());

  // Curves: one point per block of report_every iterations and one for the last, partial block.
  ASSERT_EQ(a.report.curves.at("f_loss").size(), 3u);
  EXPECT_EQ(a.report.curves.at("sampler_loss").back().first, 25);
  EXPECT_EQ(a.report.curves.at("dual_loss")[1].first, 20);
  EXPECT_EQ(a.report.iterations, 25);

  const auto dir = test::temp_dir("dde-save") / "m";
  save_model(*a.model, dir);
  const ModelPtr back = load_model(dir, test::plugin_registry());  // through the plugin's loader
  EXPECT_EQ(back->type_name(), "dde");
  const ModelPtr back_here = dde::DdeModel::load(ModelReader(dir), test::plugin_registry());
  EXPECT_EQ(back->log_unnormalized(probe), a.model->log_unnormalized(probe));
  EXPECT_EQ(back->score(probe), a.model->score(probe));
  Matrix s1, l1, s2, l2;
  back->score_and_laplacian(probe, s1, l1);
  a.model->score_and_laplacian(probe, s2, l2);
  EXPECT_EQ(l1, l2);
  const auto& mr = dynamic_cast<const dde::DdeModel&>(*back_here);
  EXPECT_EQ(mr.expansion().alpha, m.expansion().alpha);
  EXPECT_EQ(mr.expansion().points, m.expansion().points);
  EXPECT_EQ(mr.expansion().gamma, m.expansion().gamma);
  EXPECT_EQ(mr.generator().parameters(), m.generator().parameters());
  EXPECT_EQ(mr.dual().parameters(), m.dual().parameters());
  RandomStream r1(9, "draw"), r2(9, "draw");
  EXPECT_EQ(back->sample(50, r1), a.model->sample(50, r2));
}

// log p~ = λ f + log p0: the box's log-volume inside, −∞ outside; the score is λ∇f.
TEST(DdeEstimator, ModelIsLambdaFPlusTheUniformBoxLogDensity) {
  const Matrix train = blobs(120, 3);
  const DdeFit a = fit_dde(std::string(kSmallDde) + "lambda = 2\n", train, 5, 1);
  const auto& m = dynamic_cast<const dde::DdeModel&>(*a.model);
  const Vector lo = train.colwise().minCoeff().transpose(), hi = train.colwise().maxCoeff().transpose();
  EXPECT_EQ(m.lo(), lo);
  EXPECT_EQ(m.hi(), hi);
  Matrix probe(2, 2);
  probe.row(0) = (0.5 * (lo + hi)).transpose();
  probe.row(1) = (hi + Vector::Ones(2)).transpose();
  const Vector lp = m.log_unnormalized(probe);
  const double log_volume = std::log((hi[0] - lo[0]) * (hi[1] - lo[1]));
  EXPECT_NEAR(lp[0], 2.0 * m.expansion().values(probe.topRows(1))[0] - log_volume, 1e-12);
  EXPECT_TRUE(std::isinf(lp[1]) && lp[1] < 0);
  EXPECT_EQ(m.in_support(probe), (std::vector<bool>{true, false}));
  const Matrix s = m.score(probe.topRows(1));
  EXPECT_NEAR((s - 2.0 * m.expansion().gradient(probe.topRows(1))).norm(), 0.0, 1e-15);
  const Matrix draws = [&] {
    RandomStream r(4, "draw");
    return m.sample(200, r);
  }();
  EXPECT_EQ(draws.rows(), 200);
  EXPECT_TRUE(draws.allFinite());
  // The draws are the sampler network's q, not p: the model must not claim an exact sampler.
  EXPECT_TRUE(m.can_sample());
  EXPECT_TRUE(m.facets().has(Facet::ApproximateSampler));
  EXPECT_FALSE(m.facets().has(Facet::Sampler));
}

// inducing_points = m: f has m distinct training rows as centres.
TEST(DdeEstimator, InducingPointsAreSeededTrainingRows) {
  const Matrix train = blobs(120, 4);
  const DdeFit a = fit_dde(std::string(kSmallDde) + "inducing_points = 30\n", train, 5, 1);
  const auto& m = dynamic_cast<const dde::DdeModel&>(*a.model);
  ASSERT_EQ(m.expansion().points.rows(), 30);
  for (Index i = 0; i < 30; ++i) {
    bool found = false;
    for (Index j = 0; j < train.rows() && !found; ++j) found = train.row(j) == m.expansion().points.row(i);
    EXPECT_TRUE(found) << i;
  }
  EXPECT_EQ(a.report.values.at("kernel_centres"), 30.0);
}

// sampler_correction reaches the model; the fit reports the sampler diagnostic on diagnostic_samples draws.
TEST(DdeEstimator, CorrectionKeyAndSamplerDiagnosticReported) {
  const Matrix train = blobs(120, 6);
  const DdeFit a = fit_dde(std::string(kSmallDde) +
                               "sampler_correction = \"importance\"\ncorrection_candidates = 4\n"
                               "diagnostic_samples = 500\n",
                           train, 5, 1);
  const auto& m = dynamic_cast<const dde::DdeModel&>(*a.model);
  EXPECT_TRUE(m.correction().importance);
  EXPECT_EQ(m.correction().candidates, 4);
  RandomStream rng(Context(5, 1).child("fit").rng().derive("diagnostic"));
  const dde::SamplerDiagnostic d = m.diagnose(500, rng);
  EXPECT_EQ(a.report.values.at("sampler_ess_fraction"), d.ess_fraction);
  EXPECT_EQ(a.report.values.at("sampler_kl_estimate"), d.kl);
  EXPECT_EQ(a.report.values.at("sampler_outside_box"), d.outside_box);
  ASSERT_EQ(a.report.notes.size(), 1u);
  EXPECT_TRUE(test::contains(a.report.notes[0], "sampler diagnostic on 500 draws")) << a.report.notes[0];
  const DdeFit b = fit_dde(std::string(kSmallDde) + "diagnostic_samples = 0\n", train, 5, 1);
  EXPECT_EQ(b.report.values.count("sampler_ess_fraction"), 0u);
  EXPECT_FALSE(dynamic_cast<const dde::DdeModel&>(*b.model).correction().importance);
}

TEST(DdeEstimator, BadKeysAreRefusedNamingTheKey) {
  for (const std::string bad :
       {"width = 0", "learning_rate = -1", "f_bd = 0", "clip_generator = 3", "dual_steps = 0", "widht = 3",
        "sampler_correction = \"mcmc\"", "correction_candidates = 1"}) {
    const std::string key = bad.substr(0, bad.find(' '));
    const std::string msg = test::message_of<ConfigError>([&] { make("type = \"dde\"\n" + bad + "\n"); });
    EXPECT_TRUE(test::contains(msg, key)) << bad << ": " << msg;
  }
  const Matrix train = blobs(20, 5);
  const std::string msg = test::message_of<ConfigError>(
      [&] { fit_dde("type = \"dde\"\ninducing_points = 50\niterations = 1\n", train, 5, 1); });
  EXPECT_TRUE(test::contains(msg, "inducing_points")) << msg;
  Matrix flat = train;
  flat.col(1).setConstant(1.0);
  const std::string msg2 = test::message_of<DataError>([&] { fit_dde(kSmallDde, flat, 5, 1); });
  EXPECT_TRUE(test::contains(msg2, "column 1")) << msg2;
}

// A diverging fit stops with an error naming the iteration, the step and the network, never zeroed.
TEST(DdeEstimator, NonFiniteLossIsAnErrorNamingTheStep) {
  const Matrix train = blobs(120, 7);
  const std::string msg = test::message_of<NumericalError>([&] {
    fit_dde("type = \"dde\"\niterations = 200\nwidth = 16\nnoise_dim = 8\nbatch_size = 40\n"
            "learning_rate = 1e12\nclip = 0\n",
            train, 5, 1);
  });
  // ν's first step on unclipped gradients at this rate overflows e^ν on the box draws.
  EXPECT_TRUE(test::contains(msg, "iteration 1, dual step (network ν): the loss is inf")) << msg;
}

// A finite loss with a non-finite gradient (e^ν's derivative overflowing) is named the same way; before,
// clip_global_norm's bare "the gradient norm is not finite" reached the user (DDE Table 1's grid at
// 45000 iterations).
TEST(DdeEstimator, NonFiniteGradientIsAnErrorNamingTheStep) {
  Vector g(4);
  g << 1.0, 2.0, std::numeric_limits<double>::infinity(), 0.5;
  const std::string msg = test::message_of<NumericalError>(
      [&] { dde::check_and_clip(g, 5.0, "model.dde", "dual step (network ν)", 1234); });
  EXPECT_TRUE(test::contains(msg, "model.dde: iteration 1234, dual step (network ν): the gradient is not finite "
                                  "(entry 2 of 4 is inf)"))
      << msg;
  Vector ok(2);
  ok << 30.0, 40.0;
  dde::check_and_clip(ok, 5.0, "model.dde", "f step", 1);
  EXPECT_NEAR(ok.norm(), 5.0, 1e-6);
  Vector unclipped = ok * 10.0;
  dde::check_and_clip(unclipped, 0.0, "model.dde", "f step", 1);
  EXPECT_EQ(unclipped, ok * 10.0);
  // Finite entries whose norm overflows (Table 1's grid with ν depth 4 at 45000 iterations).
  Vector huge = Vector::Constant(3, 1e200);
  const std::string msg2 = test::message_of<NumericalError>(
      [&] { dde::check_and_clip(huge, 5.0, "model.dde", "sampler step (network g)", 777); });
  EXPECT_TRUE(test::contains(msg2, "model.dde: iteration 777, sampler step (network g): the gradient's norm overflows"))
      << msg2;
}

TEST(DdeCli, BadKeyExitsTwoNamingIt) {
  const fs::path dir = test::temp_dir("dde-cli-bad");
  const fs::path cfg = test::write_file(dir, "p.toml", test::PipelineText()
      .no_seed()
      .data("type = \"synthetic/two_moons\"\nn = 200")
      .model("name = \"d\"\n[model.estimator]\ntype = \"dde\"\nrounds = 0")
      .str());
  auto r = test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "rounds")) << r.output;
}

// DDE's log-likelihood through the trustworthy normaliser (README, "Doubly dual embedding"): with p0 on
// a widened box (box_margin) the held-out rows have positive density; the defensive importance-sampling
// estimate of log Z, checked by AIS, agrees with midpoint quadrature of the same model (2-D) within
// their errors and is marked reliable. Without the margin, a test row outside the training box has
// log p = −∞ and the evaluator says which row.
TEST(DdeCli, LogLikelihoodAgreesWithQuadratureAndIsReliable) {
  const fs::path dir = test::temp_dir("dde-ll");
  const std::string head = test::PipelineText()
      .seed(2)
      .data("type = \"synthetic/two_moons\"\nn = 1200\nsplit = { test = 200, validation = 0 }")
      .model("name = \"d\"\n[model.estimator]\ntype = \"dde\"\niterations = 200\nwidth = 32\nnoise_dim = 8\nlearning_rate = 1e-3\ninducing_points = 100\ndiagnostic_samples = 0")
      .str();
  const std::string evaluators = R"([[evaluate]]
type = "log_likelihood"
samples = 200000
[[evaluate]]
type = "log_likelihood"
name = "quad"
method = "quadrature"
[output]
plot = false
)";
  const fs::path cfg = test::write_file(dir, "p.toml", head + "box_margin = 0.2\n" + evaluators);
  auto r =
      test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet --threads 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const Json m = test::read_json(dir / "out" / "results.json")["models"]["d"]["metrics"];
  const double is = m["log_normalizer"], is_se = m["log_normalizer_stderr"];
  const double quad = m["quad.log_normalizer"], quad_err = m["quad.log_normalizer_error"];
  EXPECT_LT(std::abs(is - quad), 4.0 * std::hypot(is_se, quad_err) + 1e-3) << m.dump();
  EXPECT_EQ(m["reliable"], 1.0) << m.dump();
  EXPECT_EQ(m["quad.reliable"], 1.0) << m.dump();
  EXPECT_TRUE(std::isfinite(m["log_likelihood"].get<double>()));

  const fs::path tight = test::write_file(dir, "tight.toml", head + evaluators);
  r = test::kef_cmd("run " + tight.string() + " --output " + (dir / "tight").string() +
                    " --quiet --threads 2");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(test::contains(r.output, "not finite (-inf) at test row")) << r.output;
}

// The example pipeline runs as shipped: curves in results.json, the MMD of the sampler's draws against
// the test rows, and draws from the saved model through `kef sample`.
TEST(DdeCli, ExamplePipelineRuns) {
  const fs::path dir = test::temp_dir("dde-example");
  const fs::path cfg = test::source_dir() / "configs" / "examples" / "dde.toml";
  auto r =
      test::kef_cmd("run " + cfg.string() + " --output " + (dir / "out").string() + " --quiet --threads 1");
  ASSERT_EQ(r.status, 0) << r.output;
  const Json j = test::read_json(dir / "out" / "results.json");
  const Json& m = j["models"]["dde"];
  for (const char* c : {"f_loss", "dual_loss", "sampler_loss"}) {
    ASSERT_TRUE(m["fit"]["curves"][c].is_array()) << m.dump();
    EXPECT_EQ(m["fit"]["curves"][c].size(), 6u);
    EXPECT_EQ(m["fit"]["curves"][c].back()[0], 300);
  }
  EXPECT_EQ(m["fit"]["iterations"], 300);
  ASSERT_TRUE(m["metrics"]["mmd2_unbiased"].is_number()) << m.dump();
  // The sampler network only approximates the model: the MMD says it measured the sampler.
  EXPECT_EQ(m["metrics"]["sampler_approximate"], 1.0) << m.dump();
  EXPECT_TRUE(m["fit"]["sampler_ess_fraction"].is_number()) << m.dump();
  std::cout << "example: mmd2_unbiased " << m["metrics"]["mmd2_unbiased"] << ", fit seconds " << m["fit"]["seconds"] << "\n";
  const fs::path out = dir / "samples.npy";
  auto s = test::kef_cmd("sample " + (dir / "out" / "models" / "dde").string() + " -n 300 --out " +
                         out.string() + " --seed 5");
  ASSERT_EQ(s.status, 0) << s.output;
  EXPECT_TRUE(test::contains(s.output, "approximate sampler")) << s.output;
  EXPECT_FALSE(test::contains(s.output, "exact sampler")) << s.output;
  const Matrix x = read_npy(out);
  EXPECT_EQ(x.rows(), 300);
  EXPECT_EQ(x.cols(), 2);
  EXPECT_TRUE(x.allFinite());
}

}  // namespace
}  // namespace kef
