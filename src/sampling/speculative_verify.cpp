#include "sampling/speculative_verify.h"

#include "core/check.h"

namespace slimkv {

SpecVerdict verify_drafts(std::span<const int32_t> draft, std::span<const float> logits, int32_t vocab,
                          Sampler& sampler) {
  SLIMKV_CHECK(vocab > 0 && logits.size() == (draft.size() + 1) * static_cast<size_t>(vocab),
               "speculative verify: {} values for {} drafts over a vocabulary of {}", logits.size(), draft.size(),
               vocab);
  for (int32_t t : draft) SLIMKV_CHECK(t >= 0 && t < vocab, "speculative verify: draft token {} outside 0..{}", t, vocab - 1);
  SpecVerdict v;
  for (size_t i = 0; i <= draft.size(); ++i) {
    v.next_token = sampler.sample(logits.data() + i * vocab, vocab);
    if (i == draft.size() || v.next_token != draft[i]) break;
    ++v.num_accepted;
  }
  return v;
}

}  // namespace slimkv
