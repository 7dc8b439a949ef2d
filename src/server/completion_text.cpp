#include "server/completion_text.h"

#include <algorithm>

namespace slimkv {

CompletionText::CompletionText(const Tokenizer& tok, int32_t prev_token, std::vector<std::string> stops,
                               bool include_stop)
    : dec_(tok, prev_token), stops_(std::move(stops)), include_stop_(include_stop) {}

std::string CompletionText::release(size_t n) {
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  released_ += out;
  return out;
}

std::string CompletionText::push(int32_t token) {
  if (stopped_) return "";
  pending_ += dec_.push(token);
  size_t first = std::string::npos, length = 0;  // the earliest complete stop string (the longest there)
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < first || (at == first && at != std::string::npos && s.size() > length)) first = at, length = s.size();
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = release(first + (include_stop_ ? length : 0));
    pending_.clear();
    return out;
  }
  size_t hold = 0;  // the longest tail of pending_ that is a proper prefix of some stop string
  for (const auto& s : stops_) {
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  return release(pending_.size() - hold);
}

std::string CompletionText::finish() {
  if (stopped_) return "";
  pending_ += dec_.flush();
  return release(pending_.size());
}

}  // namespace slimkv
