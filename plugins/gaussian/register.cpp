#include "gaussian_base_measure.hpp"
#include "gaussian_kernel.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_gaussian(kef::PluginRegistrar& r) {
  using kef::KeySpec;
  kef::ComponentInfo kernel;
  kernel.type = "gaussian";
  kernel.summary = "Gaussian kernel exp(-|x-y|^2 / (2 sigma^2)), sigma the length scale";
  kernel.reference = "docs/math.md §2";
  kernel.keys = {KeySpec::number("sigma", "length scale σ (learned as log σ by estimators that learn kernels)", 1.0)
                     .positive()};
  r.add_kernel(kernel, [](const kef::Config& cfg, const kef::BuildContext&) {
    return std::make_unique<kef::gaussian::GaussianKernel>(cfg.number("sigma"));
  });

  kef::ComponentInfo base;
  base.type = "gaussian";
  base.summary = "Gaussian base measure N(mean, std^2 I)";
  base.reference = "docs/math.md §3";
  base.keys = {KeySpec::numbers("mean", "mean: one value for every coordinate, or one per coordinate",
                                std::vector<double>{0.0}),
               KeySpec::number("std", "standard deviation σ0", 1.0).positive()};
  r.add_base_measure(base, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    auto b = std::make_unique<kef::gaussian::GaussianBaseMeasure>(cfg.numbers("mean"), cfg.number("std"), cfg);
    if (ctx.dim > 0) b->check_dimension(ctx.dim);
    return b;
  });
}

}  // namespace

KEF_PLUGIN("gaussian", "0.1.0", "Gaussian kernel and Gaussian base measure", register_gaussian)
