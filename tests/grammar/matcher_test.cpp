// Matcher: masks agree with accepts() for every token, multi-byte tokens, EOS only when complete, rejected tokens
// leave the state unchanged, is_exhausted, and the bounds (deep nesting is pruned, never a hang).
#include "grammar_helpers.h"

namespace slimkv::grammar::test {
namespace {

int32_t tiny_id(const std::string& bytes) {
  auto v = tiny_vocab();
  for (size_t id = 0; id < v->size(); ++id)
    if (v->bytes(static_cast<int32_t>(id)) == bytes && (bytes.size() > 1 || id < 256)) return static_cast<int32_t>(id);
  return -1;
}

void expect_mask_matches_accepts(const Matcher& m) {
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  ASSERT_EQ(mask.size(), tiny_vocab()->size());
  for (size_t id = 0; id < mask.size(); ++id)
    EXPECT_EQ(mask[id] != 0, m.accepts(static_cast<int32_t>(id))) << "token " << id;
}

TEST(GrammarMatcher, MultiByteTokensAndMasks) {
  auto g = compile_json_schema(ojson::parse(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})"));
  Matcher m(g, tiny_vocab());
  expect_mask_matches_accepts(m);
  EXPECT_TRUE(m.accepts(tiny_id("{\"")));
  EXPECT_FALSE(m.accepts(tiny_id("\"name\"")));
  EXPECT_FALSE(m.accepts(tiny_eos()));
  ASSERT_TRUE(m.advance(tiny_id("{\"")));
  expect_mask_matches_accepts(m);
  ASSERT_TRUE(m.advance(tiny_id("name")));
  EXPECT_FALSE(m.advance(tiny_id("abc")));  // rejected: state unchanged
  ASSERT_TRUE(m.advance(tiny_id("\": ")));
  expect_mask_matches_accepts(m);
  ASSERT_TRUE(m.advance(tiny_id("\"")));
  ASSERT_TRUE(m.advance(tiny_id("\\u00e9")));
  ASSERT_TRUE(m.advance(tiny_id("\xe4\xb8\xad")));
  ASSERT_TRUE(m.advance(tiny_id("\"")));
  EXPECT_FALSE(m.is_complete());
  ASSERT_TRUE(m.advance(tiny_id("}")));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.is_exhausted());
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  for (size_t id = 0; id < mask.size(); ++id) EXPECT_EQ(mask[id], static_cast<int32_t>(id) == tiny_eos()) << id;
  ASSERT_TRUE(m.advance(tiny_eos()));
  EXPECT_TRUE(m.is_ended());
  EXPECT_FALSE(m.accepts(tiny_id("}")));
  EXPECT_FALSE(m.accepts(tiny_eos()));
}

TEST(GrammarMatcher, CompleteButNotExhausted) {
  auto g = compile_regex("a+");
  Matcher m(g, tiny_vocab());
  EXPECT_FALSE(m.is_complete());
  ASSERT_TRUE(m.advance('a'));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.is_exhausted());
  EXPECT_TRUE(m.accepts(tiny_eos()));
  EXPECT_TRUE(m.accepts('a'));
  EXPECT_FALSE(m.accepts(tiny_id("ab")));
  expect_mask_matches_accepts(m);
  auto fixed = compile_choice({"ab"});
  Matcher f(fixed, tiny_vocab());
  ASSERT_TRUE(f.advance(tiny_id("ab")));
  EXPECT_TRUE(f.is_exhausted());
}

TEST(GrammarMatcher, OutOfRangeAndEmptyTokensAreRejected) {
  Matcher m(compile_any_json(), tiny_vocab());
  EXPECT_FALSE(m.accepts(-1));
  EXPECT_FALSE(m.accepts(static_cast<int32_t>(tiny_vocab()->size())));
  EXPECT_FALSE(m.advance(-1));
  auto v = std::make_shared<const TokenVocabulary>(std::vector<std::string>{"{", "", "}"}, std::vector<int32_t>{});
  Matcher e(compile_any_json(), v);
  std::vector<uint8_t> mask;
  e.fill_mask(mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 0, 0}));
}

TEST(GrammarMatcher, DeepNestingIsPrunedNotAHang) {
  Matcher m(compile_any_json(), tiny_vocab());
  ASSERT_TRUE(m.advance('{'));
  std::string key = "\"k\":";
  for (char c : key) ASSERT_TRUE(m.advance(static_cast<uint8_t>(c)));
  size_t depth = 0;
  while (m.advance('[') && depth < 100000) ++depth;
  EXPECT_LT(depth, 100000u);
  EXPECT_GT(depth, 100u);
  std::vector<uint8_t> mask;
  m.fill_mask(mask);  // still answers
  EXPECT_FALSE(mask['[']);
  EXPECT_TRUE(mask[']']);
}

TEST(GrammarMatcher, TooAmbiguousIsAnErrorNotAHang) {
  // Thousands of live parses at once (which optional 'a' took the byte): refused past kMaxStacks.
  std::string pattern;
  for (int i = 0; i < 5; ++i) pattern += "(a?){1000}";
  auto g = compile_regex(pattern);
  EXPECT_THROW(Matcher(g, tiny_vocab()), GrammarError);
  auto fine = compile_regex("(a?){1000}b");
  Matcher m(fine, tiny_vocab());
  EXPECT_TRUE(m.advance('a'));
  EXPECT_TRUE(m.advance('b'));
  EXPECT_TRUE(m.is_exhausted());
}

TEST(GrammarMatcher, MatchersShareAGrammar) {
  auto g = compile_choice({"red", "green"});
  Matcher a(g, tiny_vocab()), b(g, tiny_vocab());
  ASSERT_TRUE(a.advance(tiny_id("red")));
  EXPECT_TRUE(a.is_complete());
  EXPECT_FALSE(b.is_complete());
  EXPECT_TRUE(b.advance(tiny_id("green")));
}

}  // namespace
}  // namespace slimkv::grammar::test
