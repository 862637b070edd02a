#include "kef/component_info.hpp"

#include "kef/error.hpp"

namespace kef {

std::vector<PartSpec> ComponentInfo::all_parts() const {
  std::vector<PartSpec> out;
  auto declared = [&](const std::string& name) {
    for (const PartSpec& p : parts)
      if (p.name == name) return true;
    return false;
  };
  if (uses_kernel && !declared("kernel")) out.push_back({"kernel", "kernel", true, "the kernel"});
  if (uses_base_measure && !declared("base_measure"))
    out.push_back({"base_measure", "base_measure", true, "the base measure q0"});
  out.insert(out.end(), parts.begin(), parts.end());
  return out;
}

void Parts::add(std::string name, std::string interface, std::shared_ptr<void> object) {
  entries_[std::move(name)] = Entry{std::move(interface), std::move(object)};
}

std::vector<std::string> Parts::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

const Parts::Entry* Parts::find(std::string_view name, std::string_view interface) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return nullptr;
  if (it->second.interface != interface)
    throw Error("part `" + std::string(name) + "` is a " + it->second.interface + ", asked for as a " +
                std::string(interface));
  return &it->second;
}

}  // namespace kef
