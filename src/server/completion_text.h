// One choice's output text as it streams: token ids -> UTF-8 text that never splits a character, with stop strings
// matched across token boundaries. Text that could still become a stop string is held back until it cannot.
// Must not know: HTTP, JSON or the engine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/stream_decoder.h"

namespace slimkv {

class CompletionText {
 public:
  // prev_token: the prompt's last token (decoding conventions such as the space after BOS depend on it).
  // include_stop: the stop string that ends the text is part of it (include_stop_str_in_output).
  CompletionText(const Tokenizer& tok, int32_t prev_token, std::vector<std::string> stops, bool include_stop = false);
  // Appends a token; returns the text that can be released now (possibly empty). After a stop string
  // completes, stopped() is true, the text before it has been released and everything else is dropped.
  std::string push(int32_t token);
  // End of the stream (no stop matched): whatever is held back.
  std::string finish();
  bool stopped() const { return stopped_; }
  void spell(std::vector<int32_t> ids) { dec_.spell(std::move(ids)); }  // StreamDecoder::spell
  const std::string& text() const { return released_; }  // everything released so far

 private:
  std::string release(size_t n);

  StreamDecoder dec_;
  std::vector<std::string> stops_;
  std::string pending_;   // decoded but not yet released
  std::string released_;
  bool stopped_ = false;
  bool include_stop_ = false;
};

}  // namespace slimkv
