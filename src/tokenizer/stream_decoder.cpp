#include "tokenizer/stream_decoder.h"

#include <algorithm>
#include <mutex>

namespace slimkv {

size_t utf8_complete_prefix(const std::string& s) {
  size_t n = s.size();
  // Look back at most 3 bytes for the start of the last character.
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    size_t need = (c < 0x80) ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return back >= need ? n : n - back;
  }
  return n;  // only continuation bytes: invalid, pass through
}

void StreamDecoder::spell(std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  spelled_ = std::move(ids);
}

std::string StreamDecoder::push(int32_t id) {
  const bool spelled = !spelled_.empty() && std::binary_search(spelled_.begin(), spelled_.end(), id);
  pending_ += spelled ? tok_.token_text(id) : tok_.decode_token(prev_id_, id);
  prev_id_ = id;
  size_t ok = utf8_complete_prefix(pending_);
  std::string out = pending_.substr(0, ok);
  pending_.erase(0, ok);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

size_t Tokenizer::max_token_bytes() const {
  static std::mutex m;
  std::lock_guard lk(m);
  if (max_token_bytes_ == 0) {
    size_t mx = 1;
    for (int32_t id = 0; id < vocab_size(); ++id) mx = std::max(mx, decode_token(-1, id).size());
    max_token_bytes_ = mx;
  }
  return max_token_bytes_;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    if (id == bos_id_) {  // BOS marks a start; it prints nothing
      prev = id;
      continue;
    }
    out += decode_token(prev, id);
    prev = id;
  }
  return out;
}

}  // namespace slimkv
