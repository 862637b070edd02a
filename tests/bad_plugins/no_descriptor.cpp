// Exports the registration alias but no descriptor (not declared with KEF_PLUGIN).
#include "fixture_common.hpp"

namespace {
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_no_descriptor"), fixture::make_constant);
}
}  // namespace

BOOST_DLL_ALIAS(register_components, kef_register_plugin)
