// Shared helpers of the grammar tests: a tiny vocabulary (every single byte plus some multi-byte tokens and an
// EOS), whole-text matching byte by byte, a seeded random walk over fill_mask, and a validator for the JSON
// schema keywords slimkv_grammar supports.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/choice_compiler.h"
#include "grammar/grammar_error.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/matcher.h"
#include "grammar/regex_compiler.h"
#include "grammar/token_vocabulary.h"

namespace slimkv::grammar::test {

using ojson = nlohmann::ordered_json;

// ids 0..255: the single bytes; then multi-byte tokens; the last id: EOS (no bytes).
inline std::shared_ptr<const TokenVocabulary> tiny_vocab() {
  static const auto v = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
    for (const char* s : {"\"", "{\"", "\":", "\": ", "\", \"", "\",\"", "true", "false", "null", "123", "  ", "\n  ",
                          "abc", "name", "\"name\"", "]}", "}]", "},{", "\\n", "\\u00e9", "-0.5", "1e3", "\xc3\xa9",
                          "\xe4\xb8\xad", "red", "green", "ab", "2024-01-", "T12:00:00Z"})
      t.push_back(s);
    t.push_back("");
    return std::make_shared<const TokenVocabulary>(t, std::vector<int32_t>{static_cast<int32_t>(t.size() - 1)});
  }();
  return v;
}
inline int32_t tiny_eos() { return static_cast<int32_t>(tiny_vocab()->size() - 1); }

// Feeds `text` byte by byte: 1 = complete match, 0 = valid prefix only, -1 = rejected somewhere.
inline int match_text(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g, tiny_vocab());
  for (char c : text)
    if (!m.advance(static_cast<uint8_t>(c))) return -1;
  return m.is_complete() ? 1 : 0;
}
inline bool full_match(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  return match_text(g, text) == 1;
}

// Picks random allowed tokens (checking fill_mask against accepts() when `check_accepts`) until EOS is drawn
// (probability `stop` whenever it is allowed) or max_tokens; `finished` says whether EOS ended it.
inline std::string random_walk(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const TokenVocabulary>& v,
                               uint64_t seed, size_t max_tokens, bool& finished, bool check_accepts = true,
                               double stop = 0.3) {
  Matcher m(g, v);
  std::mt19937_64 rng(seed);
  std::string text;
  std::vector<uint8_t> mask;
  finished = false;
  for (size_t step = 0; step < max_tokens; ++step) {
    m.fill_mask(mask);
    std::vector<int32_t> allowed;
    bool eos_ok = false;
    for (size_t id = 0; id < mask.size(); ++id) {
      if (check_accepts) {
        EXPECT_EQ(mask[id] != 0, m.accepts(static_cast<int32_t>(id))) << "token " << id;
      }
      if (!mask[id]) continue;
      if (v->is_eos(static_cast<int32_t>(id))) eos_ok = true;
      else allowed.push_back(static_cast<int32_t>(id));
    }
    EXPECT_EQ(eos_ok, m.is_complete());
    if (eos_ok && (allowed.empty() || std::uniform_real_distribution<double>(0, 1)(rng) < stop)) {
      EXPECT_TRUE(m.advance(v->eos_ids()[0]));
      finished = true;
      return text;
    }
    if (allowed.empty()) {
      ADD_FAILURE() << "no token allowed and not complete after: " << text;
      return text;
    }
    const int32_t tok = allowed[rng() % allowed.size()];
    EXPECT_TRUE(m.advance(tok));
    text += v->bytes(tok);
  }
  return text;
}

inline size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

// Whether `value` satisfies `schema` for the supported keywords (why not, in `why`). `root` resolves $ref.
bool schema_valid(const ojson& value, const ojson& schema, const ojson& root, std::string& why);

}  // namespace slimkv::grammar::test
