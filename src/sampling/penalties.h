// Penalties and bias on one row of logits, before a token is sampled from it: OpenAI's presence / frequency
// penalties over the tokens generated so far, HF's / vLLM's repetition penalty over the prompt and the output, and
// OpenAI's logit_bias. A pure function of the row, the parameters and the counts of the tokens seen; TokenCounts
// keeps those counts for one sequence as its tokens grow. Must not know: models, requests or the engine.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sampling/sampler.h"

namespace slimkv {

struct TokenCount {           // a token that occurs in the prompt or the output (each id once)
  int32_t id = 0;
  int32_t output_count = 0;   // occurrences among the generated tokens
  bool in_prompt = false;
};

// logits: [vocab], changed in place, in vLLM's order:
//   1. logit_bias: logits[id] += bias;
//   2. repetition_penalty r (tokens in the prompt or the output): logit / r when logit > 0, logit x r otherwise;
//   3. frequency f and presence p (tokens in the output, count c > 0): logit -= c x f + p.
// Tokens not in `seen` are changed only by their bias. With p.has_penalties() false nothing changes.
void apply_penalties(float* logits, int32_t vocab, const SamplingParams& p, std::span<const TokenCount> seen);

// The counts of one sequence's tokens (prompt then output), fed incrementally: sync() reads what was appended
// since the last call.
class TokenCounts {
 public:
  void sync(std::span<const int32_t> tokens, int32_t num_prompt_tokens);
  std::span<const TokenCount> seen() const { return seen_; }

 private:
  std::vector<TokenCount> seen_;
  std::unordered_map<int32_t, int32_t> index_;  // id -> its entry in seen_
  size_t consumed_ = 0;                         // tokens counted so far
};

}  // namespace slimkv
