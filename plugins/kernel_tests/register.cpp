#include "hsic_evaluator.hpp"
#include "kef/sdk/plugin.hpp"
#include "ksdagg_evaluator.hpp"
#include "mmd_evaluator.hpp"

namespace {

void register_kernel_tests(kef::PluginRegistrar& r) {
  {
    kef::ComponentInfo info;
    info.type = "mmd_two_sample";
    info.summary =
        "Kernel two-sample test (MMD) of model samples (exact sampler or HMC) against a held-out split: "
        "MMD² (unbiased and biased), permutation and Gamma-approximation p-values";
    info.reference = "Gretton et al. 2009, 2012; DDE (Dai et al. 2019) Table 1; docs/math.md §8.7, §8.9";
    info.keys = kef::kernel_tests::mmd_options().keys();
    // The former plugin `mmd`'s evaluator, merged into this one; it keeps its metric names for a release.
    info.deprecated_aliases = {"mmd"};
    info.reads_training_rows = true;  // the training split only through Dataset::training()
    r.add_evaluator(info, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
      return std::make_unique<kef::kernel_tests::MmdEvaluator>(cfg, ctx);
    });
  }
  {
    kef::ComponentInfo info;
    info.type = "hsic_independence";
    info.summary =
        "Kernel independence test (HSIC) of the inputs x and targets y of a split or of model samples, "
        "permutation and Gamma-approximation p-values";
    info.reference = "Gretton et al. 2008; Song et al. 2012; docs/math.md §8.10";
    info.keys = kef::kernel_tests::hsic_options().keys();
    info.reads_training_rows = true;  // the training split only through Dataset::training()
    r.add_evaluator(info, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
      return std::make_unique<kef::kernel_tests::HsicIndependenceEvaluator>(cfg, ctx);
    });
  }
  {
    kef::ComponentInfo info;
    info.type = "ksdagg";
    info.summary =
        "Aggregated kernel Stein discrepancy test (KSDAgg) of a model against a split, from the model's "
        "score: IMQ kernels at a collection of bandwidths, the level corrected for the multiple testing";
    info.reference = "Schrab, Guedj and Gretton, NeurIPS 2022";
    info.keys = kef::kernel_tests::ksdagg_options().keys();
    info.facets = kef::Facet::Score;
    info.ignores_training_split = true;  // reads only the split it is given (`split`)
    r.add_evaluator(info, [](const kef::Config& cfg, const kef::BuildContext&) {
      return std::make_unique<kef::kernel_tests::KsdAggEvaluator>(cfg);
    });
  }
}

}  // namespace

KEF_PLUGIN("kernel_tests", "0.2.0",
           "Kernel two-sample (MMD), independence (HSIC) and aggregated Stein (KSDAgg) tests of models and data", register_kernel_tests)
