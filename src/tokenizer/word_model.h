// A subword model that turns one pre-tokenized word into ids (Hugging Face's Model::tokenize): the strategy a
// tokenizer.json "Unigram" or "WordPiece" model plugs into BpeTokenizer in place of its merges.
// Owns: nothing but the interface. Must not know: normalizers, pre-tokenizers, added tokens or file formats.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace slimkv {

class WordModel {
 public:
  virtual ~WordModel() = default;
  // Appends the ids of `word` (valid UTF-8, non-empty) to `out`. Thread-safe.
  virtual void encode_word(std::string_view word, std::vector<int32_t>& out) const = 0;
};

}  // namespace slimkv
