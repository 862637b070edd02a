#pragma once
// Declaring a kef plugin. One line per plugin library:
//
//   static void register_components(kef::PluginRegistrar& r) { r.add_kernel(...); }
//   KEF_PLUGIN("imq", "1.0.0", "Inverse multiquadric kernel", register_components)
//
// It defines the two exported symbols the host looks for: the C descriptor (checked by the host
// before the library is loaded) and the registration function (a Boost.DLL alias).
#include <boost/dll/alias.hpp>

#include "kef/plugin_descriptor.hpp"
#include "kef/registry.hpp"

#define KEF_PLUGIN(NAME, VERSION, SUMMARY, REGISTER_FUNCTION)                                     \
  extern "C" __attribute__((visibility("default"))) const kef_plugin_descriptor_t               \
      kef_plugin_descriptor = KEF_PLUGIN_DESCRIPTOR_VALUE(NAME, VERSION, SUMMARY);               \
  BOOST_DLL_ALIAS(REGISTER_FUNCTION, kef_register_plugin)
