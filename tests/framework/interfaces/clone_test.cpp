// Components are values: a clone shares no mutable state with the original, for every registered
// kernel, base measure and feature map, and an estimator's fit returns a model that a later fit of
// the same estimator (or a change to its parts) cannot change.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "kef/error.hpp"
#include "kef/feature_map.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

constexpr Index kDim = 2;

Config component_config(const std::string& type) { return test::config_from("type = \"" + type + "\"\n"); }

// Everything a component computes at fixed inputs, to compare bitwise.
std::vector<Matrix> kernel_outputs(const Kernel& k, const Matrix& X, const Matrix& Y) {
  KernelStacks s;
  k.derivatives(X, Y, 2, s);
  return {k.gram(X, Y), s.value, s.d1, s.d2, k.parameters()};
}
std::vector<Matrix> base_outputs(const BaseMeasure& b, const Matrix& X) {
  Matrix d1, d2;
  b.derivatives(X, d1, d2);
  return {b.log_density(X), d1, d2, b.parameters()};
}
std::vector<Matrix> feature_outputs(const FeatureMap& f, const Matrix& X) {
  FeatureStacks s;
  f.forward(X, 2, s);
  std::vector<Matrix> out{s.features, f.parameters()};
  for (const Matrix& m : s.J) out.push_back(m);
  for (const Matrix& m : s.S) out.push_back(m);
  return out;
}

void expect_bitwise(const std::vector<Matrix>& a, const std::vector<Matrix>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].rows(), b[i].rows()) << what << " output " << i;
    ASSERT_EQ(a[i].cols(), b[i].cols()) << what << " output " << i;
    EXPECT_TRUE(a[i] == b[i]) << what << " output " << i << " differs";
  }
}

// Moves every parameter; a no-op for components without parameters.
template <class C>
void perturb(C& c) {
  if (c.parameter_count() == 0) return;
  c.set_parameters((c.parameters().array() + 0.25).matrix());
}

// The generic check: clone equals the original; changing the clone leaves the original as it was.
// `outputs` evaluates a component at fixed inputs.
template <class C, class Outputs>
void check_clone(C& original, Outputs outputs, const std::string& what) {
  const auto before = outputs(original);
  auto copy = original.clone();
  ASSERT_TRUE(copy) << what;
  EXPECT_NE(static_cast<const void*>(copy.get()), static_cast<const void*>(&original)) << what;
  EXPECT_EQ(copy->type_name(), original.type_name()) << what;
  EXPECT_EQ(copy->config().to_toml(), original.config().to_toml()) << what;
  expect_bitwise(outputs(*copy), before, what + ": clone before the change");
  perturb(*copy);
  expect_bitwise(outputs(original), before, what + ": original after changing the clone");
  if (copy->parameter_count() > 0) {
    EXPECT_FALSE(outputs(*copy).back() == before.back()) << what << ": the change had no effect";
    // And the other way round: the clone keeps its values when the original changes.
    const auto changed = outputs(*copy);
    perturb(original);
    expect_bitwise(outputs(*copy), changed, what + ": clone after changing the original");
  }
}

TEST(Clone, EveryRegisteredKernelIsAValue) {
  Registry& reg = test::plugin_registry();
  const auto pts = test::random_points(7, 5, kDim, 11, "clone-kernel");
  const auto types = reg.components(Kernel::kInterface);
  ASSERT_GE(types.size(), 4u);
  for (const ComponentInfo& info : types) {
    SCOPED_TRACE(info.type);
    RandomStream rng(5, "clone/" + info.type);
    KernelPtr k = reg.make_kernel(component_config(info.type), BuildContext{kDim, &reg, &rng});
    // Fill any cache the kernel keeps for its second argument, so that a shared cache would show.
    (void)k->gram(pts.X, pts.Y);
    check_clone(
        *k, [&](const Kernel& c) { return kernel_outputs(c, pts.X, pts.Y); }, "kernel " + info.type);
  }
}

TEST(Clone, EveryRegisteredBaseMeasureIsAValue) {
  Registry& reg = test::plugin_registry();
  const auto pts = test::random_points(9, 1, kDim, 12, "clone-base");
  const auto types = reg.components(BaseMeasure::kInterface);
  ASSERT_GE(types.size(), 2u);
  for (const ComponentInfo& info : types) {
    SCOPED_TRACE(info.type);
    RandomStream rng(5, "clone/" + info.type);
    BaseMeasurePtr b = reg.make_base_measure(component_config(info.type), BuildContext{kDim, &reg, &rng});
    b->check_dimension(kDim);
    check_clone(
        *b, [&](const BaseMeasure& c) { return base_outputs(c, pts.X); }, "base measure " + info.type);
  }
}

