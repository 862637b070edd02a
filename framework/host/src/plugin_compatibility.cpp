#include "plugin_compatibility.hpp"

#include <cstdint>
#include <cstring>

#include "kef/plugin_descriptor.hpp"

namespace kef::detail {

const kef_plugin_descriptor_t& host_descriptor() {
  static const kef_plugin_descriptor_t d = KEF_PLUGIN_DESCRIPTOR_VALUE("kef", "", "");
  return d;
}

namespace {

std::string compiler_text(std::uint32_t id, std::uint32_t major) {
  switch (id) {
    case KEF_PLUGIN_COMPILER_GCC:
      return "GCC " + std::to_string(major);
    case KEF_PLUGIN_COMPILER_CLANG:
      return "Clang " + std::to_string(major);
    case KEF_PLUGIN_COMPILER_OTHER:
      return "an unknown compiler";
    default:
      return "compiler id " + std::to_string(id);
  }
}

}  // namespace

std::string bounded(const char* text, std::size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

std::string mismatch_text(const std::string& what, const std::string& expected, const std::string& got,
                          const std::string& hint) {
  return what + " (expected " + expected + ", got " + got + "); " + hint;
}

std::string incompatibility(const kef_plugin_descriptor_t& d) {
  const kef_plugin_descriptor_t& h = host_descriptor();
  const std::string rebuild = "rebuild the plugin against this kef";
  auto ver = [](std::uint32_t a, std::uint32_t b) { return std::to_string(a) + "." + std::to_string(b); };
  if (d.kef_major != h.kef_major) {
    return mismatch_text("built for kef " + ver(d.kef_major, d.kef_minor) + ", this is kef " +
                             ver(h.kef_major, h.kef_minor) + ": kef major version mismatch",
                         std::to_string(h.kef_major), std::to_string(d.kef_major), rebuild);
  }
  // The plugin interface is C++ classes with vtables. A virtual method added to an interface (or
  // inserted before others) is a slot an older plugin's vtables lack or hold something else in, and
  // the host calling it jumps into garbage. Semantic versioning lets anything change in 0.x, so there
  // only the exact minor is safe. From 1.0 on, a minor release must keep the interfaces' layout (new
  // virtuals wait for the next major), which is what makes an older plugin minor acceptable.
  if (h.kef_major == 0 && d.kef_minor != h.kef_minor) {
    return mismatch_text("built for kef " + ver(d.kef_major, d.kef_minor) + ", this is kef " +
                             ver(h.kef_major, h.kef_minor) + ": kef 0.x plugins must match the minor version",
                         std::to_string(h.kef_minor), std::to_string(d.kef_minor), rebuild);
  }
  if (d.kef_minor > h.kef_minor) {
    return mismatch_text("built for the newer kef " + ver(d.kef_major, d.kef_minor) + ", this is kef " +
                             ver(h.kef_major, h.kef_minor) + ": kef minor version too new",
                         "at most " + std::to_string(h.kef_minor), std::to_string(d.kef_minor),
                         "upgrade kef or rebuild the plugin against this kef");
  }
  if (d.compiler_id != h.compiler_id || d.compiler_major != h.compiler_major) {
    return mismatch_text("compiler mismatch", compiler_text(h.compiler_id, h.compiler_major),
                         compiler_text(d.compiler_id, d.compiler_major),
                         "build the plugin with the compiler kef was built with");
  }
  if (d.cxx11_abi != h.cxx11_abi) {
    return mismatch_text("C++ standard library ABI mismatch",
                         "_GLIBCXX_USE_CXX11_ABI=" + std::to_string(h.cxx11_abi),
                         "_GLIBCXX_USE_CXX11_ABI=" + std::to_string(d.cxx11_abi), rebuild);
  }
  if (d.eigen_world != h.eigen_world || d.eigen_major != h.eigen_major || d.eigen_minor != h.eigen_minor) {
    auto eigen = [](const kef_plugin_descriptor_t& x) {
      return std::to_string(x.eigen_world) + "." + std::to_string(x.eigen_major) + "." +
             std::to_string(x.eigen_minor);
    };
    return mismatch_text("Eigen version mismatch", eigen(h), eigen(d),
                         "build the plugin with the Eigen kef was built with");
  }
  if (d.pointer_size != h.pointer_size) {
    return mismatch_text("pointer size mismatch", std::to_string(h.pointer_size) + " bytes",
                         std::to_string(d.pointer_size) + " bytes", rebuild);
  }
  if (d.eigen_max_align_bytes != h.eigen_max_align_bytes) {
    return mismatch_text("EIGEN_MAX_ALIGN_BYTES mismatch", std::to_string(h.eigen_max_align_bytes),
                         std::to_string(d.eigen_max_align_bytes),
                         "build the plugin with the same -march as kef (CMake option KEF_ARCH)");
  }
  return {};
}

}  // namespace kef::detail
