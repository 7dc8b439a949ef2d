// One sequence through the batched forward pass, for single-stream tools (generate, perplexity, logits, bench):
// owns a KV storage sized for `capacity` tokens in every KV group, with identity block tables (group g uses blocks
// [g * n, (g + 1) * n)). Must not know: requests or scheduling.
#pragma once
#include <span>

#include "model/decoder_forward.h"
#include "runner/batch_builder.h"

namespace slimkv {

class SequenceForward {
 public:
  SequenceForward(const Model& model, ThreadPool* pool, int32_t capacity_tokens, int32_t block_size = 16,
                  int32_t max_chunk_tokens = 256, const CompressionConfig& compression = CompressionConfig{});
  // Runs tokens at positions [start_pos, start_pos + n). logits_out: [n, vocab] if all_logits else [vocab].
  void forward(std::span<const int32_t> tokens, int32_t start_pos, bool all_logits, float* logits_out);
  // Every token of later forwards through this LoRA adapter (null: the base model); the caller keeps it alive.
  void set_lora(const LoraAdapter* a) {
    lora_ = a;
    fwd_.set_step_loras(a ? std::vector<const LoraAdapter*>{a} : std::vector<const LoraAdapter*>{});
  }
  // Runs tokens from position 0 and writes every token's final hidden state (after the final norm): out [n, dim].
  void hidden_states(std::span<const int32_t> tokens, float* out);
  const Model& model() const { return fwd_.model(); }
  int32_t capacity_tokens() const { return capacity_; }
  const KvStorage& storage() const { return kv_; }
  DecoderForward& forward_pass() { return fwd_; }

 private:
  DecoderForward fwd_;
  int32_t capacity_, block_size_, max_chunk_;
  KvLayout layout_;
  KvStorage kv_;
  std::vector<GroupKv> tables_;  // [groups] identity block tables
  ForwardBatch batch_;
  const LoraAdapter* lora_ = nullptr;
};

// Non-overlapping scoring windows over ids (ids[0] is BOS): each is BOS + up to ctx - 1 of the following tokens.
std::vector<std::vector<int32_t>> split_windows(const std::vector<int32_t>& ids, int32_t ctx, int32_t bos_id);

}  // namespace slimkv
