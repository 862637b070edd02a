#pragma once
// The descriptor a translation unit would write for itself: compiler, standard library ABI, Eigen,
// pointer size, kef version. Plugins write it through KEF_PLUGIN (kef/sdk/plugin.hpp); the host builds
// its own from the same macro, so the two can only differ where the builds really differ.
#include <cstdint>

#include "kef/plugin_abi.h"
#include "kef/registry.hpp"
#include "kef/types.hpp"  // Eigen's version macros

#if defined(__clang__)
#define KEF_PLUGIN_COMPILER_ID_ KEF_PLUGIN_COMPILER_CLANG
#define KEF_PLUGIN_COMPILER_MAJOR_ __clang_major__
#define KEF_PLUGIN_COMPILER_MINOR_ __clang_minor__
#elif defined(__GNUC__)
#define KEF_PLUGIN_COMPILER_ID_ KEF_PLUGIN_COMPILER_GCC
#define KEF_PLUGIN_COMPILER_MAJOR_ __GNUC__
#define KEF_PLUGIN_COMPILER_MINOR_ __GNUC_MINOR__
#else
#define KEF_PLUGIN_COMPILER_ID_ KEF_PLUGIN_COMPILER_OTHER
#define KEF_PLUGIN_COMPILER_MAJOR_ 0
#define KEF_PLUGIN_COMPILER_MINOR_ 0
#endif

#ifdef _GLIBCXX_USE_CXX11_ABI
#define KEF_PLUGIN_CXX11_ABI_ _GLIBCXX_USE_CXX11_ABI
#else
#define KEF_PLUGIN_CXX11_ABI_ -1
#endif

// The descriptor with the ABI version and kef major.minor given (the plugin-host tests build
// fixtures that claim another version with it), everything else as this translation unit sees it.
#define KEF_PLUGIN_DESCRIPTOR_FOR(ABI_VERSION, KEF_MAJOR, KEF_MINOR, NAME, VERSION, SUMMARY) \
  {ABI_VERSION,                                                                             \
   sizeof(kef_plugin_descriptor_t),                                                         \
   KEF_MAJOR,                                                                               \
   KEF_MINOR,                                                                               \
   KEF_PLUGIN_COMPILER_ID_,                                                                 \
   KEF_PLUGIN_COMPILER_MAJOR_,                                                              \
   KEF_PLUGIN_COMPILER_MINOR_,                                                              \
   KEF_PLUGIN_CXX11_ABI_,                                                                   \
   EIGEN_WORLD_VERSION,                                                                     \
   EIGEN_MAJOR_VERSION,                                                                     \
   EIGEN_MINOR_VERSION,                                                                     \
   static_cast<uint32_t>(sizeof(void*)),                                                    \
   static_cast<uint32_t>(EIGEN_MAX_ALIGN_BYTES),                                            \
   NAME,                                                                                    \
   VERSION,                                                                                 \
   SUMMARY}

// The descriptor as this translation unit sees the world; the host compares it with its own.
#define KEF_PLUGIN_DESCRIPTOR_VALUE(NAME, VERSION, SUMMARY)                                          \
  KEF_PLUGIN_DESCRIPTOR_FOR(KEF_PLUGIN_ABI_VERSION, static_cast<uint32_t>(::kef::kVersionMajor), \
                            static_cast<uint32_t>(::kef::kVersionMinor), NAME, VERSION, SUMMARY)
