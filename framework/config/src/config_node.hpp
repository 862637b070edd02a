#pragma once
// Private: the TOML storage behind kef::Config.
#include <memory>
#include <string>

#include <toml++/toml.h>

#include "kef/config.hpp"

namespace kef::detail {

struct ConfigNode {
  std::shared_ptr<toml::table> root;  // owner of the document
  toml::table* table = nullptr;       // this component's table inside root
  std::string source;                 // file name, or "<string>"
  std::string path;                   // dotted path of this table ("" for the root)
  KeyList keys;                       // declared keys, after validate()
  bool validated = false;
  // A document a program wrote (kef fit, the Python kef.fit): messages cite `source` alone, since the
  // lines and columns of a text the user never saw tell them nothing.
  bool generated = false;
};

// "file:line:col" of a node (or of the table when the node has no position).
std::string position_of(const ConfigNode& cfg, const toml::node* node);

}  // namespace kef::detail
