// The config layer: every error cites file:line:column and the dotted key.
#include <gtest/gtest.h>

#include "kef/config.hpp"
#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

KeyList sample_keys() {
  return {KeySpec::number("sigma", "length scale", 1.0).positive(),
          KeySpec::integer("points", "count", 10).at_least(1),
          KeySpec::string("mode", "mode", std::string("a")).one_of({"a", "b"}),
          KeySpec::numbers("mean", "mean", std::vector<double>{0.0}),
          KeySpec::boolean("flag", "flag", false)};
}

std::string error_of(const std::string& text) {
  Config root = Config::parse_string(text, "pipe.toml");
  Config t = root.table("model");
  try {
    t.validate(sample_keys());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, UnknownKeyCitesPositionAndSuggestsTheNearestKey) {
  std::string msg = error_of("[model]\nsigma = 1.0\nsigmaa = 2.0\n");
  EXPECT_NE(msg.find("pipe.toml:3:1: model.sigmaa"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean `sigma`"), std::string::npos) << msg;
  EXPECT_NE(msg.find("valid keys: flag, mean, mode, points, sigma"), std::string::npos) << msg;
}

TEST(Config, WrongTypeSaysExpectedAndGot) {
  std::string msg = error_of("[model]\npoints = \"ten\"\n");
  EXPECT_NE(msg.find("pipe.toml:2:1: model.points"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an integer, got a string"), std::string::npos) << msg;
}

TEST(Config, OutOfRangeSaysTheRange) {
  std::string msg = error_of("[model]\nsigma = -0.5\n");
  EXPECT_NE(msg.find("model.sigma"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected > 0, got -0.5"), std::string::npos) << msg;
  EXPECT_NE(error_of("[model]\npoints = 0\n").find("expected >= 1"), std::string::npos);
  EXPECT_NE(error_of("[model]\nsigma = nan\n").find("finite"), std::string::npos);
}

TEST(Config, ChoicesAndListElementsAreChecked) {
  EXPECT_NE(error_of("[model]\nmode = \"c\"\n").find("expected one of: a, b"), std::string::npos);
  EXPECT_NE(error_of("[model]\nmean = [1.0, \"x\"]\n").find("element 1"), std::string::npos);
}

TEST(Config, DefaultsApplyAndFillIntoTheDocument) {
  Config root = Config::parse_string("[model]\npoints = 3\n", "pipe.toml");
  Config t = root.table("model");
  t.validate(sample_keys());
  EXPECT_EQ(t.integer("points"), 3);
  EXPECT_EQ(t.number("sigma"), 1.0);
  EXPECT_EQ(t.numbers("mean"), std::vector<double>{0.0});
  t.fill_defaults();
  EXPECT_NE(root.to_toml(false).find("sigma = 1"), std::string::npos) << root.to_toml(false);
}

TEST(Config, SyntaxErrorsCitePosition) {
  try {
    Config::parse_string("a = 1\nb = [1, 2\n", "broken.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.toml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TOML syntax error"), std::string::npos) << e.what();
  }
}

TEST(Config, SetOverridesReachArraysOfTablesByNameOrIndex) {
  Config root = Config::parse_string(
      "[[model]]\nname = \"a\"\n[model.kernel]\nsigma = 1.0\n[[model]]\nname = \"b\"\n[model.kernel]\nsigma = 2.0\n",
      "p.toml");
  root.set_from_text("model.b.kernel.sigma", "0.5");
  root.set_from_text("model[0].kernel.sigma", "3");
  auto models = root.table_array("model");
  EXPECT_EQ(models[1].table("kernel").number("sigma"), 0.5);
  EXPECT_EQ(models[0].table("kernel").number("sigma"), 3.0);
  EXPECT_THROW(root.set_from_text("model.kernel.sigma", "1"), ConfigError);  // ambiguous
  root.set_from_text("output.dir", "runs/x");
  EXPECT_EQ(root.table("output").string("dir"), "runs/x");
}

TEST(Config, OverriddenValuesAreCitedAsCommandLine) {
  Config root = Config::parse_string("[model]\nsigma = 1.0\n", "p.toml");
  root.set_from_text("model.sigma", "\"wide\"");
  try {
    root.table("model").validate(sample_keys());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("command line (--set): model.sigma"), std::string::npos) << e.what();
  }
}

TEST(Config, UnknownComponentTypeListsTheValidOnes) {
  try {
    test::plugin_registry().make_kernel(test::config_from("type = \"gausian\""), {});
    FAIL();
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("gausian"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gaussian"), std::string::npos) << msg;
  }
}

TEST(Errors, AKindNamedAsTextIsRaisedAgainWithItsExitStatus) {
  // What a failure crossing a process boundary as text (MPI ranks) becomes again: the same kind, hence
  // the same exit status (2 for bad input, 1 otherwise), and the same message.
  const std::vector<std::pair<std::string, int>> kinds = {{ConfigError("").kind(), 2},
                                                          {DataError("").kind(), 2},
                                                          {PluginError("").kind(), 2},
                                                          {ModelFileError("").kind(), 2},
                                                          {NumericalError("").kind(), 1},
                                                          {"something else", 1}};
  for (const auto& [kind, status] : kinds) {
    try {
      throw_error_of_kind(kind, "the message");
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "the message");
      EXPECT_EQ(e.exit_status(), status) << kind;
      EXPECT_EQ(std::string(e.kind()), kind == "something else" ? std::string("error") : kind);
    }
  }
}

}  // namespace
}  // namespace kef
