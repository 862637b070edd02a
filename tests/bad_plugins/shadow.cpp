// Two builds of one plugin (same descriptor name) in two directories: the first in the search path
// wins. FIXTURE_VARIANT tells them apart.
#include "fixture_common.hpp"

namespace {
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_shadow_" FIXTURE_VARIANT), fixture::make_constant);
}
}  // namespace

KEF_PLUGIN("fixture_shadow", "0.0." FIXTURE_VARIANT, "the same plugin twice", register_components)
