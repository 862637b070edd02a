#include "kef/config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "config_node.hpp"
#include "input_file.hpp"
#include "kef/error.hpp"
#include "text.hpp"

namespace kef {

using detail::ConfigNode;

const char* to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::Boolean: return "a boolean";
    case ValueKind::Integer: return "an integer";
    case ValueKind::Number: return "a number";
    case ValueKind::String: return "a string";
    case ValueKind::NumberList: return "a number or a list of numbers";
    case ValueKind::StringList: return "a list of strings";
    case ValueKind::Table: return "a table";
    case ValueKind::TableArray: return "an array of tables";
  }
  return "?";
}

namespace {

const char* toml_type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

// Shortest text that reads back as the same double (0.4, not 0.40000000000000002).
std::string format_number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

const KeySpec* find_spec(const KeyList& keys, std::string_view name) {
  for (const auto& k : keys)
    if (k.name == name) return &k;
  return nullptr;
}

std::shared_ptr<ConfigNode> make_root(toml::table&& tbl, std::string source) {
  auto node = std::make_shared<ConfigNode>();
  node->root = std::make_shared<toml::table>(std::move(tbl));
  node->table = node->root.get();
  node->source = std::move(source);
  return node;
}

std::optional<double> as_number(const toml::node& n) {
  if (auto v = n.as_integer()) return static_cast<double>(v->get());
  if (auto v = n.as_floating_point()) return v->get();
  return std::nullopt;
}

}  // namespace

namespace detail {
std::string position_of(const ConfigNode& cfg, const toml::node* node) {
  const toml::node* n = node ? node : cfg.table;
  if (cfg.generated) return cfg.source;
  if (n && n->source().begin.line > 0) {
    const auto& src = n->source();
    std::string file = src.path ? *src.path : cfg.source;
    return file + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
  }
  if (node) return "command line (--set)";
  return cfg.source;
}
}  // namespace detail

// ---- KeySpec builders ---------------------------------------------------------------------------

namespace {
// A key with its name, kind and documentation; each builder sets what else its kind needs.
KeySpec key_of(std::string name, ValueKind kind, std::string doc) {
  KeySpec k;
  k.name = std::move(name);
  k.kind = kind;
  k.doc = std::move(doc);
  return k;
}
}  // namespace

KeySpec KeySpec::number(std::string name, std::string doc, std::optional<double> def) {
  KeySpec k = key_of(std::move(name), ValueKind::Number, std::move(doc));
  if (def) k.default_value = *def; else k.required = true;
  return k;
}
KeySpec KeySpec::integer(std::string name, std::string doc, std::optional<std::int64_t> def) {
  KeySpec k = key_of(std::move(name), ValueKind::Integer, std::move(doc));
  k.max = kDefaultIntegerMax;
  if (def) k.default_value = *def; else k.required = true;
  return k;
}
KeySpec KeySpec::boolean(std::string name, std::string doc, bool def) {
  KeySpec k = key_of(std::move(name), ValueKind::Boolean, std::move(doc));
  k.default_value = def;
  return k;
}
KeySpec KeySpec::string(std::string name, std::string doc, std::optional<std::string> def) {
  KeySpec k = key_of(std::move(name), ValueKind::String, std::move(doc));
  if (def) k.default_value = *def; else k.required = true;
  return k;
}
KeySpec KeySpec::numbers(std::string name, std::string doc, std::optional<std::vector<double>> def) {
  KeySpec k = key_of(std::move(name), ValueKind::NumberList, std::move(doc));
  if (def) k.default_value = *def; else k.required = true;
  return k;
}
KeySpec KeySpec::strings(std::string name, std::string doc) {
  KeySpec k = key_of(std::move(name), ValueKind::StringList, std::move(doc));
  k.default_value = std::vector<double>{};  // an empty list
  return k;
}
KeySpec KeySpec::table(std::string name, std::string doc) {
  return key_of(std::move(name), ValueKind::Table, std::move(doc));
}
KeySpec KeySpec::table_array(std::string name, std::string doc) {
  return key_of(std::move(name), ValueKind::TableArray, std::move(doc));
}

