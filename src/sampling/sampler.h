// Turns one row of logits into a token id: greedy (temperature 0), or temperature + top-k + top-p with a
// seeded RNG, so the same seed always gives the same tokens. Must not know: models or requests.
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/check.h"

namespace slimkv {

struct SamplingParams {
  float temperature = 0.0f;  // 0 = greedy
  float top_p = 1.0f;        // (0, 1]
  int32_t top_k = 0;         // 0 = off
  uint64_t seed = 0;
  float min_p = 0.0f;        // [0, 1]: drop tokens less likely than min_p x the most likely one's (0 = off)
  // Penalties and bias (sampling/penalties.h), applied to the logits before all of the above; all off by default.
  float presence_penalty = 0.0f;    // [-2, 2] (OpenAI): subtracted once from every token the output holds
  float frequency_penalty = 0.0f;   // [-2, 2] (OpenAI): subtracted per occurrence in the output
  float repetition_penalty = 1.0f;  // > 0 (HF / vLLM; 1 = off): divides (logit > 0) or multiplies (<= 0) the logits
                                    // of tokens in the prompt or the output
  std::vector<std::pair<int32_t, float>> logit_bias{};  // (token id, bias in [-100, 100]) added to that token's logit
  bool has_penalties() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f || !logit_bias.empty();
  }
  void validate() const {
    SLIMKV_CHECK(temperature >= 0.0f && temperature <= 100.0f, "temperature must be in [0, 100] (got {})", temperature);
    SLIMKV_CHECK(top_p > 0.0f && top_p <= 1.0f, "top-p must be in (0, 1] (got {})", top_p);
    SLIMKV_CHECK(top_k >= 0, "top-k must be >= 0 (got {})", top_k);
    SLIMKV_CHECK(min_p >= 0.0f && min_p <= 1.0f, "min-p must be in [0, 1] (got {})", min_p);
    SLIMKV_CHECK(presence_penalty >= -2.0f && presence_penalty <= 2.0f, "presence penalty must be in [-2, 2] (got {})",
                 presence_penalty);
    SLIMKV_CHECK(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f,
                 "frequency penalty must be in [-2, 2] (got {})", frequency_penalty);
    SLIMKV_CHECK(repetition_penalty > 0.0f && std::isfinite(repetition_penalty),
                 "repetition penalty must be > 0 (got {})", repetition_penalty);
    for (const auto& [id, bias] : logit_bias) {
      SLIMKV_CHECK(id >= 0 && bias >= -100.0f && bias <= 100.0f, "logit bias {} for token {}: the id must be >= 0 and "
                   "the bias in [-100, 100]", bias, id);
    }
  }
};

class Rng {  // xorshift64*, seeded through splitmix64 (seed 0 is fine)
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  float next_f32();  // [0, 1)
 private:
  uint64_t state_;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  int32_t sample(const float* logits, int32_t vocab_size);

 private:
  SamplingParams params_;
  Rng rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // [vocab] scratch, reused
};

int32_t argmax(const float* x, int32_t n);  // first index of the maximum

}  // namespace slimkv
