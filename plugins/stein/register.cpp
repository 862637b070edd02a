#include "fssd_evaluator.hpp"
#include "kef/sdk/plugin.hpp"
#include "ksd.hpp"

namespace {

void register_stein(kef::PluginRegistrar& r) {
  using namespace kef::stein;
  kef::ComponentInfo fssd;
  fssd.type = "fssd";
  fssd.summary = "Finite-set Stein discrepancy FSSD² at J test locations, with its goodness-of-fit p-value";
  fssd.reference = "Jitkrittum et al. (2017), A linear-time kernel goodness-of-fit test; docs/math.md §8";
  fssd.keys = fssd_keys();
  fssd.facets = kef::Facet::Score;
  fssd.ignores_training_split = true;  // reads only the split it is given (`split`)
  r.add_evaluator(fssd, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<FssdEvaluator>(cfg, ctx, false);
  });

  kef::ComponentInfo rel;
  rel.type = "relative_fssd";
  rel.summary = "Relative FSSD test of the model against `against`: small p-value = `against` fits better";
  rel.reference =
      "Jitkrittum et al. (2018), Informative features for model comparison; DKEF Fig. 3; docs/math.md §8";
  rel.keys = relative_fssd_keys();
  rel.compares_two_models = true;
  rel.facets = kef::Facet::Score;
  rel.ignores_training_split = true;  // reads only the split it is given (`split`)
  r.add_evaluator(rel, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<FssdEvaluator>(cfg, ctx, true);
  });

  kef::ComponentInfo ksd;
  ksd.type = "ksd";
  ksd.summary = "Kernel Stein discrepancy KSD² (U or V statistic) with a wild-bootstrap p-value";
  ksd.reference =
      "Chwialkowski et al. (2016); Liu et al. (2016); Gorham & Mackey (2017) for IMQ; docs/math.md §8";
  ksd.keys = ksd_keys();
  ksd.facets = kef::Facet::Score;
  ksd.ignores_training_split = true;  // reads only the split it is given (`split`)
  r.add_evaluator(ksd, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<KsdEvaluator>(cfg, ctx);
  });
}

}  // namespace

KEF_PLUGIN("stein", "0.1.0", "Stein discrepancies: FSSD, relative FSSD, KSD", register_stein)
