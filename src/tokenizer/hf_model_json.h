// tokenizer.json's Unigram and WordPiece "model" sections -> the WordModels that encode words for BpeTokenizer.
// Special added tokens are left out of the models: text becomes a special token only through the added-token matcher
// (with parse_special). Owns: validating those sections. Must not know: normalizers, pre-tokenizers or decoders.
#pragma once
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/unigram_model.h"
#include "tokenizer/wordpiece_model.h"

namespace slimkv {

// vocab [[piece, score], ...] (ids in order), unk_id, byte_fallback. Throws Error naming `what`.
UnigramVocab unigram_vocab_from_json(const nlohmann::json& model, const std::string& what);
// vocab {piece: id}, unk_token, continuing_subword_prefix, max_input_chars_per_word. Throws Error naming `what`.
WordPieceVocab wordpiece_vocab_from_json(const nlohmann::json& model, const std::string& what);
std::shared_ptr<const WordModel> unigram_model(UnigramVocab vocab, const std::vector<AddedToken>& added);
std::shared_ptr<const WordModel> wordpiece_model(WordPieceVocab vocab, const std::vector<AddedToken>& added);

}  // namespace slimkv
