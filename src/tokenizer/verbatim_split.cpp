#include "tokenizer/verbatim_split.h"

namespace slimkv {

std::vector<TextFragment> split_verbatim(std::string_view text, const std::vector<int32_t>& ids,
                                         const std::vector<std::string>& pieces) {
  std::vector<TextFragment> frags, next;
  if (!text.empty()) frags.push_back({-1, 0, text.size()});
  for (int32_t id : ids) {
    const std::string& t = pieces[id];
    if (t.empty() || text.find(t) == std::string_view::npos) continue;
    next.clear();
    for (const TextFragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view body = text.substr(f.begin, f.len);
      size_t pos = 0;
      for (size_t m; (m = body.find(t, pos)) != std::string_view::npos; pos = m + t.size()) {
        if (m > pos) next.push_back({-1, f.begin + pos, m - pos});
        next.push_back({id, f.begin + m, t.size()});
      }
      if (pos < body.size()) next.push_back({-1, f.begin + pos, body.size() - pos});
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace slimkv
