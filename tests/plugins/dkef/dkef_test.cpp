// The dkef estimator end to end on small problems: it learns, early-stops, reloads, is deterministic,
// and rejects bad input naming the key.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

std::string pipeline(const std::string& kernel, const std::string& extra) {
  return test::PipelineText()
      .seed(12)
      .banana(1500, 300, 200)
      .model("name = \"m\"\n[model.estimator]\ntype = \"dkef\"\ninducing_points = 40\nbatch_fit = 50\nbatch_loss = 50\nmax_steps = 150\npatience = 60\neval_every = 10\nvalidation_fit_rows = 400\nstage2_steps = 10\nlearning_rate = 0.03")
      .str() + extra + "\n[model.kernel]\n" + kernel + R"(
[model.base_measure]
type = "gaussian"
std = 4.0
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "fisher_divergence"
)";
}

nlohmann::json run(const std::string& text, const fs::path& dir, const std::string& args = "") {
  fs::path cfg = dir / "p.toml";
  std::ofstream(cfg) << text;
  std::string out;
  int st = test::run_command(test::kef_executable() + " run " + cfg.string() + " --quiet --output " +
                                 (dir / "out").string() + " " + args,
                             &out);
  EXPECT_EQ(st, 0) << out;
  std::ifstream in(dir / "out" / "results.json");
  return nlohmann::json::parse(in);
}

TEST(Dkef, KefGLearnsTheBandwidthAndImprovesTheValidationLoss) {
  fs::path dir = test::temp_dir("dkef-g");
  auto j = run(pipeline("type = \"gaussian\"\nsigma = 0.3", ""), dir);
  const auto& fit = j["models"]["m"]["fit"];
  const auto& curve = fit["curve"];
  ASSERT_GE(curve.size(), 2u);
  const double first = curve[0][1].get<double>();
  EXPECT_LT(fit["stage1_validation_loss"].get<double>(), first) << "stage 1 must improve on the initial kernel";
  EXPECT_GT(fit["iterations"].get<long>(), 0);
  // The learned σ is saved with the model and differs from the initial 0.3.
  Matrix theta = read_npy(dir / "out/models/m/kernel_parameters.npy");
  EXPECT_GT(std::abs(std::exp(theta(0, 0)) - 0.3), 0.05);
  // Reloads with identical outputs.
  ModelPtr m = load_model(dir / "out/models/m", test::plugin_registry());
  EXPECT_EQ(m->dim(), 2);
}

TEST(Dkef, DeepKernelRunsAndIsDeterministicAcrossThreads) {
  fs::path a = test::temp_dir("dkef-a"), b = test::temp_dir("dkef-b");
  const std::string kernel = "type = \"deep\"\ncomponents = 2\nlayers = 2\nwidth = 8";
  std::string text = pipeline(kernel, "");
  text.replace(text.find("max_steps = 150"), 15, "max_steps = 40");
  auto ja = run(text, a, "--threads 1");
  auto jb = run(text, b, "--threads 2");
  EXPECT_EQ(ja["models"]["m"]["metrics"], jb["models"]["m"]["metrics"]);
  EXPECT_EQ(read_npy(a / "out/models/m/alpha.npy"), read_npy(b / "out/models/m/alpha.npy"));
  EXPECT_TRUE(fs::exists(a / "out/models/m/kernel_parameters.npy"));
}

TEST(Dkef, LearnsTheGeneralizedNormalBaseMeasureUnlessTold) {
  for (const bool learn : {true, false}) {
    fs::path dir = test::temp_dir("dkef-gn");
    std::string text = pipeline("type = \"gaussian\"\nsigma = 1.0", "");
    const std::string base = "type = \"gaussian\"\nstd = 4.0";
    text.replace(text.find(base), base.size(),
                 std::string("type = \"generalized_normal\"\nstd = 3.0\nbeta = 2.0\nlearn = ") + (learn ? "true" : "false"));
    run(text, dir);
    Matrix theta = read_npy(dir / "out/models/m/base_measure_parameters.npy");
    ASSERT_EQ(theta.size(), 6);  // μ, log σ, b for D = 2
    // Initial values: μ = 0, log σ = log 3, b = log(β − 1) = 0.
    const double moved = std::abs(theta(0)) + std::abs(theta(2) - std::log(3.0)) + std::abs(theta(4));
    if (learn) {
      EXPECT_GT(moved, 1e-3) << "the base measure must learn";
    } else {
      EXPECT_EQ(moved, 0.0) << "learn = false keeps q0 fixed";
    }
  }
}

