// Speculative decoding's model-free proposer (issue SD; vLLM's `method: ngram`, llama.cpp's prompt lookup): the
// longest suffix of a sequence, between min_n and max_n tokens, that also occurs earlier in it proposes the tokens
// that followed that earlier occurrence (the most recent one), up to num_speculative_tokens. Pure.
// Must not know: models, requests or the cache.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace slimkv {

struct NgramProposerConfig {
  int32_t min_n = 1;                   // prompt_lookup_min
  int32_t max_n = 4;                   // prompt_lookup_max
  int32_t num_speculative_tokens = 4;  // k
  void validate() const;               // throws Error naming the field
};

// Up to k proposed tokens to follow `tokens` (prompt + output so far); empty when no suffix of >= min_n recurs.
std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramProposerConfig& cfg);

}  // namespace slimkv
