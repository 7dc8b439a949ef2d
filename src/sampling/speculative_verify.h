// Speculative decoding's verification (issue SD): given k drafted tokens and the target's distributions at the
// k + 1 positions one batched forward computed, how many drafts are kept and which token follows them.
// Greedy: drafts are kept while each equals the target's argmax, then the argmax — the plain greedy output exactly.
// Sampled (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding"): draft x_i is kept
// with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection the token comes from norm(max(0, p_i − q_i));
// all kept, a bonus token from p_k — the output's distribution is the target's. A proposer without probabilities
// (n-gram lookup) has q_i one-hot at its draft. Pure, apart from the caller's RNG. Must not know: models.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace slimkv {

struct SpecVerdict {
  int32_t num_accepted = 0;  // drafts kept, 0..k
  int32_t next_token = -1;   // the token after them (the correction, or the bonus when every draft was kept)
};

// logits: [k + 1, vocab] the target's rows at the positions of the last committed token and the k drafts.
SpecVerdict verify_greedy(std::span<const int32_t> draft, std::span<const float> logits, int32_t vocab);

// p: [k + 1, vocab] the target's probabilities (after temperature / top-k / top-p); q: [k, vocab] the draft's, or
// empty for a deterministic proposer (one-hot at each draft token).
SpecVerdict verify_sampled(std::span<const int32_t> draft, std::span<const float> p, std::span<const float> q,
                           int32_t vocab, std::mt19937_64& rng);

}  // namespace slimkv