TEST(Clone, EveryRegisteredFeatureMapIsAValue) {
  Registry& reg = test::plugin_registry();
  const auto pts = test::random_points(6, 1, kDim, 13, "clone-features");
  const auto types = reg.components(FeatureMap::kInterface);
  ASSERT_GE(types.size(), 1u);
  for (const ComponentInfo& info : types) {
    SCOPED_TRACE(info.type);
    RandomStream rng(5, "clone/" + info.type);
    auto f = reg.make<FeatureMap>(component_config(info.type), BuildContext{kDim, &reg, &rng});
    check_clone(
        *f, [&](const FeatureMap& c) { return feature_outputs(c, pts.X); }, "feature map " + info.type);
  }
}

// initialize(rng) after clone() equals building with rng: what cluster_mixture relies on to give each
// cluster a fresh kernel from its own stream.
TEST(Clone, CloneThenInitializeEqualsABuildWithThatStream) {
  Registry& reg = test::plugin_registry();
  const auto pts = test::random_points(5, 4, kDim, 14, "clone-init");
  for (const ComponentInfo& info : reg.components(Kernel::kInterface)) {
    SCOPED_TRACE(info.type);
    RandomStream a(5, "prototype"), b(9, "cluster/1/init");
    KernelPtr prototype = reg.make_kernel(component_config(info.type), BuildContext{kDim, &reg, &a});
    KernelPtr fresh = reg.make_kernel(component_config(info.type), BuildContext{kDim, &reg, &b});
    std::shared_ptr<Kernel> copy = prototype->clone();
    RandomStream b2(9, "cluster/1/init");
    copy->initialize(b2);
    expect_bitwise(kernel_outputs(*copy, pts.X, pts.Y), kernel_outputs(*fresh, pts.X, pts.Y), info.type);
  }
}

// ---- estimators ----

Matrix blob(Index n, double shift, std::uint64_t seed) {
  RandomStream rng(seed, "blob");
  Matrix X = rng.normal_matrix(n, kDim);
  X.col(0).array() += shift;
  return X;
}

struct Fitter {
  Registry& reg = test::plugin_registry();
  EstimatorPtr estimator;
  KernelPtr kernel;
  Fitter(const std::string& estimator_toml, const std::string& kernel_toml, const std::string& base_toml,
         Index train_rows) {
    RandomStream init(1, "init");
    BuildContext ctx{kDim, &reg, &init, train_rows};
    kernel = reg.make_kernel(test::config_from(kernel_toml), ctx);
    EstimatorParts parts{kernel, reg.make_base_measure(test::config_from(base_toml), ctx), &reg};
    estimator = reg.make_estimator(test::config_from(estimator_toml), parts, ctx);
  }
  static ModelPtr fit(Estimator& e, const Matrix& train, const Matrix& validation, std::uint64_t seed,
                      FitReport* out = nullptr) {
    // A root child named by its full path: the stream RandomStream(seed, "fit").
    Context context = Context(seed, 1).child("fit");
    FitReport report;
    ModelPtr model = e.fit(FitInput{train, validation, context, report});
    if (out) *out = report;
    return model;
  }
};

const char* kDkef = R"(type = "dkef"
inducing_points = 20
batch_fit = 30
batch_loss = 30
max_steps = 30
patience = 30
eval_every = 5
validation_fit_rows = 0
stage2_steps = 5
learning_rate = 0.05
)";

// kef 0.2: dkef trained the kernel the returned model shared, so a second fit changed the first
// model's log p~, and started from the first fit's kernel instead of the configured one.
TEST(Clone, RefittingDkefLeavesTheFirstModelUnchanged) {
  for (const char* kernel :
       {"type = \"gaussian\"\nsigma = 0.8", "type = \"deep\"\ncomponents = 1\nlayers = 1\nwidth = 4"}) {
    SCOPED_TRACE(kernel);
    Fitter f(kDkef, kernel, "type = \"generalized_normal\"\nstd = 3.0", 200);
    const Matrix X1 = blob(200, 0.0, 1), V1 = blob(80, 0.0, 2), X2 = blob(200, 3.0, 3), V2 = blob(80, 3.0, 4);
    const Matrix P = blob(25, 1.0, 5);
    const Vector kernel_before = f.kernel->parameters();

    FitReport report;
    ModelPtr first = Fitter::fit(*f.estimator, X1, V1, 7, &report);
    // The fit trained something (λ starts at 10^-2, init_log10_lambda's default), so the checks
    // below are not vacuous.
    ASSERT_NE(report.values.at("lambda_alpha"), 1e-2);
    ASSERT_GT(report.values.at("best_step"), 0.0);
    const Vector log_p = first->log_unnormalized(P);
    const Matrix score = first->score(P);
    ModelPtr second = Fitter::fit(*f.estimator, X2, V2, 8);
    EXPECT_TRUE(first->log_unnormalized(P) == log_p) << "the second fit changed the first model";
    EXPECT_TRUE(first->score(P) == score);
    EXPECT_FALSE(second->log_unnormalized(P) == log_p);
    // The estimator's own kernel keeps its configured parameters ...
    EXPECT_TRUE(f.kernel->parameters() == kernel_before);
    // ... so fitting again on the first data with the first seed repeats the first fit bitwise.
    ModelPtr again = Fitter::fit(*f.estimator, X1, V1, 7);
    EXPECT_TRUE(again->log_unnormalized(P) == log_p);
    // Changing the estimator's kernel afterwards does not reach a returned model either.
    perturb(*f.kernel);
    EXPECT_TRUE(first->log_unnormalized(P) == log_p);
  }
}

