#pragma once
// A component's configuration: one TOML table of a pipeline file (or of a saved model.toml), with the
// source position of every value, and the component's declared keys. The host validates a table
// against the keys before the component's factory runs, so factories read values without re-checking
// types; errors a component finds itself (a value that conflicts with the data, say) go through
// fail(), which cites file:line:column and the dotted key.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kef {

enum class ValueKind {
  Boolean,
  Integer,
  Number,       // integer or floating point
  String,
  NumberList,   // a list of numbers, or a single number (broadcast by the component)
  StringList,
  Table,        // a nested component or option table
  TableArray,   // [[key]] entries
};

const char* to_string(ValueKind kind);

using DefaultValue =
    std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<double>>;

struct KeySpec {
  std::string name;
  ValueKind kind = ValueKind::Number;
  std::string doc;
  DefaultValue default_value{};  // monostate: no default
  bool required = false;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  std::vector<std::string> choices;  // allowed strings, when not empty

  // integer() keys are counts unless they say otherwise: at most this by default, so that a count
  // such as 2^63 - 1 is refused before any arithmetic on it can overflow (kef 0.2 reported "every
  // one of the 0 proposals"). A key that needs more (a seed) raises it with at_most().
  static constexpr double kDefaultIntegerMax = 1e12;

  // Builders keep plugin key lists short and readable.
  static KeySpec number(std::string name, std::string doc, std::optional<double> def = std::nullopt);
  static KeySpec integer(std::string name, std::string doc,
                         std::optional<std::int64_t> def = std::nullopt);
  static KeySpec boolean(std::string name, std::string doc, bool def);
  static KeySpec string(std::string name, std::string doc,
                        std::optional<std::string> def = std::nullopt);
  static KeySpec numbers(std::string name, std::string doc,
                         std::optional<std::vector<double>> def = std::nullopt);
  static KeySpec strings(std::string name, std::string doc);
  static KeySpec table(std::string name, std::string doc);
  static KeySpec table_array(std::string name, std::string doc);
  KeySpec& positive() { min = 0; min_exclusive = true; return *this; }
  KeySpec& non_negative() { min = 0; min_exclusive = false; return *this; }
  KeySpec& at_least(double v) { min = v; min_exclusive = false; return *this; }
  KeySpec& at_most(double v) { max = v; return *this; }
  KeySpec& one_of(std::vector<std::string> values) { choices = std::move(values); return *this; }
  KeySpec& mandatory() { required = true; return *this; }
  // No default and not required: the component checks has() itself.
  KeySpec& optional() { required = false; default_value = std::monostate{}; return *this; }
  std::string default_text() const;  // for --describe and READMEs
};

using KeyList = std::vector<KeySpec>;

namespace detail {
struct ConfigNode;
}

class Config {
 public:
  Config();  // an empty table with no source

  static Config parse_file(const std::string& path);
  static Config parse_string(std::string_view text, const std::string& source_name);
  // A document a program wrote from its arguments (`kef fit`, the Python kef.fit): its messages cite
  // `source_name` ("kef.fit") and the dotted key, not a line and column of a text the user never saw.
  static Config parse_generated(std::string_view text, const std::string& source_name);

  // Where this table sits: "pipeline.toml" and the dotted path "model[0].kernel".
  const std::string& source() const;
  const std::string& path() const;
  std::string dotted(std::string_view key) const;      // "model[0].kernel.sigma"
  std::string where(std::string_view key = {}) const;  // "pipeline.toml:12:9: model[0].kernel.sigma"

  bool has(std::string_view key) const;
  bool holds_integer(std::string_view key) const;  // present and written as an integer
  std::vector<std::string> keys() const;
  std::optional<std::string> type() const;  // the `type` key, if any

  // Typed access; a declared default applies when the key is absent.
  bool boolean(std::string_view key) const;
  std::int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;
  std::string string(std::string_view key) const;
  std::vector<double> numbers(std::string_view key) const;  // a scalar becomes a list of one
  std::vector<std::string> strings(std::string_view key) const;
  Config table(std::string_view key) const;
  std::vector<Config> table_array(std::string_view key) const;  // [[key]] arrays of tables

  // Checks unknown keys (besides `type` and the names in also_allowed), kinds, ranges and choices,
  // and remembers the keys so that defaults apply. Throws ConfigError naming the first problem.
  void validate(const KeyList& keys, const std::vector<std::string>& also_allowed = {});
  const KeyList& declared_keys() const;

  [[noreturn]] void fail(std::string_view key, const std::string& what) const;

  // Writes every declared default that is absent into the table itself, so that the whole document
  // reads as the fully resolved configuration.
  void fill_defaults();

  // The table with every declared default filled in, as TOML text and as JSON text.
  std::string to_toml(bool with_defaults = true) const;
  std::string to_json(bool with_defaults = true) const;

  // Pipeline-level edits (used by --set); value_text is parsed as a TOML value, or taken as a string.
  void set_from_text(std::string_view dotted_key, std::string_view value_text);
  // Builders for saved models.
  void set(std::string_view key, double value);
  void set(std::string_view key, std::int64_t value);
  void set(std::string_view key, bool value);
  void set(std::string_view key, const std::string& value);
  void set(std::string_view key, const std::vector<double>& value);
  void set_table(std::string_view key, const Config& table);

  const detail::ConfigNode& node() const { return *node_; }

 private:
  explicit Config(std::shared_ptr<detail::ConfigNode> node);
  std::shared_ptr<detail::ConfigNode> node_;
};

}  // namespace kef
