// Typed options (kef/options.hpp): one declaration gives the KeyList the host validates and documents
// and the typed struct the component reads once; errors still cite file:line:column and the key.
#include "kef/options.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

struct Sample {
  std::int64_t points = 0;
  std::optional<std::int64_t> limit;
  double sigma = 0;
  std::optional<double> bandwidth;
  bool flag = false;
  std::string mode;
  std::vector<double> mean;
  std::optional<std::vector<std::string>> groups;
  std::optional<std::filesystem::path> file;
  Config inner;
};

const OptionsSpec<Sample>& spec() {
  static const OptionsSpec<Sample> s = [] {
    OptionsSpec<Sample> o;
    o.integer("points", &Sample::points, "how many points", 10).at_least(1);
    o.integer("limit", &Sample::limit, "an optional cap").optional().at_least(2);
    o.number("sigma", &Sample::sigma, "length scale", 1.5).positive();
    o.number("bandwidth", &Sample::bandwidth, "optional bandwidth").optional().positive();
    o.boolean("flag", &Sample::flag, "a switch", true);
    o.string("mode", &Sample::mode, "mode", std::string("a")).one_of({"a", "b"});
    o.numbers("mean", &Sample::mean, "mean", std::vector<double>{0.0});
    o.strings("groups", &Sample::groups, "groups");
    o.path("file", &Sample::file, "a file relative to the pipeline").optional();
    o.table("inner", &Sample::inner, "a nested table").optional();
    return o;
  }();
  return s;
}

// The same keys declared the 0.2 way, with KeySpec builders.
KeyList expected_keys() {
  return {KeySpec::integer("points", "how many points", 10).at_least(1),
          KeySpec::integer("limit", "an optional cap").optional().at_least(2),
          KeySpec::number("sigma", "length scale", 1.5).positive(),
          KeySpec::number("bandwidth", "optional bandwidth").optional().positive(),
          KeySpec::boolean("flag", "a switch", true),
          KeySpec::string("mode", "mode", std::string("a")).one_of({"a", "b"}),
          KeySpec::numbers("mean", "mean", std::vector<double>{0.0}),
          KeySpec::strings("groups", "groups"),
          KeySpec::string("file", "a file relative to the pipeline").optional(),
          KeySpec::table("inner", "a nested table").optional()};
}

Config component(const std::string& body, const std::string& source = "/data/run/pipe.toml") {
  return Config::parse_string("[model]\n" + body, source).table("model");
}

TEST(Options, KeysAreTheDeclaredKeySpecsInOrder) {
  const KeyList got = spec().keys(), want = expected_keys();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].kind, want[i].kind);
    EXPECT_EQ(got[i].doc, want[i].doc);
    EXPECT_EQ(got[i].default_text(), want[i].default_text());
    EXPECT_EQ(got[i].required, want[i].required);
    EXPECT_EQ(got[i].min, want[i].min);
    EXPECT_EQ(got[i].max, want[i].max);
    EXPECT_EQ(got[i].min_exclusive, want[i].min_exclusive);
    EXPECT_EQ(got[i].choices, want[i].choices);
  }
}

TEST(Options, ValidatedValuesAreConvertedToTheirTypesWithDefaults) {
  Config cfg = component(
      "points = 7\nbandwidth = 0.5\nmode = \"b\"\nmean = [1, 2]\ngroups = [\"x\"]\n"
      "file = \"z.npy\"\n[model.inner]\ntype = \"t\"\n");
  cfg.validate(spec().keys());
  const Sample s = spec().read(cfg);
  EXPECT_EQ(s.points, 7);
  EXPECT_FALSE(s.limit.has_value());
  EXPECT_EQ(s.sigma, 1.5);  // the declared default
  ASSERT_TRUE(s.bandwidth.has_value());
  EXPECT_EQ(*s.bandwidth, 0.5);
  EXPECT_TRUE(s.flag);
  EXPECT_EQ(s.mode, "b");
  EXPECT_EQ(s.mean, (std::vector<double>{1.0, 2.0}));
  ASSERT_TRUE(s.groups.has_value());
  EXPECT_EQ(*s.groups, std::vector<std::string>{"x"});
  // Resolved once, against the folder of the file the table came from.
  ASSERT_TRUE(s.file.has_value());
  EXPECT_EQ(*s.file, std::filesystem::path("/data/run/z.npy"));
  EXPECT_EQ(s.inner.type(), std::optional<std::string>("t"));
  EXPECT_EQ(s.inner.path(), "model.inner");

  const Sample absent = spec().read([] {
    Config c = component("");
    c.validate(spec().keys());
    return c;
  }());
  EXPECT_FALSE(absent.groups.has_value());
  EXPECT_FALSE(absent.file.has_value());
  EXPECT_FALSE(absent.bandwidth.has_value());
  EXPECT_EQ(absent.points, 10);
}

TEST(Options, ReadingLeavesTheTableAsWritten) {
  Config cfg = component("points = 2\n");
  cfg.validate(spec().keys());
  const std::string before = cfg.to_toml(false);
  (void)spec().read(cfg);
  EXPECT_FALSE(cfg.has("inner"));  // an absent optional table is not inserted
  EXPECT_EQ(cfg.to_toml(false), before);
}

TEST(Options, AbsolutePathsStayAsGiven) {
  Config cfg = component("file = \"/abs/z.csv\"\n");
  EXPECT_EQ(*spec().read(cfg).file, std::filesystem::path("/abs/z.csv"));
}

TEST(Options, ABadValueIsAConfigErrorNamingFileLineAndKey) {
  // Validated by the registry, or by read() itself when nobody validated the table yet.
  Config by_registry = component("sigma = 1.0\npoints = 0\n");
  const std::string e1 = test::message_of<ConfigError>([&] { by_registry.validate(spec().keys()); });
  Config by_hand = component("sigma = 1.0\npoints = 0\n");
  const std::string e2 = test::message_of<ConfigError>([&] { (void)spec().read(by_hand); });
  for (const std::string& e : {e1, e2}) {
    EXPECT_NE(e.find("/data/run/pipe.toml:3:1: model.points"), std::string::npos) << e;
    EXPECT_NE(e.find(">= 1"), std::string::npos) << e;
  }
  Config wrong_kind = component("mode = 3\n");
  const std::string e3 = test::message_of<ConfigError>([&] { (void)spec().read(wrong_kind); });
  EXPECT_NE(e3.find("pipe.toml:2:1: model.mode"), std::string::npos) << e3;
}

TEST(Options, KeySitesCiteWhatConfigCites) {
  Config cfg = component("points = 3\n\nsigma = 2.0\n");
  cfg.validate(spec().keys());
  const KeySites sites(cfg);
  for (const char* key : {"points", "sigma", "limit", "", "type"})
    EXPECT_EQ(sites.where(key), cfg.where(key)) << key;
  const std::string e = test::message_of<ConfigError>([&] { sites.fail("sigma", "too large for the data"); });
  EXPECT_EQ(e, cfg.where("sigma") + ": too large for the data");
  EXPECT_NE(e.find("pipe.toml:4:1: model.sigma"), std::string::npos) << e;
  // A table at the root (a saved model.toml) has no dotted path.
  Config root = Config::parse_string("a = 1\n", "m.toml");
  EXPECT_EQ(KeySites(root).where("a"), root.where("a"));
  EXPECT_EQ(KeySites(root).where("b"), root.where("b"));
  EXPECT_EQ(KeySites(root).where(), root.where());
}

}  // namespace
}  // namespace kef
