// Crashes (SIGSEGV) while it loads: in a static initialiser, which dlopen runs (FIXTURE_CRASH_IN_INIT),
// or in its registration function. The host must name it before the program ends
// (tests/e2e/plugin_errors_test.cpp).
#include "fixture_common.hpp"

namespace {

// A volatile store through a null pointer the compiler cannot see is null: neither removed nor turned
// into a trap, the real fault a broken plugin would make.
void crash() {
  volatile int* volatile target = nullptr;
  *target = 1;
}

#ifdef FIXTURE_CRASH_IN_INIT
const int crashed_at_load = [] {
  crash();
  return 0;
}();
#endif

void register_components(kef::PluginRegistrar& r) {
  crash();
  r.add_kernel(fixture::info("fixture_crashing"), fixture::make_constant);
}

}  // namespace

KEF_PLUGIN("fixture_crashing", "0.0.1", "crashes while loading", register_components)
