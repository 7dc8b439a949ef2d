// SentencePiece-style BPE: split text into UTF-8 characters, then repeatedly merge the adjacent pair whose
// merged piece has the highest score (leftmost on ties), with byte fallback to <0xNN> pieces.
// Used for llama2.c tokenizer.bin (space marker ' ') and GGUF `llama` vocabularies (marker U+2581).
// Must not know: file formats (loaders build SpmVocab).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace slimkv {

struct SpmVocab {
  std::vector<std::string> pieces;  // [vocab] raw piece text, with `space_marker` standing for a space
  std::vector<float> scores;        // [vocab] merge priority (higher merges first)
  std::vector<int32_t> types;       // [vocab] optional: 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte
  std::string space_marker = " ";   // " " (llama2.c) or "\xE2\x96\x81" (SentencePiece / GGUF)
  int32_t bos_id = 1, eos_id = 2, unk_id = 0;
  bool add_dummy_prefix = true;     // prepend a space to non-empty text
  bool add_bos = true;              // encode(add_special=true) prepends BOS
};

class SpmTokenizer : public Tokenizer {
 public:
  explicit SpmTokenizer(SpmVocab vocab);
  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  std::string decode_token(int32_t prev_id, int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.pieces.size()); }
  std::string token_text(int32_t id) const override { return id >= 0 && id < vocab_size() ? vocab_.pieces[id] : ""; }
  const SpmVocab& vocab() const { return vocab_; }

 private:
  void encode_segment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_text(std::string_view text, std::vector<int32_t>& out) const;  // dummy prefix + markers + merges
  int32_t find(std::string_view piece) const;

  SpmVocab vocab_;
  std::unordered_map<std::string, int32_t> piece_to_id_;
  int32_t byte_ids_[256];  // id of <0xNN> for each byte, or -1
  std::vector<int32_t> user_defined_;  // type-4 tokens matched verbatim in the text (GGUF, as llama.cpp), longest first
};

}  // namespace slimkv