// Stage 2's memory budget only decides whether the derivative stacks are kept or recomputed; the
// fit must be bitwise the same. q0 learns (generalized_normal), so stage 2 needs the stacks:
// 8·M·D·(2 N_fit + N_val) = 8·40·2·2200 bytes ≈ 1.4 MB fit the default 512 MB, and 0 recomputes them.
TEST(Dkef, Stage2MemoryBudgetChangesHowNotWhat) {
  std::string base = pipeline("type = \"gaussian\"\nsigma = 1.0", "");
  const std::string gaussian = "type = \"gaussian\"\nstd = 4.0";
  base.replace(base.find(gaussian), gaussian.size(),
               "type = \"generalized_normal\"\nstd = 3.0\nbeta = 2.0\nlearn = true");
  base.replace(base.find("max_steps = 150"), 15, "max_steps = 20");  // stage 1 is not under test
  std::string zero = base;
  zero.replace(zero.find("stage2_steps = 10"), 17, "stage2_steps = 10\nstage2_memory_mb = 0");
  fs::path a = test::temp_dir("dkef-mem-default"), b = test::temp_dir("dkef-mem-zero");
  auto ja = run(base, a);
  auto jb = run(zero, b);
  const auto& fa = ja["models"]["m"]["fit"];
  const auto& fb = jb["models"]["m"]["fit"];
  EXPECT_EQ(fa["stage2_stacks_in_memory"].get<double>(), 1.0);
  EXPECT_EQ(fb["stage2_stacks_in_memory"].get<double>(), 0.0);
  for (const char* key : {"stage2_validation_loss", "lambda_alpha", "lambda_c"})
    EXPECT_EQ(fa[key].get<double>(), fb[key].get<double>()) << key;
  EXPECT_EQ(ja["models"]["m"]["metrics"], jb["models"]["m"]["metrics"]);
  EXPECT_EQ(read_npy(a / "out/models/m/alpha.npy"), read_npy(b / "out/models/m/alpha.npy"));
  EXPECT_EQ(read_npy(a / "out/models/m/base_measure_parameters.npy"),
            read_npy(b / "out/models/m/base_measure_parameters.npy"));
}

TEST(Dkef, AKernelWithoutGradientsTrainsWhatTheUserKeepsLearnable) {
  // The groups the IMQ kernel cannot give gradients for are left out explicitly: then it fits.
  fs::path dir = test::temp_dir("dkef-imq");
  std::string text = pipeline("type = \"imq\"", "train = [\"lambda\", \"base_measure\"]");
  text.replace(text.find("max_steps = 150"), 15, "max_steps = 20");
  nlohmann::json r = run(text, dir);
  EXPECT_TRUE(r["models"]["m"]["metrics"].contains("score_matching_loss")) << r.dump(2);
}

// `eval_every` is the validation schedule: the validation loss (the curve) is taken after every
// eval_every-th stage-1 step and nowhere else, so the best step is one of them; eval_every = 1 is the
// reference code's schedule (validation after every step).
TEST(Dkef, EvalEverySetsWhenTheValidationLossIsTaken) {
  for (const int every : {1, 7}) {
    fs::path dir = test::temp_dir("dkef-every-" + std::to_string(every));
    std::string text = pipeline("type = \"gaussian\"\nsigma = 0.3", "");
    text.replace(text.find("max_steps = 150"), 15, "max_steps = 30");
    text.replace(text.find("eval_every = 10"), 15, "eval_every = " + std::to_string(every));
    auto j = run(text, dir);
    const auto& fit = j["models"]["m"]["fit"];
    const auto& curve = fit["curve"];
    ASSERT_EQ(fit["iterations"].get<long>(), 30) << "patience 60 must not stop 30 steps";
    std::vector<long> steps;
    for (const auto& point : curve) steps.push_back(point[0].get<long>());
    std::vector<long> expected;
    for (long k = 0; k <= 30; k += every) expected.push_back(k);
    EXPECT_EQ(steps, expected) << "eval_every = " << every;
    EXPECT_EQ(fit["best_step"].get<long>() % every, 0);
  }
}

