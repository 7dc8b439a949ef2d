// The grammar's token masks on a real 151K vocabulary (Qwen3's, from ../shared): along seeded random walks through
// schemas with bounded strings (where the plain-text shortcuts allow whole trie subtrees at once, exactly or by
// character count), non-ASCII, patterns and unbounded strings, every mask equals accepts() token by token.
#include <gtest/gtest.h>

#include <random>

#include "grammar/json_schema_compiler.h"
#include "grammar/matcher.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace slimkv::test {
namespace {

std::shared_ptr<const grammar::TokenVocabulary> qwen3_vocab(const std::string& dir) {
  const auto tok = load_hf_tokenizer(dir);
  std::vector<std::string> bytes;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) bytes.push_back(tok->decode_token(id, id));
  return std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), std::vector<int32_t>{tok->eos_id()});
}

// Walks `steps` tokens (a random allowed one each time, preferring long ones half the time so that counted strings
// run out), comparing fill_mask with accepts() at each; returns the number of mismatching (step, token) pairs.
size_t walk_and_compare(const std::shared_ptr<const grammar::Grammar>& g,
                        const std::shared_ptr<const grammar::TokenVocabulary>& v, uint64_t seed, int steps) {
  grammar::Matcher m(g, v);
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> mask;
  size_t mismatches = 0;
  for (int step = 0; step < steps && !m.is_exhausted(); ++step) {
    m.fill_mask(mask);
    std::vector<int32_t> allowed;
    for (size_t id = 0; id < mask.size(); ++id) {
      const bool ok = m.accepts(static_cast<int32_t>(id));
      if ((mask[id] != 0) != ok) ++mismatches;
      if (ok && !v->is_eos(static_cast<int32_t>(id))) allowed.push_back(static_cast<int32_t>(id));
    }
    if (allowed.empty()) break;
    int32_t pick = allowed[rng() % allowed.size()];
    if (rng() % 2)
      for (int k = 0; k < 8; ++k) {
        const int32_t other = allowed[rng() % allowed.size()];
        if (v->bytes(other).size() > v->bytes(pick).size()) pick = other;
      }
    EXPECT_TRUE(m.advance(pick));
  }
  return mismatches;
}

TEST(GrammarRealVocab, Qwen3MasksEqualAcceptsOnBoundedStrings) {
  const std::string dir = data_dir() + "/real-tokenizers/qwen3";
  SKIP_IF_MISSING(dir);
  const auto v = qwen3_vocab(dir);
  const std::vector<const char*> schemas = {
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},"city":{"type":"string","minLength":2,
         "maxLength":20},"zip":{"type":"string","pattern":"[0-9]{5}"},"note":{"type":"string"}},
         "required":["name","city","zip","note"],"additionalProperties":false})",
      R"({"type":"array","items":{"type":"string","maxLength":3},"minItems":2,"maxItems":4})",
      R"({"type":"object","properties":{"q":{"type":"string","maxLength":40}},"required":["q"]})",
  };
  for (const char* text : schemas) {
    const auto g = grammar::compile_json_schema_text(text);
    for (uint64_t seed = 1; seed <= 2; ++seed) EXPECT_EQ(walk_and_compare(g, v, seed, 14), 0u) << text << " seed " << seed;
  }
}

}  // namespace
}  // namespace slimkv::test
