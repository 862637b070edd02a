// Built "for" the next major version of kef. Its static initialiser must never run.
#include <cstdlib>

#include "fixture_common.hpp"

namespace {
[[maybe_unused]] const bool ran = [] { return setenv("KEF_FIXTURE_WRONG_MAJOR_RAN", "1", 1) == 0; }();
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_wrong_major"), fixture::make_constant);
}
}  // namespace

FIXTURE_DESCRIPTOR(KEF_PLUGIN_ABI_VERSION, static_cast<uint32_t>(::kef::kVersionMajor + 1),
                   "fixture_wrong_major")
BOOST_DLL_ALIAS(register_components, kef_register_plugin)
