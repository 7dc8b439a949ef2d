// One request's state as the scheduler sees it: its tokens (prompt + output so far), num_computed_tokens
// catching up to num_tokens (no prefill/decode modes), its KV bookkeeping, sampler and timestamps.
// Must not know: tensors, kernels or the model.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/pooling.h"
#include "kv/kv_cache_manager.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"

namespace slimkv {

using RequestId = int64_t;

enum class FinishReason { None, Stop, Length, Abort };
const char* finish_reason_name(FinishReason r);

struct LoraAdapter;  // model/lora_adapter.h: applied by the engine, opaque here

struct RequestParams {
  SamplingParams sampling;
  int32_t max_tokens = 16;   // output tokens
  int32_t eos_id = -1;       // stop when sampled (-1: none)
  bool ignore_eos = false;
  int32_t min_tokens = 0;    // EOS is masked until this many output tokens exist
  int32_t logprobs = -1;     // -1: none; k >= 0: the sampled token's log-probability and the k most likely
  std::vector<int32_t> stop_token_ids;  // these end the request like EOS (finish "stop", not output; ignore_eos
                                        // does not apply; masked before min_tokens)
  TokenConstraintFactory constraint;    // empty: any token (structured output sets it)
  // An embedding request: its prompt's final hidden states pooled into Request::embedding as it is computed (the
  // caller asks for one greedy token and ignores it). Mean / First never take a prefix-cache hit.
  Pooling pooling = Pooling::None;
  // A LoRA adapter over the base weights (null: the base model); lora_id (its fingerprint, set by
  // Engine::add_request from it) roots the request's prefix-cache chain: blocks of one adapter serve no other.
  std::shared_ptr<const LoraAdapter> lora;
  uint64_t lora_id = 0;
  bool speculative = true;  // false: this request never drafts under --speculative-config (per-request opt-out)
};

struct RequestTimes {        // milliseconds on the engine's clock; -1 = not yet
  double arrival_ms = -1, first_scheduled_ms = -1, first_token_ms = -1, last_token_ms = -1, finished_ms = -1;
  double prefill_ms = 0;     // first scheduled -> first token
};

struct Request {
  Request(RequestId id, std::vector<int32_t> prompt, const RequestParams& params, double now_ms);

  RequestId id;
  std::vector<int32_t> tokens;      // prompt then output
  int32_t num_prompt_tokens;
  int32_t num_computed_tokens = 0;  // tokens whose K/V are in the cache
  int32_t num_cached_tokens = -1;   // prefix-cache hit at first admission (-1: not admitted yet)
  int32_t num_preemptions = 0;
  RequestParams params;
  Sampler sampler;
  TokenCounts token_counts;         // prompt and output token counts, kept only when params.sampling.has_penalties()
  std::unique_ptr<TokenConstraint> constraint;  // made from params.constraint at creation; null: unconstrained
  SeqKv kv;
  FinishReason finish = FinishReason::None;
  RequestTimes times;
  std::vector<float> embedding;     // [dim] params.pooling's result once the prompt is computed (else empty)
  int32_t pooled_tokens = 0;        // hidden rows folded into `embedding` so far (none is folded twice)
  // Speculative decoding (issue SD): this step's verify chunk, [the last token, drafted tokens...] (empty: none).
  // Its KV is written for every position; only the accepted ones count as computed.
  std::vector<int32_t> spec_tokens;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  int32_t num_drafts() const { return spec_tokens.empty() ? 0 : static_cast<int32_t>(spec_tokens.size()) - 1; }
};

}  // namespace slimkv
