// A descriptor from an incompatible plugin ABI. Its static initialiser must never run.
#include <cstdlib>

#include "fixture_common.hpp"

namespace {
[[maybe_unused]] const bool ran = [] { return setenv("KEF_FIXTURE_WRONG_ABI_RAN", "1", 1) == 0; }();
void register_components(kef::PluginRegistrar& r) {
  r.add_kernel(fixture::info("fixture_wrong_abi"), fixture::make_constant);
}
}  // namespace

FIXTURE_DESCRIPTOR(999u, static_cast<uint32_t>(::kef::kVersionMajor), "fixture_wrong_abi")
BOOST_DLL_ALIAS(register_components, kef_register_plugin)
