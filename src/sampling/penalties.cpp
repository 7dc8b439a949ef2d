#include "sampling/penalties.h"

namespace slimkv {

void apply_penalties(float* logits, int32_t vocab, const SamplingParams& p, std::span<const TokenCount> seen) {
  for (const auto& [id, bias] : p.logit_bias) {
    SLIMKV_CHECK(id >= 0 && id < vocab, "logit bias for token {} outside the vocabulary (0..{})", id, vocab - 1);
    logits[id] += bias;
  }
  const float r = p.repetition_penalty;
  if (r != 1.0f) {
    for (const TokenCount& t : seen) {
      float& x = logits[t.id];
      x = x > 0.0f ? x / r : x * r;
    }
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    for (const TokenCount& t : seen) {
      if (t.output_count == 0) continue;
      logits[t.id] -= static_cast<float>(t.output_count) * p.frequency_penalty + p.presence_penalty;
    }
  }
}

void TokenCounts::sync(std::span<const int32_t> tokens, int32_t num_prompt_tokens) {
  SLIMKV_CHECK(tokens.size() >= consumed_, "token counts: the sequence shrank ({} < {})", tokens.size(), consumed_);
  for (; consumed_ < tokens.size(); ++consumed_) {
    const int32_t id = tokens[consumed_];
    auto [it, added] = index_.try_emplace(id, static_cast<int32_t>(seen_.size()));
    if (added) seen_.push_back({id, 0, false});
    TokenCount& t = seen_[it->second];
    if (static_cast<int64_t>(consumed_) < num_prompt_tokens) t.in_prompt = true;
    else ++t.output_count;
  }
}

}  // namespace slimkv
