// Log-probabilities of one row of raw logits: the chosen token's and the k most likely (OpenAI `logprobs`).
// Pure functions. Must not know: requests, sampling parameters or the model.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace slimkv {

struct TokenLogprobs {
  float logprob = 0.0f;                        // log softmax(logits)[token]
  std::vector<std::pair<int32_t, float>> top;  // [k] (id, logprob), most likely first, ties by lower id
};

// logits: [n]. k in 0..n.
TokenLogprobs compute_logprobs(const float* logits, int32_t n, int32_t token, int32_t k);

}  // namespace slimkv
