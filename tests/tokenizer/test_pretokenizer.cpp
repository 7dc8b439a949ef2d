// PreTokenizer splitting semantics, presets and UTF-8 sanitising.
#include "core/check.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

std::vector<std::string> split(const PreTokenizer& p, std::string_view text) {
  std::vector<std::string_view> v;
  p.split(text, v);
  return {v.begin(), v.end()};
}

TEST(PreTokenizer, Gpt2Regex) {
  PreTokenizer p(pretokenizer_preset("gpt-2").patterns);
  using V = std::vector<std::string>;
  EXPECT_EQ(split(p, "Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split(p, "I'm   here!!\n"), (V{"I", "'m", "  ", " here", "!!", "\n"}));
  EXPECT_EQ(split(p, "w048 7tuijk"), (V{"w", "048", " 7", "tuijk"}));
  EXPECT_EQ(split(p, "caf\xC3\xA9 \xD0\xBD\xD0\xB0"), (V{"caf\xC3\xA9", " \xD0\xBD\xD0\xB0"}));
  EXPECT_TRUE(split(p, "").empty());
}

TEST(PreTokenizer, GapsBetweenMatchesAreKept) {
  PreTokenizer p(std::vector<std::string>{"[0-9]+"});
  using V = std::vector<std::string>;
  EXPECT_EQ(split(p, "ab12cd345"), (V{"ab", "12", "cd", "345"}));
  PreTokenizer chain(std::vector<std::string>{"[0-9]+", "[0-9][0-9]"});  // the second regex splits the pieces the first produced
  EXPECT_EQ(split(chain, "a12345b"), (V{"a", "12", "34", "5", "b"}));
  PreTokenizer empty_matches(std::vector<std::string>{"x*"});  // empty matches split nothing
  EXPECT_EQ(split(empty_matches, "abxxc"), (V{"ab", "xx", "c"}));
  EXPECT_EQ(split(PreTokenizer(), "whole text"), (V{"whole text"}));
}

TEST(PreTokenizer, DollarIsEndOfPieceOnly) {
  PreTokenizer p(std::vector<std::string>{R"(\s+$)"});
  using V = std::vector<std::string>;
  EXPECT_EQ(split(p, "a \n"), (V{"a", " \n"}));
  EXPECT_EQ(split(p, "a \nb"), (V{"a \nb"}));  // PCRE2's default '$' would match before the final newline
}

TEST(PreTokenizer, NextLineIsWhitespace) {  // U+0085 is White_Space for the tokenizers' \s, not for PCRE2's
  PreTokenizer p(pretokenizer_preset("gpt-2").patterns);
  using V = std::vector<std::string>;
  EXPECT_EQ(split(p, "a\xC2\x85\xC2\x85" "b"), (V{"a", "\xC2\x85", "\xC2\x85", "b"}));
}

TEST(PreTokenizer, EveryPresetCompiles) {
  for (const std::string& name : pretokenizer_preset_names()) {
    PreTokenizerPreset preset = pretokenizer_preset(name);
    PreTokenizer p(preset.patterns);
    const std::string text = "Hello, y'all! How are you \xF0\x9F\x98\x81 ?\xE6\x88\x91\xE6\x83\xB3 1314151\n\n  x";
    std::string joined;
    for (const auto& w : split(p, text)) {
      EXPECT_FALSE(w.empty()) << name;
      joined += w;
    }
    EXPECT_EQ(joined, text) << name;
  }
  EXPECT_THROW(pretokenizer_preset("no-such-thing"), Error);
  EXPECT_TRUE(pretokenizer_preset("llama-bpe").ignore_merges);
}

TEST(PreTokenizer, BadPatternIsAnError) {
  EXPECT_THROW(PreTokenizer(std::vector<std::string>{"(unclosed"}), Error);
  EXPECT_THROW(PreTokenizer(std::vector<std::string>{"[z-a]"}), Error);
}

TEST(PreTokenizer, LongInputs) {
  PreTokenizer p(pretokenizer_preset("llama3").patterns);
  std::string spaces(200000, ' ');
  std::string text = "a" + spaces + "b" + std::string(100000, '\n') + std::string(50000, '7');
  std::string joined;
  for (const auto& w : split(p, text)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(Utf8, Sanitize) {
  EXPECT_EQ(sanitize_utf8("plain ascii"), "plain ascii");
  EXPECT_EQ(sanitize_utf8("\xC3\xA9\xF0\x9F\xA6\x99"), "\xC3\xA9\xF0\x9F\xA6\x99");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(sanitize_utf8("a\xFF" "b"), "a" + fffd + "b");
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), fffd + fffd);               // truncated
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), fffd + fffd);               // overlong
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), fffd + fffd + fffd);    // surrogate
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(sanitize_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

}  // namespace
}  // namespace slimkv::test
