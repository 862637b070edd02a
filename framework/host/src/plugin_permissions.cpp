// World-writable plugin files and directories (see kef/plugin_permissions.hpp).
#include "kef/plugin_permissions.hpp"

#include <sys/stat.h>

#include <set>
#include <system_error>

namespace fs = std::filesystem;

namespace kef {

std::vector<std::string> plugin_permission_warnings(const std::vector<fs::path>& loaded_plugins) {
  std::vector<std::string> warnings;
  std::set<std::string> seen_dirs;
  for (const auto& file : loaded_plugins) {
    // Components linked into the program (the registry's "kef core" record) have no file: the
    // directory of an empty path would be the working directory, warned about for no plugin.
    if (file.empty()) continue;
    struct stat st {};
    // stat follows a symbolic link: the library that was loaded is its target.
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & S_IWOTH))
      warnings.push_back("plugin " + file.string() +
                         " is writable by every user, who could replace the code kef runs as you; "
                         "`chmod o-w` it");
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (!seen_dirs.insert(dir.string()).second) continue;
    // A sticky directory (like /tmp) keeps others from replacing this file, not from adding plugins.
    if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IWOTH))
      warnings.push_back("plugin directory " + dir.string() +
                         " is writable by every user, who could add plugins that kef loads and runs as you; "
                         "`chmod o-w` it or move the plugins");
    // Whoever can write a directory above it can rename the plugin directory away and put one of their
    // own in its place, unless that directory is sticky (like /tmp: only an entry's owner may rename
    // it). Each such directory is named once.
    std::error_code ec;
    const fs::path absolute = fs::absolute(dir, ec).lexically_normal();
    if (ec) continue;
    for (fs::path child = absolute, up = absolute.parent_path(); up != child; child = up, up = up.parent_path()) {
      if (::stat(up.c_str(), &st) != 0 || !(st.st_mode & S_IWOTH) || (st.st_mode & S_ISVTX)) continue;
      if (!seen_dirs.insert(up.string()).second) continue;
      warnings.push_back("directory " + up.string() + ", above plugin directory " + dir.string() +
                         ", is writable by every user, who could replace " + child.string() +
                         " and the plugins in it; `chmod o-w` it (or `chmod +t`) or move the plugins");
    }
  }
  return warnings;
}

}  // namespace kef
