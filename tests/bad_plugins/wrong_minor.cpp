// Built "for" the previous minor version of kef 0.x, which kef 0.x refuses (its interfaces may have
// changed). Its static initialiser must never run.
#include <cstdlib>

#include "fixture_common.hpp"

// From kef 1.0 on an older minor is accepted: this fixture and its expectations must then change.
static_assert(::kef::kVersionMajor == 0 && ::kef::kVersionMinor >= 1,
              "wrong_minor tests the kef 0.x rule (plugin minor == host minor)");

namespace {
[[maybe_unused]] const bool ran = [] { return setenv("KEF_FIXTURE_WRONG_MINOR_RAN", "1", 1) == 0; }();
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_wrong_minor"), fixture::make_constant);
}
}  // namespace

FIXTURE_DESCRIPTOR_VERSION(KEF_PLUGIN_ABI_VERSION, static_cast<uint32_t>(::kef::kVersionMajor),
                           static_cast<uint32_t>(::kef::kVersionMinor - 1), "fixture_wrong_minor")
BOOST_DLL_ALIAS(register_components, kef_register_plugin)