std::string KeySpec::default_text() const {
  struct Visitor {
    const KeySpec& k;
    std::string operator()(std::monostate) const { return k.required ? "required" : "none"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_number(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(const std::vector<double>& v) const {
      if (k.kind == ValueKind::StringList) return "[]";
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + format_number(v[i]);
      return out + "]";
    }
  };
  return std::visit(Visitor{*this}, default_value);
}

// ---- Config -------------------------------------------------------------------------------------

Config::Config() : node_(make_root(toml::table{}, "<empty>")) {}
Config::Config(std::shared_ptr<ConfigNode> node) : node_(std::move(node)) {}

namespace {

// TOML++ builds and frees nested tables and arrays recursively, and so does the code that walks a
// Config: a table header of 40 000 dotted components exhausted the stack (SIGSEGV). Real pipeline
// files nest a few levels; anything deeper than this is refused before parsing.
constexpr int kMaxNesting = 64;

class NestingScan {
 public:
  NestingScan(std::string_view text, const std::string& source) : text_(text), source_(source), n_(text.size()) {}

  void run() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // a UTF-8 byte order mark
    while (i_ < n_) {
      const char c = text_[i_];
      if (c == '\n') {
        new_line();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
        continue;
      }
      if (c == '#') {
        skip_comment();
        continue;
      }
      if (at_line_start_ && open_.empty() && c == '[') {
        table_header();
        continue;  // the closing bracket(s) and the rest of the line: the main loop checks them
      }
      at_line_start_ = false;
      if (c == '"' || c == '\'') {
        if (prev_ != '\n' && prev_ != '=' && prev_ != '[' && prev_ != '{' && prev_ != ',' && prev_ != '.')
          unexpected_quote();
        skip_string();
        prev_ = '"';
        continue;
      }
      check_ascii();
      prev_ = c;
      if (key_mode_)
        key_character(c);
      else
        value_character(c);
      ++i_;
    }
  }

 private:
  void too_deep(int depth) const {
    if (depth <= kMaxNesting) return;
    throw ConfigError(source_ + ":" + std::to_string(line_) +
                      ": tables, dotted keys, arrays or inline tables nested " +
                      (depth > 10 * kMaxNesting ? "more than " + std::to_string(10 * kMaxNesting)
                                                : std::to_string(depth)) +
                      " levels deep (at most " + std::to_string(kMaxNesting) + " are accepted)");
  }

  // Skips the string starting at text[i] (a quote), counting newlines of multi-line strings.
  void skip_string() {
    const char q = text_[i_];
    const bool triple = i_ + 2 < n_ && text_[i_ + 1] == q && text_[i_ + 2] == q;
    i_ += triple ? 3 : 1;
    while (i_ < n_) {
      const char c = text_[i_];
      if (c == '\\' && q == '"') {
        if (i_ + 1 < n_ && text_[i_ + 1] == '\n') ++line_;
        i_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!triple) return;  // unterminated: TOML++ reports it (the main loop counts this line end)
        ++line_;
      }
      if (c == q && (!triple || (i_ + 2 < n_ && text_[i_ + 1] == q && text_[i_ + 2] == q))) {
        i_ += triple ? 3 : 1;
        // A closing """ may be followed by up to two more quotes that belong to the string.
        while (triple && i_ < n_ && text_[i_] == q) ++i_;
        return;
      }
      ++i_;
    }
  }

  // Outside strings and comments TOML 1.0 is ASCII (bare keys, numbers, punctuation). Refused here
  // because TOML++ 3.3 reaches an unreachable branch (undefined behaviour, found by fuzzing) when it
  // classifies some non-ASCII characters there, e.g. U+01B1 at the start of a line.
  void check_ascii() const {
    if (static_cast<unsigned char>(text_[i_]) < 0x80) return;
    throw ConfigError(source_ + ":" + std::to_string(line_) +
                      ": TOML syntax error: a non-ASCII character outside a string or comment (keys "
                      "with such characters must be quoted: \"key\" = ...)");
  }

  // A string starts only where TOML allows one (a key, a value, a header component); a quote elsewhere
  // (as in `x = 105_"..."`) is a syntax error, refused here so that TOML++ and this scan agree on
  // what is inside a string.
  [[noreturn]] void unexpected_quote() const {
    throw ConfigError(source_ + ":" + std::to_string(line_) +
                      ": TOML syntax error: a quote where no string or quoted key can start");
  }

  void skip_comment() {
    while (i_ < n_ && text_[i_] != '\n') ++i_;
  }

  // A line end outside every [ or { starts a new key at the current table's depth.
  void new_line() {
    ++line_;
    ++i_;
    if (open_.empty()) {
      prev_ = '\n';
      at_line_start_ = true;
      key_mode_ = true;
      key_base_ = table_depth_;
      key_parts_ = 1;
    }
  }

  // A table header: its dotted components, outside quoted keys.
  void table_header() {
    const bool array_header = i_ + 1 < n_ && text_[i_ + 1] == '[';
    int parts = 1;
    i_ += array_header ? 2 : 1;
    char header_prev = '[';
    while (i_ < n_ && text_[i_] != ']' && text_[i_] != '\n') {
      if (text_[i_] == '"' || text_[i_] == '\'') {
        if (header_prev != '[' && header_prev != '.') unexpected_quote();
        skip_string();
        header_prev = '"';
        continue;
      }
      check_ascii();
      if (text_[i_] == '.') ++parts;
      if (text_[i_] != ' ' && text_[i_] != '\t') header_prev = text_[i_];
      ++i_;
    }
    prev_ = ']';
    table_depth_ = parts + (array_header ? 1 : 0);
    too_deep(table_depth_);
    key_base_ = table_depth_;
    at_line_start_ = false;
    key_mode_ = false;
  }

  // A key of k components opens k - 1 tables; its value, if a [ or {, one more.
  void key_character(char c) {
    if (c == '.') {
      too_deep(key_base_ + ++key_parts_ - 1);
    } else if (c == '=') {
      key_mode_ = false;
      key_base_ += key_parts_ - 1;
    } else if (c == '}' && !open_.empty()) {  // an empty inline table
      open_.pop_back();
      kinds_.pop_back();
      key_mode_ = false;
      key_base_ = open_.empty() ? table_depth_ : open_.back();
    }
  }

  void value_character(char c) {
    if (c == '[' || c == '{') {
      const int depth = (open_.empty() ? key_base_ : std::max(key_base_, open_.back())) + 1;
      too_deep(depth);
      open_.push_back(depth);
      kinds_.push_back(c);
      if (c == '{') {
        key_mode_ = true;
        key_base_ = depth;
        key_parts_ = 1;
      }
    } else if ((c == ']' || c == '}') && !open_.empty()) {
      open_.pop_back();
      kinds_.pop_back();
      key_base_ = open_.empty() ? table_depth_ : open_.back();
    } else if (c == ',' && !kinds_.empty() && kinds_.back() == '{') {
      key_mode_ = true;
      key_base_ = open_.back();
      key_parts_ = 1;
    }
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t line_ = 1, i_ = 0;
  const std::size_t n_;
  int table_depth_ = 0;     // components of the current [header] (one more for [[array]] headers)
  std::vector<int> open_;   // depth of each [ or { of a value that is still open
  std::vector<char> kinds_; // '[' or '{' for each entry of open_
  bool at_line_start_ = true, key_mode_ = true;
  int key_base_ = 0, key_parts_ = 1;
  char prev_ = '\n';  // the last character outside strings and comments ('\n': a new line)
};

// An upper bound of the nesting depth of every value of a TOML document (the tables and arrays around
// it, the document's own table not counted), read without parsing it: a [table] header counts its
// dotted components and an [[array]] header one more, a dotted key the tables it opens (one fewer
// than its components) on top of the current table, every [ or { of a value one more.
// Strings and comments are skipped. Throws ConfigError naming the line that goes too deep.
void check_nesting(std::string_view text, const std::string& source) { NestingScan(text, source).run(); }

}  // namespace

Config Config::parse_file(const std::string& path) {
  // Pipelines and saved models' model.toml are a few kilobytes; the bound stops a wrong file early.
  constexpr std::uintmax_t kMaxTomlBytes = 64u << 20;
  return parse_string(read_text_file(path, kMaxTomlBytes, "a TOML file", ConfigError("").kind()), path);
}

Config Config::parse_string(std::string_view text, const std::string& source_name) {
  check_nesting(text, source_name);
  try {
    return Config(make_root(toml::parse(text, source_name), source_name));
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    throw ConfigError(source_name + ":" + std::to_string(src.begin.line) + ":" +
                      std::to_string(src.begin.column) + ": TOML syntax error: " +
                      std::string(e.description()));
  }
}

Config Config::parse_generated(std::string_view text, const std::string& source_name) {
  Config c = parse_string(text, source_name);
  c.node_->generated = true;
  return c;
}

const std::string& Config::source() const { return node_->source; }
const std::string& Config::path() const { return node_->path; }

std::string Config::dotted(std::string_view key) const {
  if (node_->path.empty()) return std::string(key);
  if (key.empty()) return node_->path;
  return node_->path + "." + std::string(key);
}

std::string Config::where(std::string_view key) const {
  const toml::node* n = key.empty() ? nullptr : node_->table->get(key);
  std::string pos = detail::position_of(*node_, n);
  // Cite the key itself (its line), not its value, when the document says where it is.
  if (n && n->source().begin.line > 0 && !node_->generated) {
    auto it = node_->table->find(key);
    const auto& ks = it->first.source();
    if (ks.begin.line > 0)
      pos = (ks.path ? *ks.path : node_->source) + ":" + std::to_string(ks.begin.line) + ":" +
            std::to_string(ks.begin.column);
  }
  std::string name = dotted(key);
  return name.empty() ? pos : pos + ": " + name;
}

bool Config::has(std::string_view key) const { return node_->table->contains(key); }

bool Config::holds_integer(std::string_view key) const {
  const toml::node* n = node_->table->get(key);
  return n && n->is_integer();
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  for (auto&& [k, v] : *node_->table) out.emplace_back(k.str());
  return out;
}

std::optional<std::string> Config::type() const {
  if (auto s = node_->table->get_as<std::string>("type")) return s->get();
  return std::nullopt;
}

void Config::fail(std::string_view key, const std::string& what) const {
  throw ConfigError(where(key) + ": " + what);
}

namespace {
const KeySpec& require_spec_default(const Config& cfg, const ConfigNode& node, std::string_view key) {
  const KeySpec* spec = find_spec(node.keys, key);
  if (!spec || std::holds_alternative<std::monostate>(spec->default_value))
    cfg.fail(key, "missing required key `" + std::string(key) + "`");
  return *spec;
}
}  // namespace

bool Config::boolean(std::string_view key) const {
  if (const toml::node* n = node_->table->get(key)) {
    if (auto b = n->as_boolean()) return b->get();
    fail(key, std::string("expected a boolean, got ") + toml_type_name(*n));
  }
  const KeySpec& s = require_spec_default(*this, *node_, key);
  if (auto b = std::get_if<bool>(&s.default_value)) return *b;
  fail(key, "declared default is not a boolean");
}

std::int64_t Config::integer(std::string_view key) const {
  if (const toml::node* n = node_->table->get(key)) {
    if (auto i = n->as_integer()) return i->get();
    fail(key, std::string("expected an integer, got ") + toml_type_name(*n));
  }
  const KeySpec& s = require_spec_default(*this, *node_, key);
  if (auto i = std::get_if<std::int64_t>(&s.default_value)) return *i;
  fail(key, "declared default is not an integer");
}

double Config::number(std::string_view key) const {
  if (const toml::node* n = node_->table->get(key)) {
    if (auto v = as_number(*n)) return *v;
    fail(key, std::string("expected a number, got ") + toml_type_name(*n));
  }
  const KeySpec& s = require_spec_default(*this, *node_, key);
  if (auto d = std::get_if<double>(&s.default_value)) return *d;
  if (auto i = std::get_if<std::int64_t>(&s.default_value)) return static_cast<double>(*i);
  fail(key, "declared default is not a number");
}

std::string Config::string(std::string_view key) const {
  if (const toml::node* n = node_->table->get(key)) {
    if (auto s = n->as_string()) return s->get();
    fail(key, std::string("expected a string, got ") + toml_type_name(*n));
  }
  const KeySpec& s = require_spec_default(*this, *node_, key);
  if (auto str = std::get_if<std::string>(&s.default_value)) return *str;
  fail(key, "declared default is not a string");
}

std::vector<double> Config::numbers(std::string_view key) const {
  if (const toml::node* n = node_->table->get(key)) {
    if (auto v = as_number(*n)) return {*v};
    if (auto arr = n->as_array()) {
      std::vector<double> out;
      for (std::size_t i = 0; i < arr->size(); ++i) {
        auto v = as_number(*arr->get(i));
        if (!v)
          fail(key, "element " + std::to_string(i) + ": expected a number, got " +
                        toml_type_name(*arr->get(i)));
        out.push_back(*v);
      }
      return out;
    }
    fail(key, std::string("expected a number or a list of numbers, got ") + toml_type_name(*n));
  }
  const KeySpec& s = require_spec_default(*this, *node_, key);
  if (auto v = std::get_if<std::vector<double>>(&s.default_value)) return *v;
  if (auto d = std::get_if<double>(&s.default_value)) return {*d};
  fail(key, "declared default is not a list of numbers");
}

std::vector<std::string> Config::strings(std::string_view key) const {
  const toml::node* n = node_->table->get(key);
  if (!n) {
    const KeySpec* spec = find_spec(node_->keys, key);
    if (spec && spec->required) fail(key, "missing required key `" + std::string(key) + "`");
    return {};
  }
  if (auto s = n->as_string()) return {s->get()};
  auto arr = n->as_array();
  if (!arr) fail(key, std::string("expected a list of strings, got ") + toml_type_name(*n));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    auto s = arr->get(i)->as_string();
    if (!s)
      fail(key, "element " + std::to_string(i) + ": expected a string, got " +
                    toml_type_name(*arr->get(i)));
    out.push_back(s->get());
  }
  return out;
}

