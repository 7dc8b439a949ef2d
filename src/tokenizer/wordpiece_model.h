// WordPiece (BERT, Hugging Face "WordPiece"): greedy longest-match-first over the vocabulary, pieces after the first
// carrying the continuing-subword prefix ("##"); a word with an unmatched part, or longer than the character limit,
// is one unknown token. Owns: the piece -> id map. Must not know: tokenizer.json, normalizers or pre-tokenizers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/word_model.h"

namespace slimkv {

struct WordPieceVocab {
  std::unordered_map<std::string, int32_t> ids;  // piece -> id (HF model.vocab)
  int32_t unk_id = -1;                           // -1: an unmatched word is dropped (HF fails there)
  std::string prefix = "##";                     // continuing_subword_prefix
  size_t max_chars = 100;                        // max_input_chars_per_word
};

class WordPieceModel : public WordModel {
 public:
  explicit WordPieceModel(WordPieceVocab vocab) : v_(std::move(vocab)) {}
  void encode_word(std::string_view word, std::vector<int32_t>& out) const override;

 private:
  WordPieceVocab v_;
};

}  // namespace slimkv