TEST(Clone, ChangingLitesKernelAfterAFitLeavesTheModelUnchanged) {
  Fitter f("type = \"lite\"\ninducing_points = 15\n", "type = \"gaussian\"\nsigma = 1.0",
           "type = \"gaussian\"\nstd = 3.0", 120);
  const Matrix X = blob(120, 0.0, 1), none(0, kDim), P = blob(20, 0.5, 2);
  ModelPtr model = Fitter::fit(*f.estimator, X, none, 3);
  const Vector log_p = model->log_unnormalized(P);
  perturb(*f.kernel);
  EXPECT_TRUE(model->log_unnormalized(P) == log_p);
  EXPECT_FALSE(Fitter::fit(*f.estimator, X, none, 3)->log_unnormalized(P) == log_p);  // the change is real
}

// An estimator's clone has its own parts: fitting it gives what the original gives, and changing the
// original's kernel does not reach the clone.
TEST(Clone, EstimatorClonesFitLikeTheOriginalAndOwnTheirParts) {
  Fitter f(kDkef, "type = \"gaussian\"\nsigma = 0.8", "type = \"gaussian\"\nstd = 3.0", 200);
  const Matrix X = blob(200, 0.0, 1), V = blob(80, 0.0, 2), P = blob(25, 1.0, 5);
  std::unique_ptr<Estimator> copy = f.estimator->clone();
  const Vector log_p = Fitter::fit(*f.estimator, X, V, 7)->log_unnormalized(P);
  perturb(*f.kernel);
  EXPECT_TRUE(Fitter::fit(*copy, X, V, 7)->log_unnormalized(P) == log_p);
  EXPECT_FALSE(Fitter::fit(*f.estimator, X, V, 7)->log_unnormalized(P) == log_p);
}

bool is_loaded(const std::filesystem::path& file) {
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

// The model's kernel is a clone made from the gaussian plugin's kernel: it keeps that plugin loaded
// after the registry, the estimator and the original kernel are gone (kef's rule for every object a
// plugin makes). Run in a fresh process (the threadsafe death-test style re-executes this test alone),
// where no other registry keeps the plugins loaded.
void fit_and_outlive_the_registry() {
  const std::filesystem::path gaussian = test::plugin_dir() / "kef_gaussian.so";
  const Matrix X = blob(100, 0.0, 1), none(0, kDim), P = blob(10, 0.5, 2);
  ModelPtr model;
  Vector log_p;
  {
    Registry reg;
    reg.load_plugins({test::plugin_dir()});
    BuildContext ctx{kDim, &reg, nullptr, X.rows()};
    EstimatorParts parts{reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.0"), ctx),
                         reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 3.0"), ctx),
                         &reg};
    EstimatorPtr est =
        reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = 10\n"), parts, ctx);
    model = Fitter::fit(*est, X, none, 3);
    log_p = model->log_unnormalized(P);
  }
  if (!is_loaded(gaussian)) std::exit(3);  // the model's kernel code would be gone
  if (!(model->log_unnormalized(P) == log_p)) std::exit(4);
  model.reset();
  std::exit(is_loaded(gaussian) ? 5 : 0);  // and nothing leaks it
}

TEST(Clone, ModelsKeepThePluginsOfTheirClonedPartsLoaded) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fit_and_outlive_the_registry(), ::testing::ExitedWithCode(0), "");
}

TEST(Clone, EvaluatorsAndDataSourcesClone) {
  Registry& reg = test::plugin_registry();
  for (const ComponentInfo& info : reg.components(Evaluator::kInterface)) {
    SCOPED_TRACE(info.type);
    Config cfg = component_config(info.type);
    EvaluatorPtr e;
    try {
      RandomStream rng(1, "eval");
      e = reg.make<Evaluator>(cfg, BuildContext{kDim, &reg, &rng});
    } catch (const ConfigError&) {
      continue;  // needs keys this generic test does not know (relative_fssd's `against`, say)
    }
    EXPECT_TRUE(e->clone() != nullptr);
  }
  auto source =
      reg.make<DataSource>(test::config_from("type = \"synthetic/banana\"\nn = 50\n"), BuildContext{});
  auto copy = source->clone();
  RandomStream r1(4, "data"), r2(4, "data");
  EXPECT_TRUE(source->load(r1).samples == copy->load(r2).samples);
}

}  // namespace
}  // namespace kef