Config Config::table(std::string_view key) const {
  auto child = std::make_shared<ConfigNode>();
  child->root = node_->root;
  child->source = node_->source;
  child->generated = node_->generated;
  child->path = dotted(key);
  if (toml::node* n = node_->table->get(key)) {
    if (auto t = n->as_table()) {
      child->table = t;
      return Config(child);
    }
    fail(key, std::string("expected a table, got ") + toml_type_name(*n));
  }
  // Absent: an empty table inserted into the document, so later edits land in the right place.
  auto [it, inserted] = node_->table->insert(key, toml::table{});
  (void)inserted;
  child->table = it->second.as_table();
  return Config(child);
}

std::vector<Config> Config::table_array(std::string_view key) const {
  std::vector<Config> out;
  toml::node* n = node_->table->get(key);
  if (!n) return out;
  if (auto t = n->as_table()) {
    (void)t;
    fail(key, "expected an array of tables ([[" + std::string(key) + "]]), got a single table ([" +
                  std::string(key) + "])");
  }
  auto arr = n->as_array();
  if (!arr) fail(key, std::string("expected an array of tables, got ") + toml_type_name(*n));
  for (std::size_t i = 0; i < arr->size(); ++i) {
    auto t = arr->get(i)->as_table();
    if (!t)
      fail(key, "element " + std::to_string(i) + ": expected a table, got " +
                    toml_type_name(*arr->get(i)));
    auto child = std::make_shared<ConfigNode>();
    child->root = node_->root;
    child->source = node_->source;
    child->generated = node_->generated;
    child->path = dotted(key) + "[" + std::to_string(i) + "]";
    child->table = t;
    out.push_back(Config(child));
  }
  return out;
}

