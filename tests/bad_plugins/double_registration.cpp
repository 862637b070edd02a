// Registers the same type twice.
#include "fixture_common.hpp"

namespace {
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_twice"), fixture::make_constant);
  r.add_kernel(fixture::info("fixture_twice"), fixture::make_constant);
}
}  // namespace

KEF_PLUGIN("fixture_double_registration", "0.0.1", "registers one type twice", register_components)
