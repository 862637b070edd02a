#include "kef/options.hpp"

#include "config_node.hpp"
#include "kef/error.hpp"

namespace kef {

KeySites::KeySites(const Config& cfg)
    : position_(detail::position_of(cfg.node(), nullptr)), path_(cfg.path()) {
  for (const std::string& key : cfg.keys()) keys_.emplace(key, cfg.where(key));
}

std::string KeySites::where(std::string_view key) const {
  if (!key.empty()) {
    auto it = keys_.find(key);
    if (it != keys_.end()) return it->second;
  }
  std::string name = path_.empty() ? std::string(key) : key.empty() ? path_ : path_ + "." + std::string(key);
  return name.empty() ? position_ : position_ + ": " + name;
}

void KeySites::fail(std::string_view key, const std::string& what) const {
  throw ConfigError(where(key) + ": " + what);
}

}  // namespace kef
