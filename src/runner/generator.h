// Single-sequence generation: prefill the prompt, then decode token by token until EOS or the limit.
// Owns: the sequence's KV storage (via SequenceForward) and logits buffer. Must not know: how text is printed or served.
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "runner/sequence_forward.h"
#include "sampling/sampler.h"

namespace slimkv {

struct GenerateOptions {
  int32_t max_new_tokens = 64;
  bool stop_at_eos = true;
  SamplingParams sampling;
  CompressionConfig compression;  // how the sequence's KV cache is stored
};

struct GenerateStats {
  int32_t num_prompt_tokens = 0;
  int32_t num_generated_tokens = 0;
  double prefill_ms = 0;
  double decode_ms = 0;  // time for tokens after the first
};

// Calls on_token(id) for each generated token; returning false stops generation.
// The prompt must fit the model context; generation stops at the context end.
GenerateStats generate(const Model& model, ThreadPool* pool, std::span<const int32_t> prompt, const GenerateOptions& opts,
                       const std::function<bool(int32_t)>& on_token);

}  // namespace slimkv
