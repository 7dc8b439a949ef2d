#include "tokenizer/wordpiece_model.h"

#include "tokenizer/pretokenizer.h"

namespace slimkv {

// HF WordPiece::tokenize: from each start, the longest vocabulary piece (with the prefix after the first); the whole
// word is one unk when some part matches nothing or it has more than max_chars characters.
void WordPieceModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  size_t chars = 0;
  for (unsigned char c : word) chars += (c & 0xC0) != 0x80;
  const size_t mark = out.size();
  auto unknown = [&] {
    out.resize(mark);
    if (v_.unk_id >= 0) out.push_back(v_.unk_id);
  };
  if (chars > v_.max_chars) return unknown();
  std::string key;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int32_t found = -1;
    while (start < end) {
      key.assign(start > 0 ? v_.prefix : std::string());
      key.append(word.substr(start, end - start));
      auto it = v_.ids.find(key);
      if (it != v_.ids.end()) {
        found = it->second;
        break;
      }
      --end;  // back to the previous character boundary
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
    }
    if (found < 0) return unknown();
    out.push_back(found);
    start = end;
  }
}

}  // namespace slimkv