void Config::validate(const KeyList& keys, const std::vector<std::string>& also_allowed) {
  node_->keys = keys;
  node_->validated = true;
  for (auto&& entry : *node_->table) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture those in the lambdas below.
    const auto& k = entry.first;
    auto& v = entry.second;
    std::string name(k.str());
    if (name == "type") continue;
    if (std::find(also_allowed.begin(), also_allowed.end(), name) != also_allowed.end()) continue;
    const KeySpec* spec = find_spec(keys, name);
    if (!spec) {
      std::vector<std::string> valid;
      for (const auto& s : keys) valid.push_back(s.name);
      const std::string best = detail::closest(name, valid);
      for (const auto& s : also_allowed) valid.push_back(s);
      std::sort(valid.begin(), valid.end());
      std::string msg = "unknown key `" + name + "`";
      if (!best.empty()) msg += " (did you mean `" + best + "`?)";
      msg += valid.empty() ? "; this component takes no keys" : "; valid keys: " + detail::join(valid);
      fail(name, msg);
    }
    auto check_range = [&](double x, const std::string& label) {
      if (!std::isfinite(x)) fail(name, label + "expected a finite number, got " + format_number(x));
      bool low = spec->min_exclusive ? x <= spec->min : x < spec->min;
      if (low || x > spec->max) {
        std::string range;
        if (std::isfinite(spec->min))
          range += (spec->min_exclusive ? "> " : ">= ") + format_number(spec->min);
        if (std::isfinite(spec->max))
          range += std::string(range.empty() ? "" : " and ") + "<= " + format_number(spec->max);
        fail(name, label + "out of range (expected " + range + ", got " + format_number(x) + ")");
      }
    };
    auto wrong_kind = [&]() {
      fail(name, std::string("expected ") + to_string(spec->kind) + ", got " + toml_type_name(v));
    };
    switch (spec->kind) {
      case ValueKind::Boolean:
        if (!v.is_boolean()) wrong_kind();
        break;
      case ValueKind::Integer:
        if (!v.is_integer()) wrong_kind();
        check_range(static_cast<double>(v.as_integer()->get()), "");
        break;
      case ValueKind::Number: {
        auto x = as_number(v);
        if (!x) wrong_kind();
        check_range(*x, "");
        break;
      }
      case ValueKind::String:
        if (!v.is_string()) wrong_kind();
        if (!spec->choices.empty()) {
          const auto& s = v.as_string()->get();
          if (std::find(spec->choices.begin(), spec->choices.end(), s) == spec->choices.end())
            fail(name, "invalid value \"" + s + "\"; expected one of: " + detail::join(spec->choices));
        }
        break;
      case ValueKind::NumberList: {
        if (auto x = as_number(v)) {
          check_range(*x, "");
        } else if (auto arr = v.as_array()) {
          if (arr->empty()) fail(name, "expected a non-empty list of numbers, got an empty list");
          for (std::size_t i = 0; i < arr->size(); ++i) {
            auto e = as_number(*arr->get(i));
            if (!e)
              fail(name, "element " + std::to_string(i) + ": expected a number, got " +
                             toml_type_name(*arr->get(i)));
            check_range(*e, "element " + std::to_string(i) + ": ");
          }
        } else {
          wrong_kind();
        }
        break;
      }
      case ValueKind::StringList: {
        if (v.is_string()) break;
        auto arr = v.as_array();
        if (!arr) wrong_kind();
        for (std::size_t i = 0; i < arr->size(); ++i)
          if (!arr->get(i)->is_string())
            fail(name, "element " + std::to_string(i) + ": expected a string, got " +
                           toml_type_name(*arr->get(i)));
        break;
      }
      case ValueKind::Table:
        if (!v.is_table()) wrong_kind();
        break;
      case ValueKind::TableArray:
        if (!v.is_array_of_tables()) wrong_kind();
        break;
    }
  }
  for (const auto& spec : keys)
    if (spec.required && !node_->table->contains(spec.name))
      fail("", "missing required key `" + spec.name + "` (" + spec.doc + ")");
}

