// Limits of the scheduler, as in vLLM (flags map 1:1 to fields). Must not know: models or KV bytes.
#pragma once
#include <cstdint>

#include "core/check.h"

namespace slimkv {

struct SchedulerConfig {
  int32_t max_model_len = 0;             // --max-model-len: tokens per sequence (0 = the model's context)
  int32_t max_num_seqs = 64;             // --max-num-seqs: running sequences per step
  int32_t max_num_batched_tokens = 512;  // --max-num-batched-tokens: tokens per step (the chunked-prefill budget)
  int32_t max_waiting = 4096;            // --max-waiting: queued requests before add_request refuses

  void validate() const {
    SLIMKV_CHECK(max_model_len >= 1, "--max-model-len must be >= 1 (got {})", max_model_len);
    SLIMKV_CHECK(max_num_seqs >= 1 && max_num_seqs <= 65536, "--max-num-seqs must be in 1..65536 (got {})",
                 max_num_seqs);
    SLIMKV_CHECK(max_num_batched_tokens >= 1 && max_num_batched_tokens <= (1 << 20),
                 "--max-num-batched-tokens must be in 1..1048576 (got {})", max_num_batched_tokens);
    SLIMKV_CHECK(max_waiting >= 0, "--max-waiting must be >= 0 (got {})", max_waiting);
  }
};

}  // namespace slimkv
