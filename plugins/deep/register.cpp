#include <cstdint>
#include <string>

#include "deep_kernel.hpp"
#include "kef/memory_budget.hpp"
#include "kef/sdk/plugin.hpp"
#include "mlp_feature_map.hpp"
#include "scalar_head_kernel.hpp"

namespace {

// The networks' weights before any is drawn: R networks of L layers of width W on D inputs (the first
// layer D·W, the others W·W, a skip connection D·W), each weight held with copies for its gradient,
// the optimiser's moments, the best step's parameters and the clones of a fit.
void check_network_memory(const kef::Config& cfg, kef::Index D, std::int64_t R, const char* what) {
  const double W = static_cast<double>(cfg.integer("width")), L = static_cast<double>(cfg.integer("layers"));
  const double d = static_cast<double>(D);
  const double weights = static_cast<double>(R) * (2.0 * (d + 1.0) * W + (L - 1.0) * (W + 1.0) * W);
  kef::require_memory(8.0 * 8.0 * weights, cfg.where("width"),
                      std::string(what) + "'s weights (components, layers, width)");
}

using kef::KeySpec;

// DKEF's code initialises log10 of each component's σ² at linspace(0, 1, R) = 0, 0.5, 1 (R = 3) and uses
// k = exp(−‖u‖² / (2σ²)) with that σ², a variance. kef's σ is a length scale: σ = 10^{0, 0.25, 0.5}.
const std::vector<double> kDkefSigmaInit = {1.0, 1.7782794100389228, 3.1622776601683795};

kef::Index require_dim(const kef::Config& cfg, const kef::BuildContext& ctx, const char* what) {
  if (ctx.dim < 1) cfg.fail("type", std::string(what) + " needs the data dimension, which is not known here");
  return ctx.dim;
}

void register_deep(kef::PluginRegistrar& r) {
  kef::ComponentInfo kernel;
  kernel.type = "deep";
  kernel.summary = "DKEF deep kernel: a softmax-weighted mixture of Gaussian (or linear) kernels on MLP features";
  kernel.reference = "DKEF (Wenliang et al. 2019) eq. 7; docs/math.md §2";
  kernel.keys = {
      KeySpec::integer("components", "R, the number of mixture components", 3).at_least(1),
      KeySpec::integer("layers", "L, fully connected layers per feature map", 3).at_least(1),
      KeySpec::integer("width", "W, the width of every layer", 30).at_least(1),
      KeySpec::numbers("sigma_init", "initial length scales σ_r: one value, or one per component "
                                     "(default DKEF's σ_r² = [1, 3.16, 10] as length scales [1, 1.78, 3.16], its first R "
                                     "values when R < 3)")
          .optional()
          .positive(),
      KeySpec::string("on", "kernel on the features: gaussian (DKEF-G) or linear (DKEF-L)", std::string("gaussian"))
          .one_of({"gaussian", "linear"}),
  };
  r.add_kernel(kernel, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    const kef::Index D = require_dim(cfg, ctx, "the deep kernel");
    const kef::Index R = cfg.integer("components");
    std::vector<double> sigma;
    if (cfg.has("sigma_init")) {
      sigma = cfg.numbers("sigma_init");
      if (sigma.size() != 1 && static_cast<kef::Index>(sigma.size()) != R)
        cfg.fail("sigma_init", "has " + std::to_string(sigma.size()) + " values for " + std::to_string(R) +
                                   " components (give one, or one per component)");
    } else if (R <= 3) {
      sigma.assign(kDkefSigmaInit.begin(), kDkefSigmaInit.begin() + R);
    } else {
      cfg.fail("sigma_init", "needed when components > 3 (DKEF's default covers 3)");
    }
    check_network_memory(cfg, D, R, "the deep kernel");
    kef::RandomStream fallback(0, "kernel/deep");
    kef::RandomStream& rng = ctx.rng ? *ctx.rng : fallback;
    return std::make_unique<kef::deep::DeepKernel>(
        D, R, cfg.integer("layers"), cfg.integer("width"), sigma,
        cfg.string("on") == "linear" ? kef::deep::OnFeatures::Linear : kef::deep::OnFeatures::Gaussian, rng);
  });

  kef::ComponentInfo scalar;
  scalar.type = "deep_scalar";
  scalar.summary =
      "DKEF-L-50-1's kernel: k(x, y) = ψ(x)ψ(y) with ψ = wᵀφ(x) + b, one affine neuron on DKEF's network";
  scalar.reference = "DKEF (Wenliang et al. 2019) section 4, DKEF-L-50-1; docs/math.md §2";
  scalar.keys = {
      KeySpec::integer("layers", "L, fully connected layers of the network under the head", 3).at_least(1),
      KeySpec::integer("width", "W, the width of every layer under the head", 50).at_least(1)};
  r.add_kernel(scalar, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    const kef::Index D = require_dim(cfg, ctx, "the deep_scalar kernel");
    check_network_memory(cfg, D, 1, "the deep_scalar kernel");
    kef::RandomStream fallback(0, "kernel/deep_scalar");
    kef::RandomStream& rng = ctx.rng ? *ctx.rng : fallback;
    return std::make_unique<kef::deep::ScalarHeadKernel>(D, cfg.integer("layers"), cfg.integer("width"), rng);
  });

  kef::ComponentInfo fm;
  fm.type = "mlp";
  fm.summary = "DKEF's network: L softplus layers of width W, skip connection into the last layer";
  fm.reference = "DKEF (Wenliang et al. 2019) section 2; docs/math.md §2";
  fm.keys = {KeySpec::integer("layers", "L, fully connected layers", 3).at_least(1),
             KeySpec::integer("width", "W, the width of every layer", 30).at_least(1)};
  r.add_feature_map(fm, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    const kef::Index D = require_dim(cfg, ctx, "the mlp feature map");
    check_network_memory(cfg, D, 1, "the mlp feature map");
    kef::RandomStream fallback(0, "feature_map/mlp");
    kef::RandomStream& rng = ctx.rng ? *ctx.rng : fallback;
    return std::make_unique<kef::deep::MlpFeatureMap>(D, cfg.integer("width"), cfg.integer("layers"), rng);
  });
}

}  // namespace

KEF_PLUGIN("deep", "0.1.0", "Deep kernels of DKEF: MLP feature maps and the deep mixture kernel", register_deep)
