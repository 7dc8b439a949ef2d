// The Llama decoder forward pass over a varlen batch of tokens from many sequences: embeddings, per layer
// RMSNorm -> QKV (one batched matmul for all tokens) -> RoPE -> K/V rows written to their slots -> paged causal
// GQA attention -> output projection -> RMSNorm -> SwiGLU FFN; then logits for the requested rows only.
// Owns: scratch activations (grown only when a larger batch arrives; reserve() them up front).
// Must not know: tokenizers, sampling, requests or how blocks are chosen.
#pragma once
#include <functional>
#include <vector>

#include "compress/calibration.h"
#include "compress/compression_config.h"
#include "core/thread_pool.h"
#include "kv/kv_storage.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace slimkv {

class LlamaForward {
 public:
  LlamaForward(const Model& model, ThreadPool* pool);

  void reserve(int32_t max_tokens, int32_t max_logits_rows);
  // logits_out: [batch.logits_rows.size(), vocab]
  void forward(const ForwardBatch& batch, KvStorage& kv, float* logits_out);
  // Writes one token's K and V rows ([kv_dim] each, post-RoPE) of `layer` into `slot` in the storage's format for
  // that layer (projection, rotation, quantization). Also how benchmarks fill caches synthetically.
  void write_kv(KvStorage& kv, int32_t layer, int64_t slot, const float* k_row, const float* v_row);

  const Model& model() const { return model_; }
  const std::vector<float>& page_importance() const { return attention_.page_importance(); }
  // The KV layout this model needs under a compression config (default: full f32 K and V rows).
  KvLayout kv_layout(int32_t block_size_tokens, const CompressionConfig& cc = CompressionConfig{}) const;
  // Low-rank bases per layer (empty vectors = full rank), used when writing and reading the cache.
  void set_kv_projection(std::vector<LayerProjection> proj) { kv_proj_ = std::move(proj); }
  // Static sparse retention: each query attends to the first sink_tokens positions and its last window_tokens.
  void set_attention_window(int32_t sink_tokens, int32_t window_tokens) {
    sink_tokens_ = sink_tokens;
    window_tokens_ = window_tokens;
  }
  // Sees each layer's post-RoPE K and V rows ([T, kv_dim] each) as they are computed (calibration).
  using KvObserver = std::function<void(int32_t layer, const float* k, const float* v, int32_t num_tokens)>;
  void set_kv_observer(KvObserver obs) { observer_ = std::move(obs); }

 private:
  const Model& model_;
  ThreadPool* pool_;
  RopeTable rope_;
  PagedAttention attention_;
  int32_t capacity_ = 0, logits_capacity_ = 0;
  std::vector<float> x_;        // [T, dim] residual stream
  std::vector<float> xb_;       // [T, dim] normed input
  std::vector<float> q_;        // [T, q_dim]
  std::vector<float> k_, v_;    // [T, kv_dim]
  std::vector<float> att_;      // [T, q_dim] attention output
  std::vector<float> proj_;     // [T, dim]
  std::vector<float> hb_, hb2_; // [T, hidden]
  std::vector<float> final_;    // [rows, dim] normed rows for the classifier
  std::vector<float> head_;     // [head_dim] one head being encoded
  std::vector<LayerProjection> kv_proj_;  // [num_layers] low-rank K/V bases, or empty
  KvObserver observer_;
  int32_t sink_tokens_ = 0, window_tokens_ = 0;
};

}  // namespace slimkv
