#include <sstream>

#include "imq_kernel.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

void register_imq(kef::PluginRegistrar& r) {
  using kef::KeySpec;
  kef::ComponentInfo info;
  info.type = "imq";
  info.summary = "Inverse multiquadric kernel (c^2 + |x-y|^2)^beta, beta < 0";
  info.reference = "Gorham & Mackey (2017), Measuring sample quality with kernels, §3; docs/math.md §8 (KSD)";
  info.keys = {KeySpec::number("c", "offset c; the kernel is bounded by 1 when c >= 1", 1.0).positive(),
               KeySpec::number("beta", "exponent β, negative", -0.5).at_most(0.0)};
  r.add_kernel(info, [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Kernel> {
    const double beta = cfg.number("beta");
    // The key list can only say β ≤ 0; β = 0 is the constant kernel, not positive definite.
    if (beta >= 0.0) {
      std::ostringstream got;
      got << beta;
      cfg.fail("beta", "must be negative (expected beta < 0, got " + got.str() + ")");
    }
    return std::make_unique<kef::imq::ImqKernel>(cfg.number("c"), beta);
  });
}

}  // namespace

KEF_PLUGIN("imq", "0.1.0", "Inverse multiquadric kernel", register_imq)
