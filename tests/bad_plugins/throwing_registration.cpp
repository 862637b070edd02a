// Registers one kernel, then throws: the kernel must not reach the registry.
#include <stdexcept>

#include "fixture_common.hpp"

namespace {
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_from_throwing"), fixture::make_constant);
  throw std::runtime_error("fixture registration failure");
}
}  // namespace

KEF_PLUGIN("fixture_throwing_registration", "0.0.1", "throws while registering", register_components)
