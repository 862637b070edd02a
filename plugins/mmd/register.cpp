#include "kef/sdk/plugin.hpp"
#include "mmd_evaluator.hpp"

namespace {

void register_mmd(kef::PluginRegistrar& r) {
  kef::ComponentInfo info;
  info.type = "mmd";
  info.summary =
      "Unbiased MMD² (Gaussian kernel, median-heuristic bandwidth) between model samples (exact sampler or HMC) "
      "and a held-out split, with a permutation p-value";
  info.reference = "DDE (Dai et al. 2019) Table 1; Gretton et al. 2012; docs/math.md §8";
  info.keys = kef::mmd::mmd_keys();
  info.reads_training_rows = true;  // the training split only through Dataset::training()
  r.add_evaluator(info, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<kef::mmd::MmdEvaluator>(cfg, ctx);
  });
}

}  // namespace

KEF_PLUGIN("mmd", "0.1.0", "MMD between model samples (exact or HMC) and held-out data", register_mmd)
