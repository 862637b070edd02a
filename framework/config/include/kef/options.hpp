#pragma once
// Typed options bound to declared keys. One declaration per key gives both the KeyList the host
// validates and documents (`kef plugins --describe`, READMEs) and the member of a plain options
// struct that the validated value is converted into, once, when the component is built:
//
//   struct LiteOptions {
//     std::optional<std::int64_t> inducing_points;
//     std::optional<std::filesystem::path> inducing_points_file;
//     double lambda_alpha = 0;
//   };
//   const OptionsSpec<LiteOptions>& lite_options() {
//     static const OptionsSpec<LiteOptions> spec = [] {
//       OptionsSpec<LiteOptions> s;
//       s.integer("inducing_points", &LiteOptions::inducing_points, "number of inducing
//       points").optional().at_least(1); s.path("inducing_points_file", &LiteOptions::inducing_points_file,
//       "points from a file").optional(); s.number("lambda_alpha", &LiteOptions::lambda_alpha, "ridge
//       penalty", 1e-3).positive(); return s;
//     }();
//     return spec;
//   }
//   info.keys = lite_options().keys();                  // registration: validation and docs
//   LiteOptions opt = lite_options().read(cfg);         // construction: typed values, read once
//
// Each declaring call returns the KeySpec it added, so the usual builders (.positive(), .optional(),
// .one_of(...)) chain on it. A key that may be left out without a default binds to a std::optional
// member, empty when the key is absent from the table. path() keys are strings resolved against the directory
// of the file the table came from. Cross-key rules (exactly one of two keys, a value checked against the
// data) stay with the component; KeySites keeps the places of the keys so that errors it finds later still
// cite file:line:column and the dotted key.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kef/config.hpp"

namespace kef {

// Where the keys of one config table sit: what Config::where and Config::fail say, kept as plain
// strings after the table has been read, so a component that keeps its typed options instead of the
// table still reports "pipeline.toml:12:9: model[0].estimator.inducing_points: ..." at fit time.
class KeySites {
 public:
  KeySites() = default;
  explicit KeySites(const Config& cfg);

  std::string where(std::string_view key = {}) const;                           // as Config::where
  [[noreturn]] void fail(std::string_view key, const std::string& what) const;  // as Config::fail

 private:
  std::string position_;  // "file:line:col" of the table, cited for keys it does not hold
  std::string path_;      // dotted path of the table
  std::map<std::string, std::string, std::less<>> keys_;  // Config::where of every key present
};

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {
  using value_type = T;
};
template <class M>
struct bound_value {
  using type = M;
};
template <class T>
struct bound_value<std::optional<T>> {
  using type = T;
};
template <class M>
using bound_value_t = typename bound_value<M>::type;
}  // namespace detail

