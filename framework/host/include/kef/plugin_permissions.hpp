#pragma once
// Plugins are shared libraries that run inside kef with the rights of the user running it. Whoever can
// write a plugin file, or the directory it was loaded from (and so add or replace plugins there), can
// run code as every user of kef: kef warns about such files and directories, and about a directory
// above a plugin directory that anyone can write and is not sticky (whoever can write it can put a
// directory of their own in the plugin directory's place).
#include <filesystem>
#include <string>
#include <vector>

namespace kef {

// One warning per world-writable plugin file, per world-writable directory holding one of them, and per
// world-writable, non-sticky directory above such a directory (each directory once), in the order of
// `loaded_plugins`.
std::vector<std::string> plugin_permission_warnings(const std::vector<std::filesystem::path>& loaded_plugins);

}  // namespace kef
