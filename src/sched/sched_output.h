// What one step runs: per request, a chunk of consecutive tokens starting at its num_computed_tokens.
// Plain data with spans into the requests' storage, valid until Scheduler::update.
// Must not know: tensors or the model.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kv/block_pool.h"
#include "sched/request.h"

namespace slimkv {

struct ScheduledChunk {
  RequestId id = 0;
  int32_t start_pos = 0;                 // = the request's num_computed_tokens
  std::span<const int32_t> token_ids;    // the chunk's tokens (positions start_pos ..)
  std::span<const GroupKv> groups;       // per KV group: blocks covering [0, start_pos + token_ids.size()) (-1:
                                         // freed or evicted) and the merge policy's summary block
  bool samples = false;                  // the chunk reaches the end of the request: sample one token
  int32_t num_prompt_tokens = 0;
  int32_t num_drafts = 0;                // > 0: a speculative verify chunk (token_ids = the last token + drafts):
                                         // logits at its last num_drafts + 1 rows, verified into 1..n+1 tokens
};

struct SchedOutput {
  std::vector<ScheduledChunk> chunks;  // running requests first (decode-first), then newly admitted ones
  int32_t num_tokens = 0;
  int32_t num_preempted = 0;           // preemptions performed while scheduling this step
};

struct StepEvent {                     // a sampled token and/or a finish, for the request's stream
  RequestId id = 0;
  int32_t token = -1;                  // -1: no token (e.g. a stop on EOS, or an abort)
  FinishReason finish = FinishReason::None;
  float logprob = 0.0f;                // log-softmax of the raw logits at `token` (params.logprobs >= 0)
  std::vector<std::pair<int32_t, float>> top_logprobs;  // [params.logprobs] most likely (id, logprob)
};

}  // namespace slimkv
