#include "generalized_normal_base_measure.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_generalized_normal(kef::PluginRegistrar& r) {
  kef::ComponentInfo base;
  base.type = "generalized_normal";
  base.summary = "product of generalised normals exp(-|x-mean|^beta / (2 std^2)), learnable mean, std, beta";
  base.reference = "docs/math.md §3; DKEF (Wenliang et al., ICML 2019) §4 and Proposition 2";
  base.keys = kef::generalized_normal::keys();
  r.add_base_measure(base, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    return std::make_unique<kef::generalized_normal::GeneralizedNormalBaseMeasure>(cfg, ctx);
  });
}

}  // namespace

KEF_PLUGIN("generalized_normal", "0.1.0", "generalised normal base measure (DKEF)",
           register_generalized_normal)
