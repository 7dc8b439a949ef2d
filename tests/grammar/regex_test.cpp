// compile_regex: the supported subset matches as an anchored full match, byte by byte; unsupported constructs are
// GrammarErrors naming them.
#include "grammar_helpers.h"

namespace slimkv::grammar::test {
namespace {

struct RegexCase {
  std::string pattern;
  std::vector<std::string> yes, no;
};

TEST(GrammarRegex, AcceptsAndRejects) {
  const std::vector<RegexCase> cases = {
      {"abc", {"abc"}, {"", "ab", "abcd", "abd"}},
      {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
      {"(ab)+", {"ab", "abab"}, {"", "a", "aba"}},
      {"a*b?", {"", "a", "aaab", "b"}, {"bb", "ba"}},
      {"[a-c]{2,3}", {"ab", "ccc"}, {"a", "abca", "ad"}},
      {"[^a-c]", {"d", "Z", "\xc3\xa9"}, {"a", "", "de"}},
      {"x{3}", {"xxx"}, {"xx", "xxxx"}},
      {"x{2,}", {"xx", "xxxxx"}, {"x"}},
      {"\\d+(\\.\\d{1,2})?", {"0", "12.5", "3.14"}, {"1.", "1.234", ".5"}},
      {"\\w+@\\w+\\.com", {"a_1@b.com"}, {"a@b.org", "@b.com"}},
      {"\\s\\S", {" a", "\tb"}, {"  ", "ab"}},
      {".+", {"a", "é中", "a b"}, {"", "a\nb"}},
      {"^(?:yes|no)$", {"yes", "no"}, {"yesno", "y"}},
      {"(?P<year>\\d{4})-(?<m>\\d\\d)", {"2024-01"}, {"2024-1"}},
      {"[\\d\\-x]+", {"1-x", "---"}, {"a"}},
      {"[]a]", {"]", "a"}, {"b"}},
      {"\\x41\\u00e9\\n\\t\\.", {"Aé\n\t."}, {"Ae\n\t."}},
      {"[éà]", {"é", "à"}, {"e"}},
      {"a+?b*+", {"a", "aab"}, {"b"}},
      {"(a|ab)(c|bcd)", {"ac", "abcd", "abc"}, {"ab", "abcdc"}},
      {"(a?)*b", {"b", "aab"}, {"a"}},
      {"[+*?.]", {"+", "*", "?", "."}, {"a"}},
      {"a{0}b", {"b"}, {"ab"}},
  };
  for (const auto& c : cases) {
    auto g = compile_regex(c.pattern);
    for (const auto& s : c.yes) EXPECT_TRUE(full_match(g, s)) << c.pattern << " should match '" << s << "'";
    for (const auto& s : c.no) EXPECT_FALSE(full_match(g, s)) << c.pattern << " should not match '" << s << "'";
  }
}

TEST(GrammarRegex, PrefixesStayAlive) {
  auto g = compile_regex("[0-9]{3}-[0-9]{4}");
  EXPECT_EQ(match_text(g, "555-"), 0);
  EXPECT_EQ(match_text(g, "555-1234"), 1);
  EXPECT_EQ(match_text(g, "55a"), -1);
}

TEST(GrammarRegex, UnsupportedConstructsAreErrors) {
  for (const char* p : {"(a)\\1", "a(?=b)", "(?!a)b", "(?<=a)b", "\\bword", "\\p{L}", "[[:alpha:]]", "a{3,2}",
                        "a{99999}", "(ab", "ab)", "*a", "[abc", "a^b", "\\"}) {
    EXPECT_THROW(compile_regex(p), GrammarError) << p;
  }
  try {
    compile_regex("a(?=b)");
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("lookaround"), std::string::npos) << e.what();
  }
}

TEST(GrammarRegex, LargeBoundedRepetitionIsBoundedGrammar) {
  auto g = compile_regex("[a-z]{0,5000}");
  EXPECT_TRUE(full_match(g, std::string(5000, 'q')));
  EXPECT_FALSE(full_match(g, std::string(5001, 'q')));
}

TEST(GrammarChoice, ExactlyOneOfTheChoices) {
  auto g = compile_choice({"red", "green", "greenish", "blue", "", "\"quoted\""});
  for (const char* s : {"red", "green", "greenish", "blue", "", "\"quoted\""}) EXPECT_TRUE(full_match(g, s)) << s;
  for (const char* s : {"re", "greeni", "Red", "blues", "x"}) EXPECT_FALSE(full_match(g, s)) << s;
  EXPECT_EQ(match_text(g, "gre"), 0);
  EXPECT_THROW(compile_choice({}), GrammarError);
}

TEST(GrammarChoice, ManyChoicesKeepOneParse) {
  std::vector<std::string> choices;
  for (int i = 0; i < 3000; ++i) choices.push_back("option_" + std::to_string(i * 7919 % 100000));
  auto g = compile_choice(choices);
  for (int i = 0; i < 3000; i += 97) EXPECT_TRUE(full_match(g, choices[static_cast<size_t>(i)]));
  EXPECT_FALSE(full_match(g, "option_"));
  EXPECT_FALSE(full_match(g, "option_99999999"));
}

}  // namespace
}  // namespace slimkv::grammar::test
