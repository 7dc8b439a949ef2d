#include "sampling/ngram_proposer.h"

#include <algorithm>

#include "core/check.h"

namespace slimkv {

void NgramProposerConfig::validate() const {
  SLIMKV_CHECK(min_n >= 1 && max_n >= min_n && max_n <= 64, "speculative ngram: prompt_lookup_min {} and "
               "prompt_lookup_max {} must satisfy 1 <= min <= max <= 64", min_n, max_n);
  SLIMKV_CHECK(num_speculative_tokens >= 1 && num_speculative_tokens <= 64,
               "speculative ngram: num_speculative_tokens {} must be in 1..64", num_speculative_tokens);
}

std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramProposerConfig& cfg) {
  const int64_t L = static_cast<int64_t>(tokens.size());
  // Scanning earlier end positions from the most recent: the match length at each is the common suffix of
  // tokens[..e] and tokens[..L), capped at max_n; the longest wins, the most recent among equals.
  int64_t best_len = 0, best_end = -1;  // best_end: one past the earlier occurrence's last token
  for (int64_t e = L - 1; e >= cfg.min_n; --e) {
    int64_t n = 0;
    while (n < cfg.max_n && n < e && tokens[e - 1 - n] == tokens[L - 1 - n]) ++n;
    if (n > best_len) {
      best_len = n;
      best_end = e;
      if (n == cfg.max_n) break;  // cannot do better; this is the most recent such
    }
  }
  if (best_len < cfg.min_n || best_end < 0) return {};
  const int64_t count = std::min<int64_t>(cfg.num_speculative_tokens, L - best_end);
  return std::vector<int32_t>(tokens.begin() + best_end, tokens.begin() + best_end + count);
}

}  // namespace slimkv
