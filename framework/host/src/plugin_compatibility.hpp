#pragma once
// Whether a plugin built elsewhere can run in this host: the host's own descriptor (what the SDK's
// KEF_PLUGIN_DESCRIPTOR_VALUE writes into a plugin) and the rules a plugin's descriptor must meet.
// Internal to libkef; the registry applies it before loading a plugin.
#include <cstddef>
#include <string>

#include "kef/plugin_abi.h"

namespace kef::detail {

const kef_plugin_descriptor_t& host_descriptor();

// Why the plugin cannot run in this host, or empty when it can. abi_version and struct_size are
// checked by the caller first, before the rest of the descriptor is trusted.
std::string incompatibility(const kef_plugin_descriptor_t& d);

// "<what> (expected <expected>, got <got>); <hint>": the shape of every refusal reason.
std::string mismatch_text(const std::string& what, const std::string& expected, const std::string& got,
                          const std::string& hint);

// Fixed-size descriptor strings need not be terminated inside a corrupt file.
std::string bounded(const char* text, std::size_t capacity);

}  // namespace kef::detail
