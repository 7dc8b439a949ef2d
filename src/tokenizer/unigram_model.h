// Unigram language-model segmentation (SentencePiece / Hugging Face "Unigram"): the best-scoring split of a word into
// vocabulary pieces (Viterbi over a byte trie), unknown characters scored min_score - 10 and fused into one unk per
// run, or spelled as <0xNN> pieces with byte fallback. Owns: the pieces, scores and trie.
// Must not know: tokenizer.json, normalizers, pre-tokenizers or added tokens.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/word_model.h"

namespace slimkv {

struct UnigramVocab {
  std::vector<std::string> pieces;  // [id] the model's vocabulary (HF model.vocab, in order)
  std::vector<double> scores;       // [id] log probability
  int32_t unk_id = -1;              // -1: an unknown character is dropped (HF fails there)
  bool byte_fallback = false;       // an unknown run becomes its <0xNN> pieces when all exist
};

class UnigramModel : public WordModel {
 public:
  explicit UnigramModel(UnigramVocab vocab);  // throws Error on an empty vocabulary or an unk id outside it
  void encode_word(std::string_view word, std::vector<int32_t>& out) const override;

 private:
  // Calls f(id, byte_length) for every piece that starts at text[pos], shortest first.
  template <class F> void prefixes(std::string_view text, size_t pos, F&& f) const;
  void emit(std::string_view run, bool unknown, int32_t id, std::vector<int32_t>& out) const;

  UnigramVocab v_;
  double unk_score_ = 0;
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child node; node 0 is the root
  std::vector<int32_t> terminal_;                // [node] piece id ending here, or -1
  std::unordered_map<std::string, int32_t> ids_;  // piece -> id (first occurrence)
  int32_t byte_piece_[256];                      // id of <0xNN>, or -1
};

}  // namespace slimkv
