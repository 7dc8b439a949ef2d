// The Llama decoder forward pass over a chunk of consecutive tokens of one sequence: embeddings, per layer
// RMSNorm -> QKV -> RoPE -> KV write -> causal GQA attention -> output proj -> RMSNorm -> SwiGLU FFN, then logits.
// Owns: scratch activations (allocated once per chunk size, never in the decode loop).
// Must not know: tokenizers, sampling or how requests are scheduled.
#pragma once
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace slimkv {

class LlamaForward {
 public:
  LlamaForward(const Model& model, ThreadPool* pool, int32_t max_chunk_tokens = 128);

  // Runs tokens at positions [start_pos, start_pos + T). Writes their K/V into the cache.
  // logits_out: [T, vocab] when all_logits, else [vocab] for the last token only.
  void forward(std::span<const int32_t> tokens, int32_t start_pos, ContiguousKvCache& cache, bool all_logits,
               float* logits_out);

  const Model& model() const { return model_; }

 private:
  void forward_chunk(const int32_t* tokens, int32_t num_tokens, int32_t start_pos, ContiguousKvCache& cache,
                     bool all_logits, float* logits_out);
  void attention(int32_t layer, int32_t num_tokens, int32_t start_pos, ContiguousKvCache& cache);

  const Model& model_;
  ThreadPool* pool_;
  int32_t max_chunk_;
  RopeTable rope_;
  // Scratch, T = max_chunk_:
  std::vector<float> x_;       // [T, dim] residual stream
  std::vector<float> xb_;      // [T, dim] normed input
  std::vector<float> q_;       // [T, q_dim]
  std::vector<float> k_, v_;   // [T, kv_dim]
  std::vector<float> att_;     // [T, q_dim] attention output
  std::vector<float> proj_;    // [T, dim]
  std::vector<float> hb_, hb2_;// [T, hidden]
  std::vector<float> scores_;  // [num_threads, max_seq] attention scores
};

}  // namespace slimkv
