// Added tokens as Hugging Face matches them in text (AddedVocabulary): one leftmost-longest scan over every added
// token's content, then special matches dropped when special-token parsing is off, single_word checked, lstrip /
// rstrip widening the match over neighbouring whitespace. Owns: the token list and its byte trie.
// Must not know: normalizers, pre-tokenizers or the model that encodes the text between matches.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace slimkv {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;     // a control token: matched only with parse_special, skipped by skip_special
  bool normalized = false;  // matched in the normalized text (else in the raw text, before normalizers)
  bool lstrip = false, rstrip = false;  // the match takes the whitespace on its left / right
  bool single_word = false;             // matched only with no word character on either side
};

struct TextSpan {
  int32_t token;       // the added token's id, or -1 for text the model encodes
  size_t begin, end;   // byte range in the scanned text
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);  // tokens with empty content are ignored
  bool empty() const { return tokens_.empty(); }
  // Spans covering `text` in order; text spans are never empty. An empty text gives no spans.
  std::vector<TextSpan> split(std::string_view text, bool parse_special) const;

 private:
  int32_t longest_at(std::string_view text, size_t pos, size_t& len) const;  // token index or -1

  std::vector<AddedToken> tokens_;
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child node; node 0 is the root
  std::vector<int32_t> terminal_;                // [node] token index ending here, or -1
};

// Unicode classes as Rust's char methods define them (HF's lstrip / rstrip / single_word tests).
bool is_unicode_whitespace(uint32_t cp);
bool is_word_char(uint32_t cp);  // alphanumeric or '_'
// Decodes the UTF-8 character at `pos` (text must be valid UTF-8); sets `len` to its byte length.
uint32_t utf8_decode_at(std::string_view text, size_t pos, size_t& len);

}  // namespace slimkv
