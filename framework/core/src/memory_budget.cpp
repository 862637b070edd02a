// Up-front memory estimates (kef/memory_budget.hpp).
#include "kef/memory_budget.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "kef/error.hpp"

namespace kef {

namespace {

// NaN: no limit set (the available memory applies).
std::atomic<double>& limit_set() {
  static std::atomic<double> bytes{std::nan("")};
  return bytes;
}

std::optional<double> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024.0;
  }
  return std::nullopt;
}

// cgroup v2: the limit of this process's group (memory.max, "max" when none) less what it uses.
std::optional<double> cgroup_available() {
  std::ifstream self("/proc/self/cgroup");
  std::string line, group;
  while (std::getline(self, line))
    if (line.rfind("0::", 0) == 0) group = line.substr(3);
  if (group.empty()) return std::nullopt;
  const std::string dir = "/sys/fs/cgroup" + (group == "/" ? std::string() : group);
  std::ifstream max_file(dir + "/memory.max"), current_file(dir + "/memory.current");
  std::string max_text;
  double current = 0;
  if (!(max_file >> max_text) || max_text == "max" || !(current_file >> current)) return std::nullopt;
  try {
    return std::max(0.0, std::stod(max_text) - current);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<double> available_memory_bytes() {
  std::optional<double> a = meminfo_available();
  if (const std::optional<double> c = cgroup_available(); c && (!a || *c < *a)) a = c;
  return a;
}

std::optional<double> memory_limit_bytes() {
  const double set = limit_set().load();
  if (!std::isnan(set)) return set;
  return available_memory_bytes();
}

void set_memory_limit_bytes(std::optional<double> bytes) { limit_set().store(bytes ? *bytes : std::nan("")); }

std::string memory_text(double bytes) {
  static const char* units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 6) {
    bytes /= 1000.0;
    ++u;
  }
  char text[64];
  if (u == 0)
    std::snprintf(text, sizeof text, "%.0f %s", bytes, units[u]);
  else
    std::snprintf(text, sizeof text, bytes < 10.0 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return text;
}

void require_memory(double bytes, const std::string& where, const std::string& what) {
  const double set = limit_set().load();
  const std::optional<double> limit = memory_limit_bytes();
  if (!limit || bytes <= *limit) return;
  const std::string whose = std::isnan(set) ? "the " + memory_text(*limit) + " of memory available"
                                            : "the memory limit (" + memory_text(*limit) + ")";
  throw ConfigError(where + ": needs an estimated " + memory_text(bytes) + " for " + what + ", more than " +
                    whose + "; lower it, or raise the limit if the memory will be there (a pipeline's " +
                    "top-level `memory_limit_gb`, or --memory-limit-gb of kef fit, score, eval and sample)");
}

}  // namespace kef
