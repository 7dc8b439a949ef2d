#include "tokenizer/hf_model_json.h"

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace slimkv {

using json = nlohmann::json;

UnigramVocab unigram_vocab_from_json(const json& model, const std::string& what) {
  auto v = model.find("vocab");
  SLIMKV_CHECK(v != model.end() && v->is_array() && !v->empty(), "{}: Unigram model.vocab must be a non-empty array",
               what);
  UnigramVocab u;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    SLIMKV_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(),
                 "{}: Unigram vocab entry {} is not [piece, score]", what, i);
    u.pieces.push_back(e[0].get<std::string>());
    u.scores.push_back(e[1].get<double>());
  }
  auto k = model.find("unk_id");
  if (k != model.end() && !k->is_null()) {
    SLIMKV_CHECK(k->is_number_integer() && k->get<int64_t>() >= 0 && k->get<int64_t>() < int64_t(v->size()),
                 "{}: Unigram unk_id must be an id in model.vocab", what);
    u.unk_id = static_cast<int32_t>(k->get<int64_t>());
  }
  auto b = model.find("byte_fallback");
  if (b != model.end() && !b->is_null()) {
    SLIMKV_CHECK(b->is_boolean(), "{}: 'byte_fallback' must be true or false", what);
    u.byte_fallback = b->get<bool>();
  }
  return u;
}

WordPieceVocab wordpiece_vocab_from_json(const json& model, const std::string& what) {
  WordPieceVocab w;
  auto v = model.find("vocab");
  SLIMKV_CHECK(v != model.end() && v->is_object(), "{}: WordPiece model.vocab must be an object", what);
  for (auto it = v->begin(); it != v->end(); ++it) {
    SLIMKV_CHECK(it.value().is_number_integer(), "{}: vocab entry '{}' has no integer id", what, it.key());
    w.ids.emplace(it.key(), static_cast<int32_t>(it.value().get<int64_t>()));
  }
  auto string_of = [&](const char* key, std::string& out) {
    auto s = model.find(key);
    if (s == model.end() || s->is_null()) return false;
    SLIMKV_CHECK(s->is_string(), "{}: WordPiece '{}' must be a string", what, key);
    out = s->get<std::string>();
    return true;
  };
  std::string unk;
  if (string_of("unk_token", unk)) {
    auto it = w.ids.find(unk);
    SLIMKV_CHECK(it != w.ids.end(), "{}: WordPiece unk_token '{}' is not in model.vocab", what, unk);
    w.unk_id = it->second;
  }
  string_of("continuing_subword_prefix", w.prefix);
  auto m = model.find("max_input_chars_per_word");
  if (m != model.end() && !m->is_null()) {
    SLIMKV_CHECK(m->is_number_integer() && m->get<int64_t>() >= 0, "{}: bad max_input_chars_per_word", what);
    w.max_chars = static_cast<size_t>(m->get<int64_t>());
  }
  return w;
}

// HF's own Unigram trie would match "</s>" in text even with special-token parsing off; SentencePiece never does.
std::shared_ptr<const WordModel> unigram_model(UnigramVocab vocab, const std::vector<AddedToken>& added) {
  for (const AddedToken& t : added) {
    if (t.special && t.id >= 0 && t.id < static_cast<int32_t>(vocab.pieces.size())) vocab.pieces[t.id].clear();
  }
  return std::make_shared<UnigramModel>(std::move(vocab));
}

std::shared_ptr<const WordModel> wordpiece_model(WordPieceVocab vocab, const std::vector<AddedToken>& added) {
  for (const AddedToken& t : added) {
    auto it = vocab.ids.find(t.content);
    if (t.special && it != vocab.ids.end() && it->second == t.id) vocab.ids.erase(it);
  }
  return std::make_shared<WordPieceModel>(std::move(vocab));
}

}  // namespace slimkv
