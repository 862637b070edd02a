// Registers a new kernel and one that fixture_good (loaded first: its file name sorts first)
// already registered. The whole plugin is refused, the new kernel included.
#include "fixture_common.hpp"

namespace {
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_other"), fixture::make_constant);
  r.add_kernel(fixture::info("fixture_constant"), fixture::make_constant);
}
}  // namespace

KEF_PLUGIN("fixture_good_duplicate", "0.0.1", "registers a type another plugin has", register_components)
