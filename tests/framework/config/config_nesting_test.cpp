// Deeply nested TOML is refused before TOML++ sees it: kef 0.2 died with SIGSEGV (stack exhaustion
// inside TOML++) on a table header of 40 000 dotted components. The bound is 64 levels; strings and
// comments do not count.
#include <gtest/gtest.h>

#include <fstream>

#include "kef/config.hpp"
#include "kef/error.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

std::string repeat(const std::string& unit, int times, const std::string& sep = "") {
  std::string s;
  for (int i = 0; i < times; ++i) s += (i ? sep : "") + unit;
  return s;
}

std::string parse_error(const std::string& text) {
  try {
    (void)Config::parse_string(text, "deep.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigNesting, AHeaderOf40000DottedComponentsIsAConfigErrorNamingTheLine) {
  const std::string text = "schema_version = 1\n# a comment\n[" + repeat("a", 40000, ".") + "]\nx = 1\n";
  const std::string e = parse_error(text);
  EXPECT_NE(e.find("deep.toml:3: "), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("at most 64"), std::string::npos) << e.substr(0, 300);
  // The same through a file, as `kef validate` reads it.
  auto dir = test::temp_dir("config-nesting");
  std::ofstream(dir / "deep.toml") << text;
  try {
    (void)Config::parse_file((dir / "deep.toml").string());
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find((dir / "deep.toml").string() + ":3: "), std::string::npos);
  }
}

TEST(ConfigNesting, DottedKeysArraysAndInlineTablesAreBoundedToo) {
  EXPECT_NE(parse_error("x = 1\n" + repeat("a", 40000, ".") + " = 1\n").find("deep.toml:2: "),
            std::string::npos);
  EXPECT_NE(parse_error("v = " + repeat("[", 40000) + repeat("]", 40000) + "\n").find("deep.toml:1: "),
            std::string::npos);
  EXPECT_NE(
      parse_error("v = " + repeat("{a = ", 40000) + "1" + repeat("}", 40000) + "\n").find("deep.toml:1: "),
      std::string::npos);
  EXPECT_NE(parse_error("v = {" + repeat("a", 40000, ".") + " = 1}\n").find("deep.toml:1: "),
            std::string::npos);
  // A table two levels deep whose key adds the rest (a key of 64 components opens 63 tables).
  EXPECT_NE(parse_error("[a.b]\n" + repeat("c", 64, ".") + " = 1\n").find("deep.toml:2: "),
            std::string::npos);
  EXPECT_EQ(parse_error("[a.b]\n" + repeat("c", 63, ".") + " = 1\n"), "");
}

TEST(ConfigNesting, TheBoundIsSixtyFourLevelsAndStringsAndCommentsDoNotCount) {
  EXPECT_EQ(parse_error("[" + repeat("a", 64, ".") + "]\nx = 1\n"), "");
  EXPECT_NE(parse_error("[" + repeat("a", 65, ".") + "]\nx = 1\n"), "");
  EXPECT_EQ(parse_error(repeat("a", 64, ".") + " = [1]\n"), "");  // 63 tables and an array
  EXPECT_NE(parse_error(repeat("a", 65, ".") + " = [1]\n"), "");
  // Levels are the tables and arrays around a value: a key of one component adds none. 64 nested
  // arrays are accepted, 65 refused, and the message counts them as the README does.
  EXPECT_EQ(parse_error("v = " + repeat("[", 64) + repeat("]", 64) + "\n"), "");
  const std::string deep = parse_error("v = " + repeat("[", 65) + repeat("]", 65) + "\n");
  EXPECT_NE(deep.find("nested 65 levels deep (at most 64"), std::string::npos) << deep;
  EXPECT_EQ(parse_error("[" + repeat("a", 63, ".") + "]\nx = [1]\n"), "");
  EXPECT_NE(parse_error("[" + repeat("a", 64, ".") + "]\nx = [1]\n").find("nested 65 levels"),
            std::string::npos);
  // Brackets, braces and dots inside strings, multi-line strings, quoted keys and comments.
  const std::string noise = repeat("[{a.", 5000);
  const std::string text = "s = \"" + noise + "\"\nt = '" + noise + "'\nu = \"\"\"\n" + noise +
                           "\n\\\"\"\"\"\n" + "w = '''\n" + noise + "'''\n# " + noise + "\n\"" + noise +
                           "\" = 1\n[\"t" + noise + "\".b]\nx = [1.5, 2.5, {y.z = \"]]]\"}]\n";
  const std::string e = parse_error(text);
  EXPECT_EQ(e, "");
  Config c = Config::parse_string(text, "deep.toml");
  EXPECT_EQ(c.string("s"), noise);
  EXPECT_EQ(c.string("w"), noise);
}

// Found by fuzzing (scripts/fuzz.sh toml): TOML++ 3.3 executes an unreachable branch (undefined
// behaviour, reported by UBSan) when it meets some non-ASCII characters outside strings; they are
// syntax errors in TOML 1.0 anyway and are refused before TOML++ runs.
TEST(ConfigNesting, NonAsciiOutsideStringsAndCommentsIsASyntaxErrorNamingTheLine) {
  for (const std::string text : {"\xc6\xb1l0.", "a = 1\n\xc6\xb1 = 2\n", "[t]\nx = \xc6\xb1\n",
                                 "[t] \xc6\xb1\n", "[\xc6\xb1]\n", "v = {\xc6\xb1 = 1}\n"}) {
    const std::string e = parse_error(text);
    EXPECT_NE(e.find("non-ASCII character outside a string or comment"), std::string::npos)
        << text << ": " << e;
  }
  EXPECT_NE(parse_error("a = 1\n\xc6\xb1 = 2\n").find("deep.toml:2: "), std::string::npos);
  Config c = Config::parse_string(
      "\"cl\xc3\xa9\" = \"v\xc3\xa4lue\" # \xc3\xbc\n[\"t\xc3\xa9\"]\nx = '\xc6\xb1'\n", "ok.toml");
  EXPECT_EQ(c.string("cl\xc3\xa9"), "v\xc3\xa4lue");
  EXPECT_EQ(c.table("t\xc3\xa9").string("x"), "\xc6\xb1");
}

TEST(ConfigNesting, AQuoteWhereNoStringCanStartIsASyntaxError) {
  // Also found by fuzzing: TOML++ read `105_"...` as a bad number, met the non-ASCII characters this
  // scan had taken for a string, and reached the same unreachable branch.
  for (const std::string text :
       {"t =[{ test = 105_\"LBB\xc4\x90\xdf\xbbKEF", "x = 1 \"a\"\n", "[a \"b\"]\n", "a\"b\" = 1\n"}) {
    const std::string e = parse_error(text);
    EXPECT_NE(e.find("a quote where no string or quoted key can start"), std::string::npos)
        << text << ": " << e;
  }
  // Everywhere TOML puts strings and quoted keys, they are accepted.
  const std::string ok =
      "\xEF\xBB\xBF\"a\".\"b\" = 'x'\nc = [\n  # note \"\n  \"y\", 'z',\n  \"\"\"w\"\"\"\n]\n"
      "d = { \"k\" = \"v\", e.\"f\" = '''g''' }\n[ \"h\" . 'i' ]\nj = \"\\\"\"\n[[\"l\"]]\nm = 1\n";
  Config c = Config::parse_string(ok, "ok.toml");
  EXPECT_EQ(c.table("a").string("b"), "x");
  EXPECT_EQ(c.table("d").table("e").string("f"), "g");
  EXPECT_EQ(c.table("h").table("i").string("j"), "\"");
}

TEST(ConfigNesting, ASetOverrideWithTooManyComponentsIsRefused) {
  Config c = Config::parse_string("x = 1\n", "p.toml");
  try {
    c.set_from_text(repeat("a", 40000, "."), "1");
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("key components (at most 64)"), std::string::npos);
  }
  c.set_from_text("a.b.c", "2");
  EXPECT_EQ(c.table("a").table("b").integer("c"), 2);
}

}  // namespace
}  // namespace kef