template <class Options>
class OptionsSpec {
 public:
  template <class M>
  KeySpec& integer(std::string name, M Options::*member, std::string doc,
                   std::optional<std::int64_t> def = std::nullopt) {
    static_assert(
        std::is_integral_v<detail::bound_value_t<M>> && !std::is_same_v<detail::bound_value_t<M>, bool>,
        "integer keys bind to integer members");
    return add(KeySpec::integer(std::move(name), std::move(doc), def), member,
               [](const Config& c, const std::string& k) { return c.integer(k); });
  }
  template <class M>
  KeySpec& number(std::string name, M Options::*member, std::string doc,
                  std::optional<double> def = std::nullopt) {
    static_assert(std::is_floating_point_v<detail::bound_value_t<M>>,
                  "number keys bind to floating-point members");
    return add(KeySpec::number(std::move(name), std::move(doc), def), member,
               [](const Config& c, const std::string& k) { return c.number(k); });
  }
  KeySpec& boolean(std::string name, bool Options::*member, std::string doc, bool def) {
    return add(KeySpec::boolean(std::move(name), std::move(doc), def), member,
               [](const Config& c, const std::string& k) { return c.boolean(k); });
  }
  template <class M>
  KeySpec& string(std::string name, M Options::*member, std::string doc,
                  std::optional<std::string> def = std::nullopt) {
    static_assert(std::is_same_v<detail::bound_value_t<M>, std::string>,
                  "string keys bind to std::string members");
    return add(KeySpec::string(std::move(name), std::move(doc), std::move(def)), member,
               [](const Config& c, const std::string& k) { return c.string(k); });
  }
  // A string naming a file: relative paths are taken from the directory of the config's file, so the
  // component never needs the config again to find it.
  template <class M>
  KeySpec& path(std::string name, M Options::*member, std::string doc) {
    static_assert(std::is_same_v<detail::bound_value_t<M>, std::filesystem::path>,
                  "path keys bind to std::filesystem::path members");
    return add(KeySpec::string(std::move(name), std::move(doc)), member,
               [](const Config& c, const std::string& k) {
                 std::filesystem::path p = c.string(k);
                 if (p.is_relative()) p = std::filesystem::path(c.source()).parent_path() / p;
                 return p;
               });
  }
  template <class M>
  KeySpec& numbers(std::string name, M Options::*member, std::string doc,
                   std::optional<std::vector<double>> def = std::nullopt) {
    static_assert(std::is_same_v<detail::bound_value_t<M>, std::vector<double>>,
                  "number-list keys bind to std::vector<double> members");
    return add(KeySpec::numbers(std::move(name), std::move(doc), std::move(def)), member,
               [](const Config& c, const std::string& k) { return c.numbers(k); });
  }
  template <class M>
  KeySpec& strings(std::string name, M Options::*member, std::string doc) {
    static_assert(std::is_same_v<detail::bound_value_t<M>, std::vector<std::string>>,
                  "string-list keys bind to std::vector<std::string> members");
    return add(KeySpec::strings(std::move(name), std::move(doc)), member,
               [](const Config& c, const std::string& k) { return c.strings(k); });
  }
  // A nested table kept as a Config (a nested component's table, built by the component itself).
  template <class M>
  KeySpec& table(std::string name, M Options::*member, std::string doc) {
    static_assert(std::is_same_v<detail::bound_value_t<M>, Config>, "table keys bind to Config members");
    return add(KeySpec::table(std::move(name), std::move(doc)), member,
               // Config::table inserts an absent table into the document: an absent key stays absent.
               [](const Config& c, const std::string& k) { return c.has(k) ? c.table(k) : Config(); });
  }
  // A key declared elsewhere (a shared KeySpec such as split_key()) bound to a member; the value is
  // read as the member's type.
  template <class M>
  KeySpec& bind(KeySpec spec, M Options::*member) {
    using V = detail::bound_value_t<M>;
    return add(std::move(spec), member, [](const Config& c, const std::string& k) {
      if constexpr (std::is_same_v<V, bool>) {
        return c.boolean(k);
      } else if constexpr (std::is_integral_v<V>) {
        return c.integer(k);
      } else if constexpr (std::is_floating_point_v<V>) {
        return c.number(k);
      } else if constexpr (std::is_same_v<V, std::string>) {
        return c.string(k);
      } else if constexpr (std::is_same_v<V, std::vector<double>>) {
        return c.numbers(k);
      } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
        return c.strings(k);
      } else {
        static_assert(std::is_same_v<V, Config>, "bind: no reader for this member type");
        return c.has(k) ? c.table(k) : Config();
      }
    });
  }
  // A key declared for validation and docs only, bound to no member.
  KeySpec& declare(KeySpec spec) {
    entries_.push_back({std::move(spec), nullptr});
    return entries_.back().spec;
  }

  KeyList keys() const {
    KeyList out;
    out.reserve(entries_.size());
    for (const auto& e : entries_) out.push_back(e.spec);
    return out;
  }

  // The typed options of a table. The registry validates a component's table against keys() before
  // its factory runs; a table nobody validated yet (a component built by hand) is validated here, so
  // a bad value is a ConfigError citing file:line:column and the key either way.
  Options read(const Config& cfg) const {
    Config table = cfg;
    if (table.declared_keys().empty() && !entries_.empty()) table.validate(keys());
    Options out{};
    for (const auto& e : entries_)
      if (e.read) e.read(table, e.spec, out);
    return out;
  }

 private:
  using Reader = std::function<void(const Config&, const KeySpec&, Options&)>;
  struct Entry {
    KeySpec spec;
    Reader read;
  };

  template <class M, class Get>
  KeySpec& add(KeySpec spec, M Options::*member, Get get) {
    Reader read = [member, get](const Config& c, const KeySpec& s, Options& out) {
      if constexpr (detail::is_optional<M>::value) {
        // An optional member says whether the key was written: empty when it is absent, whatever
        // default the declaration shows (a list key's formal default, the empty list, included).
        if (!c.has(s.name)) {
          (out.*member).reset();
          return;
        }
        out.*member = static_cast<typename detail::is_optional<M>::value_type>(get(c, s.name));
      } else {
        out.*member = static_cast<M>(get(c, s.name));
      }
    };
    entries_.push_back({std::move(spec), std::move(read)});
    return entries_.back().spec;
  }

  std::vector<Entry> entries_;
};

}  // namespace kef
