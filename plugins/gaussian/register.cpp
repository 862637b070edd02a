#include <cmath>

#include "gaussian_base_measure.hpp"
#include "gaussian_kernel.hpp"
#include "gaussian_mixture_kernel.hpp"
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

  kef::ComponentInfo mixture;
  mixture.type = "gaussian_mixture";
  mixture.summary = "Sum of R Gaussian kernels sum_r rho_r exp(-|x-y|^2 / (2 sigma_r^2)), learnable sigma_r and weights";
  mixture.reference = "DKEF (Wenliang et al. 2019) eq. 7 without a network (its KEF-G with R components); docs/math.md §2";
  mixture.keys = {
      KeySpec::numbers("sigma", "length scales σ_r, one per component (R = their number); the default is DKEF's "
                                "initial σ_r² = 10^{0, 0.5, 1} as length scales",
                       std::vector<double>{1.0, 1.7782794100389228, 3.1622776601683795})
          .positive(),
      KeySpec::numbers("weights", "mixture weights ρ_r > 0, one per component, normalised to sum 1 (default equal)")
          .optional()
          .positive(),
  };
  r.add_kernel(mixture, [](const kef::Config& cfg, const kef::BuildContext&) {
    const std::vector<double> sigma = cfg.numbers("sigma");
    std::vector<double> weights(sigma.size(), 1.0);
    if (cfg.has("weights")) {
      weights = cfg.numbers("weights");
      if (weights.size() != sigma.size())
        cfg.fail("weights", "has " + std::to_string(weights.size()) + " values for " + std::to_string(sigma.size()) +
                                " components (one per value of `sigma`)");
    }
    for (double s : sigma)
      if (!std::isfinite(s)) cfg.fail("sigma", "must be finite");
    for (double w : weights)
      if (!std::isfinite(w)) cfg.fail("weights", "must be finite");
    return std::make_unique<kef::gaussian::GaussianMixtureKernel>(sigma, weights);
  });

  kef::ComponentInfo base;
  base.type = "gaussian";
  base.summary = "Gaussian base measure N(mean, std^2 I)";
  base.reference = "docs/math.md §3";
  base.keys = {KeySpec::numbers("mean", "mean: one value for every coordinate, or one per coordinate",
                                std::vector<double>{0.0}),
               KeySpec::number("std", "standard deviation σ0", 1.0).positive()};
  r.add_base_measure(base, [](const kef::Config& cfg, const kef::BuildContext& ctx) {
    auto b = std::make_unique<kef::gaussian::GaussianBaseMeasure>(cfg.numbers("mean"), cfg.number("std"),
                                                                  kef::KeySites(cfg));
    if (ctx.dim > 0) b->check_dimension(ctx.dim);
    return b;
  });
}

}  // namespace

KEF_PLUGIN("gaussian", "0.1.0", "Gaussian kernel and Gaussian base measure", register_gaussian)
