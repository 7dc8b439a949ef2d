// A realistic vocabulary size: 150,000 synthetic text-like tokens. Masks from the trie walk agree with accepts()
// for every token in states along random walks, and the trie holds every token once.
#include "grammar/synthetic_vocabulary.h"
#include "grammar_helpers.h"

namespace slimkv::grammar::test {
namespace {

std::shared_ptr<const TokenVocabulary> big_vocab() {
  static const auto v = [] {
    auto bytes = synthetic_token_bytes(150000, 42);
    return std::make_shared<const TokenVocabulary>(bytes, std::vector<int32_t>{static_cast<int32_t>(bytes.size() - 1)});
  }();
  return v;
}

TEST(GrammarVocabulary, TrieHoldsEveryTokenOnce) {
  auto v = big_vocab();
  ASSERT_EQ(v->size(), 150000u);
  EXPECT_EQ(v->token_order().size(), 149999u);  // all but the EOS
  size_t counted = 0;
  for (size_t i = 0; i < v->node_count(); ++i) counted += v->node(static_cast<uint32_t>(i)).token_count;
  EXPECT_EQ(counted, 149999u);
  EXPECT_THROW(TokenVocabulary({"a"}, {3}), slimkv::Error);
}

TEST(GrammarVocabulary, LargeVocabularyMasksAgreeWithAccepts) {
  auto v = big_vocab();
  const std::vector<const char*> schemas = {
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"]})",
      R"({"enum":["alpha","beta","gamma"]})",
  };
  for (const char* text : schemas) {
    const ojson schema = ojson::parse(text);
    auto g = compile_json_schema(schema);
    Matcher m(g, v);
    std::mt19937_64 rng(7);
    std::vector<uint8_t> mask;
    for (int step = 0; step < 12 && !m.is_exhausted(); ++step) {
      m.fill_mask(mask);
      std::vector<int32_t> allowed;
      size_t mismatches = 0;
      for (size_t id = 0; id < mask.size(); ++id) {
        mismatches += (mask[id] != 0) != m.accepts(static_cast<int32_t>(id));
        if (mask[id] && !v->is_eos(static_cast<int32_t>(id))) allowed.push_back(static_cast<int32_t>(id));
      }
      EXPECT_EQ(mismatches, 0u) << text << " step " << step;
      if (allowed.empty()) break;
      ASSERT_TRUE(m.advance(allowed[rng() % allowed.size()]));
    }
  }
}

TEST(GrammarVocabulary, CachedMasksEqualFreshOnes) {
  // Inside an unbounded string the parse set recurs after each plain token: the second mask comes from the cache.
  auto v = big_vocab();
  auto g = compile_any_json();
  Matcher m(g, v);
  for (const char* piece : {"{", "\"", "k"}) {
    int32_t id = -1;
    for (size_t i = 0; i < v->size() && id < 0; ++i)
      if (v->bytes(static_cast<int32_t>(i)) == piece) id = static_cast<int32_t>(i);
    ASSERT_GE(id, 0);
    ASSERT_TRUE(m.advance(id));
  }
  std::vector<uint8_t> first, second;
  m.fill_mask(first);
  ASSERT_TRUE(m.advance('x'));  // the same set again
  m.fill_mask(second);
  EXPECT_EQ(first, second);
  size_t allowed = 0;
  for (size_t id = 0; id < second.size(); ++id) {
    allowed += second[id];
    ASSERT_EQ(second[id] != 0, m.accepts(static_cast<int32_t>(id))) << id;
  }
  EXPECT_GT(allowed, 100000u);
  EXPECT_EQ(v->size() % 64, 48u);  // the tail word of the cached bitset is partial
}

TEST(GrammarVocabulary, LargeVocabularyWalksValidate) {
  auto v = big_vocab();
  const ojson schema = ojson::parse(
      R"({"type":"object","properties":{"id":{"type":"integer"},"ok":{"type":"boolean"},"who":{"enum":["ann","bob"]}},"required":["id","ok","who"]})");
  auto g = compile_json_schema(schema);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    bool finished = false;
    std::string out = random_walk(g, v, seed, 200, finished, false, 1.0);
    ASSERT_TRUE(finished) << out;
    std::string why;
    EXPECT_TRUE(schema_valid(ojson::parse(out), schema, schema, why)) << out << " " << why;
  }
}

}  // namespace
}  // namespace slimkv::grammar::test
