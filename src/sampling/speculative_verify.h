// Speculative decoding's verification (issue SD): given k drafted tokens and the target's logits at the k + 1
// positions one batched forward computed, how many drafts are kept and which token follows them. Each row is
// sampled by the request's own sampler (argmax when greedy; else temperature / top-k / top-p / min-p with its seeded
// generator, one draw a token) while the draws equal the drafts; the first that differs — or the row after the last
// draft — is the next token. So the tokens are plain decoding's, draw for draw; for drafts that are one-hot (prompt
// lookup, a greedy draft model) this is Leviathan et al.'s rejection sampling (a draft x kept with probability p(x),
// else a token from p without x). A proposer with its own probabilities q would need the residual form
// norm(max(0, p − q)) instead. Must not know: models.
#pragma once
#include <cstdint>
#include <span>

#include "sampling/sampler.h"

namespace slimkv {

struct SpecVerdict {
  int32_t num_accepted = 0;  // drafts kept, 0..k
  int32_t next_token = -1;   // the token after them (the correction, or the bonus when every draft was kept)
};

// logits: [k + 1, vocab] the target's rows at the positions of the last committed token and the k drafts.
SpecVerdict verify_drafts(std::span<const int32_t> draft, std::span<const float> logits, int32_t vocab,
                          Sampler& sampler);

}  // namespace slimkv