// `gradient_clip_norm` (the reference code clips at global norm 100): off by default; a norm above
// every step's gradient changes nothing, bitwise; a norm below it clips every step and changes the fit.
TEST(Dkef, GradientClipNormClipsStageOneSteps) {
  std::string base = pipeline("type = \"gaussian\"\nsigma = 0.3", "");
  base.replace(base.find("max_steps = 150"), 15, "max_steps = 30");
  auto with_clip = [&](const std::string& norm) {
    std::string text = base;
    text.replace(text.find("learning_rate = 0.03"), 20, "learning_rate = 0.03\ngradient_clip_norm = " + norm);
    return text;
  };
  fs::path off = test::temp_dir("dkef-clip-off"), big = test::temp_dir("dkef-clip-big"),
           tiny = test::temp_dir("dkef-clip-tiny");
  auto j_off = run(base, off);
  auto j_big = run(with_clip("1e300"), big);
  auto j_tiny = run(with_clip("1e-3"), tiny);
  const auto& f_off = j_off["models"]["m"]["fit"];
  const auto& f_big = j_big["models"]["m"]["fit"];
  const auto& f_tiny = j_tiny["models"]["m"]["fit"];
  EXPECT_EQ(f_off["clipped_steps"].get<double>(), 0.0);
  EXPECT_EQ(f_big["clipped_steps"].get<double>(), 0.0);
  EXPECT_EQ(j_off["models"]["m"]["metrics"], j_big["models"]["m"]["metrics"]);
  EXPECT_EQ(read_npy(off / "out/models/m/alpha.npy"), read_npy(big / "out/models/m/alpha.npy"));
  // The gradients here are far above 1e-3 (the reported pre-clipping maximum says so), so every step
  // is clipped, and Adam's steps, normalised differently, give another fit.
  EXPECT_GT(f_off["max_gradient_norm"].get<double>(), 1e-2);
  EXPECT_EQ(f_tiny["clipped_steps"].get<double>(), f_tiny["iterations"].get<double>());
  EXPECT_NE(f_tiny["stage1_validation_loss"].get<double>(), f_off["stage1_validation_loss"].get<double>());
}

TEST(Dkef, BadInputIsAConfigErrorNamingTheKey) {
  fs::path dir = test::temp_dir("dkef-bad");
  struct Case {
    std::string from, to, expect;
  } cases[] = {
      {"learning_rate = 0.03", "learning_rate = 0", "learning_rate"},
      {"batch_fit = 50", "batch_fit = 990", "batch_fit"},  // 990 + 50 > the 1000 fit rows
      {"inducing_points = 40", "inducing_points = 5000", "inducing_points"},
      {"validation = 200", "validation = 0", "validation"},
      {"type = \"gaussian\"\nsigma = 0.3", "type = \"deep\"\nwidth = 0", "width"},
      {"type = \"gaussian\"\nsigma = 0.3", "type = \"deep\"\ncomponents = 0", "components"},
      {"stage2_steps = 10", "stage2_steps = 10\nstage2_memory_mb = -1", "stage2_memory_mb"},
      {"stage2_steps = 10", "stage2_steps = 10\nstage2_memory_mb = 0.5", "stage2_memory_mb"},
      {"stage2_steps = 10", "stage2_steps = 10\ngradient_clip_norm = -1", "gradient_clip_norm"},
      {"stage2_steps = 10", "stage2_steps = 10\neval_every = 0", "eval_every"},
      // kef 0.2 trained only λ with a kernel that cannot give the points' (or its own) gradients.
      {"type = \"gaussian\"\nsigma = 0.3", "type = \"imq\"", "gives no gradients for the inducing points"},
  };
  for (const auto& c : cases) {
    std::string text = pipeline("type = \"gaussian\"\nsigma = 0.3", "");
    auto pos = text.find(c.from);
    ASSERT_NE(pos, std::string::npos) << c.from;
    text.replace(pos, c.from.size(), c.to);
    fs::path cfg = dir / "p.toml";
    std::ofstream(cfg) << text;
    std::string out;
    int st = test::run_command(test::kef_executable() + " run " + cfg.string() + " --quiet --output " + (dir / "o").string(), &out);
    EXPECT_EQ(st, 2) << c.to << ": " << out;
    EXPECT_NE(out.find(c.expect), std::string::npos) << c.to << ": " << out;
    EXPECT_FALSE(fs::exists(dir / "o"));
  }
}

}  // namespace
}  // namespace kef
