// A program that embeds kef: it loads the plugins kef would find (extra directories given on the
// command line, then KEF_PLUGIN_PATH, then the installed plugin directory), lists them and their
// components, and optionally builds one kernel with its default keys.
//
//   kef_embed [--kernel TYPE] [PLUGIN_DIR...]
//
// Exit status: 0 when every plugin found was loaded, 1 when one was refused, 2 on a kef error.
#include <iostream>
#include <string>
#include <vector>

#include "kef/error.hpp"
#include "kef/registry.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> dirs;
  std::string kernel_type;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kernel" && i + 1 < argc) {
      kernel_type = argv[++i];
    } else {
      dirs.push_back(arg);
    }
  }

  try {
    kef::Registry registry;
    registry.load_plugins(kef::plugin_search_path(dirs));

    int refused = 0;
    std::cout << "kef " << kef::version() << ", plugins:\n";
    for (const kef::PluginRecord& p : registry.plugins()) {
      const char* status = p.status == kef::PluginRecord::Status::Loaded     ? "loaded"
                           : p.status == kef::PluginRecord::Status::Shadowed ? "shadowed"
                                                                             : "refused";
      refused += p.status == kef::PluginRecord::Status::Refused;
      std::cout << "  " << status << "  " << p.name << " " << p.version << "  " << p.path.string() << "\n";
      if (!p.reason.empty()) std::cout << "      " << p.reason << "\n";
      for (const std::string& c : p.components) std::cout << "      " << c << "\n";
    }

    if (!kernel_type.empty()) {
      // Components are built from a config table, exactly as a pipeline file would give it.
      const kef::Config cfg = kef::Config::parse_string("type = \"" + kernel_type + "\"", "kef_embed");
      const kef::KernelPtr kernel = registry.make_kernel(cfg, kef::BuildContext{});
      kef::Matrix X(2, 2);
      X << 0.0, 0.0, 1.0, 2.0;
      std::cout << "kernel/" << kernel_type << " gram of (0, 0) and (1, 2):\n" << kernel->gram(X, X) << "\n";
    }
    return refused == 0 ? 0 : 1;
  } catch (const kef::Error& e) {
    std::cerr << "kef_embed: " << e.kind() << ": " << e.what() << "\n";
    return 2;
  }
}