const KeyList& Config::declared_keys() const { return node_->keys; }

namespace {
void insert_defaults(toml::table& out, const KeyList& keys) {
  for (const auto& spec : keys) {
    if (out.contains(spec.name)) continue;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            if (spec.kind == ValueKind::StringList) return;
            toml::array arr;
            for (double x : v) arr.push_back(x);
            out.insert(spec.name, std::move(arr));
          } else {
            out.insert(spec.name, v);
          }
        },
        spec.default_value);
  }
}

toml::table with_defaults(const ConfigNode& node, bool fill) {
  toml::table out = *node.table;
  if (fill) insert_defaults(out, node.keys);
  return out;
}
}  // namespace

// In place, never by assignment: child Configs point into this table.
void Config::fill_defaults() { insert_defaults(*node_->table, node_->keys); }

std::string Config::to_toml(bool fill) const {
  std::ostringstream os;
  os << toml::toml_formatter{with_defaults(*node_, fill)};
  return os.str();
}

std::string Config::to_json(bool fill) const {
  std::ostringstream os;
  os << toml::json_formatter{with_defaults(*node_, fill)};
  return os.str();
}

namespace {
std::vector<std::string> split_dotted(std::string_view key) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : key) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}
}  // namespace

void Config::set_from_text(std::string_view dotted_key, std::string_view value_text) {
  auto parts = split_dotted(dotted_key);
  std::string shown(dotted_key);
  auto bad = [&](const std::string& what) -> void {
    throw ConfigError("--set " + shown + ": " + what);
  };
  for (const auto& p : parts)
    if (p.empty()) bad("empty key component (expected a.b.c=value)");
  if (parts.size() > static_cast<std::size_t>(kMaxNesting))
    bad(std::to_string(parts.size()) + " key components (at most " + std::to_string(kMaxNesting) + ")");
  toml::table* tbl = node_->table;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string part = parts[i];
    std::optional<std::size_t> index;
    if (auto lb = part.find('['); lb != std::string::npos && part.back() == ']') {
      try {
        index = std::stoul(part.substr(lb + 1, part.size() - lb - 2));
      } catch (...) {
        bad("bad index in `" + part + "`");
      }
      part = part.substr(0, lb);
    }
    toml::node* n = tbl->get(part);
    if (n && n->is_array()) {
      auto* arr = n->as_array();
      if (!index) {
        // model.NAME.key selects the [[model]] whose name is NAME; a lone element needs no name.
        if (i + 2 < parts.size()) {
          for (auto& el : *arr) {
            auto* t = el.as_table();
            if (t && t->get_as<std::string>("name") &&
                t->get_as<std::string>("name")->get() == parts[i + 1]) {
              tbl = t;
              ++i;
              goto next;
            }
          }
        }
        if (arr->size() == 1) {
          index = 0;
        } else {
          bad("`" + part + "` has " + std::to_string(arr->size()) +
              " entries; select one with " + part + "[i] or " + part + ".NAME");
        }
      }
      if (*index >= arr->size() || !arr->get(*index)->is_table())
        bad("no table " + part + "[" + std::to_string(*index) + "]");
      tbl = arr->get(*index)->as_table();
    } else if (n) {
      if (index) bad("`" + part + "` is not an array");
      if (!n->is_table()) bad("`" + part + "` is not a table");
      tbl = n->as_table();
    } else {
      if (index) bad("no array `" + part + "`");
      tbl = tbl->insert(part, toml::table{}).first->second.as_table();
    }
  next:;
  }
  // The value is TOML when it parses as one (numbers, booleans, lists, quoted strings), else a string.
  std::string doc = "v = " + std::string(value_text);
  toml::parse_result parsed;
  bool ok = true;
  try {
    parsed = toml::parse(std::string_view(doc), std::string_view("--set"));
  } catch (const toml::parse_error&) {
    ok = false;
  }
  const std::string& leaf = parts.back();
  if (ok && parsed.contains("v")) {
    toml::node* v = parsed.get("v");
    v->visit([&](auto&& value) { tbl->insert_or_assign(leaf, value); });
  } else {
    tbl->insert_or_assign(leaf, std::string(value_text));
  }
  // Copied toml++ nodes carry no source position, so errors about this value cite "--set".
}

void Config::set(std::string_view key, double value) { node_->table->insert_or_assign(key, value); }
void Config::set(std::string_view key, std::int64_t value) {
  node_->table->insert_or_assign(key, value);
}
void Config::set(std::string_view key, bool value) { node_->table->insert_or_assign(key, value); }
void Config::set(std::string_view key, const std::string& value) {
  node_->table->insert_or_assign(key, value);
}
void Config::set(std::string_view key, const std::vector<double>& value) {
  toml::array arr;
  for (double x : value) arr.push_back(x);
  node_->table->insert_or_assign(key, std::move(arr));
}
void Config::set_table(std::string_view key, const Config& table) {
  node_->table->insert_or_assign(key, with_defaults(*table.node_, true));
}

}  // namespace kef
