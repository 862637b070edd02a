#pragma once
// Reading a plugin's C descriptor straight from its ELF file, without loading it: a mismatched plugin
// must be refused before any of its code (static initialisers included) runs in the host's process.
#include <filesystem>
#include <optional>
#include <string>

#include "kef/plugin_abi.h"

namespace kef::detail {

struct DescriptorRead {
  // The descriptor bytes as stored in the file; fields beyond what the file holds are zero.
  std::optional<kef_plugin_descriptor_t> descriptor;
  std::string error;  // why there is no descriptor (without the file name; the caller adds it)
};

// Never throws for a malformed file: every problem is reported in `error`.
DescriptorRead read_plugin_descriptor(const std::filesystem::path& file);

}  // namespace kef::detail
