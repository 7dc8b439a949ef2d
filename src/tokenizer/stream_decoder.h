// Turns a stream of token ids into text that never ends in half a UTF-8 character.
// Owns: the pending partial bytes. Must not know: which tokenizer family produced the pieces.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace slimkv {

class StreamDecoder {
 public:
  // prev_id: the token before the first pushed one (-1 = start of text), e.g. a prompt's last token.
  explicit StreamDecoder(const Tokenizer& tok, int32_t prev_id = -1) : tok_(tok), prev_id_(prev_id) {}
  // Returns the complete UTF-8 text that becomes available after appending `id`.
  std::string push(int32_t id);
  // Whatever is still pending (an incomplete sequence at the end of the stream), as is.
  std::string flush();
  // These (special) tokens print their own text instead of nothing: a chat format's markers that a reply parser
  // must see (DeepSeek's tool-call markers, harmony's channel tokens).
  void spell(std::vector<int32_t> ids);

 private:
  std::vector<int32_t> spelled_;  // sorted
  const Tokenizer& tok_;
  int32_t prev_id_ = -1;
  std::string pending_;
};

// Length of the longest prefix of s that ends on a UTF-8 character boundary (an incomplete tail is held back).
size_t utf8_complete_prefix(const std::string& s);

}  // namespace slimkv
