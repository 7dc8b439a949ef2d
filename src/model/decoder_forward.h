// The decoder forward pass over a varlen batch of tokens from many sequences: embeddings (scaled), then each layer
// through its family's recipe (model/family.h), composed from the shared blocks below — RMSNorm, attention (QKV
// with biases, per-head q/k norm, RoPE per layer, K/V rows written to their group's slots, paged GQA attention with
// the layer's window and sinks, an output gate), FFN (gated MLP, or MoE with tokens grouped by expert) — and from the stateful
// blocks of model/blocks/ (block<B>(): one per pass, made on first use, owning its scratch) — then logits for the
// requested rows (softcapped where the family says so).
// Owns: the step's context for blocks (batch, cache, pool, RoPE tables, attention plans per KV group), the shared
// blocks' scratch (grown only when a larger batch arrives; reserve() them up front).
// Must not know: tokenizers, sampling, requests, how blocks are chosen, or which family it runs (no arch branches).
#pragma once
#include <functional>
#include <memory>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compress/calibration.h"
#include "compress/compression_config.h"
#include "core/thread_pool.h"
#include "kv/kv_storage.h"
#include "model/backend_ops.h"
#include "model/blocks/block.h"
#include "model/family.h"
#include "model/forward_batch.h"
#include "model/kv_streams.h"
#include "model/lora_adapter.h"
#include "model/model.h"

namespace slimkv {

class LoraOps;

// Biases of a gated MLP's three projections (experts that have them): [ffn], [ffn], [dim], each may be null.
struct MlpBiases {
  const float *gate = nullptr, *up = nullptr, *down = nullptr;
};

class DecoderForward {
 public:
  // ops: the backend the blocks run on (null: the CPU kernels on pool, one process).
  DecoderForward(const Model& model, ThreadPool* pool, std::unique_ptr<BackendOps> ops = nullptr);

  void reserve(int32_t max_tokens, int32_t max_logits_rows);
  // logits_out: [batch.logits_rows.size(), vocab]. The batch has one page table per group of kv's layout.
  void forward(const ForwardBatch& batch, KvStorage& kv, float* logits_out);
  // Writes one token's K and V rows ([k_dim], [v_dim] of the layer, post-RoPE) of `layer` into `slot` (of the
  // layer's group) in the storage's format for that layer (projection, rotation, quantization). Also how
  // benchmarks fill caches synthetically.
  void write_kv(KvStorage& kv, int32_t layer, int64_t slot, const float* k_row, const float* v_row);

  const Model& model() const { return model_; }
  // The LoRA adapters batch.token_lora indexes in the next forward (model/lora_ops.h); the caller keeps them alive.
  void set_step_loras(std::vector<const LoraAdapter*> a) { step_loras_ = std::move(a); }
  // The last forward's batch.hidden_rows' final hidden states, after the final norm: [hidden_rows, dim].
  const std::vector<float>& hidden_states() const { return hidden_; }
  // Attention mass per page entry of group g's page table, summed since the step's plan (dynamic retention).
  const std::vector<double>& page_importance(int32_t g) const { return attention_[g].page_importance(); }
  // A verify chunk's tracked token t: its own mass per page entry of its sequence (PagedAttention::row_importance).
  const double* row_importance(int32_t g, int32_t t) const { return attention_[g].row_importance(t); }
  // The KV layout this model needs under a compression config (default: full f32 K and V rows, model windows).
  KvLayout kv_layout(int32_t block_size_tokens, const CompressionConfig& cc = CompressionConfig{}) const;
  // Low-rank bases per layer (empty vectors = full rank), used when writing and reading the cache.
  void set_kv_projection(std::vector<LayerProjection> proj) { kv_proj_ = std::move(proj); }
  // What attention has read since construction (or reset_read_stats), summed over layers and steps: rows read and
  // visible per (query token, KV head), bytes against an f16 cache's (select mode's read_fraction / read bytes).
  const PagedAttention::ReadStats& read_stats() const { return read_stats_; }
  void reset_read_stats() { read_stats_ = PagedAttention::ReadStats{}; }
  // Sees each layer's post-RoPE K and V rows ([T, k_dim] / [T, v_dim]) as they are computed (calibration).
  using KvObserver = std::function<void(int32_t layer, const float* k, const float* v, int32_t num_tokens)>;
  void set_kv_observer(KvObserver obs) { observer_ = std::move(obs); }
  // Sees each layer's post-RoPE queries ([T, q_dim]) just before the layer's K/V observer (attention profiles).
  using QObserver = std::function<void(int32_t layer, const float* q, int32_t num_tokens)>;
  void set_q_observer(QObserver obs) { q_observer_ = std::move(obs); }
  // Sees discrete choices as they are made (tests compare them with llama.cpp's dumps): "experts" (a token's routed
  // experts, in selection order) and "indexer" (a token's entries chosen by a sparse indexer, ascending).
  using ChoiceObserver =
      std::function<void(const char* what, int32_t layer, int32_t token, const int32_t* ids, int32_t n)>;
  void set_choice_observer(ChoiceObserver obs) { choice_observer_ = std::move(obs); }
  const ChoiceObserver& choice_observer() const { return choice_observer_; }
  // Options of the stateful blocks (how latent attention runs, a sparse indexer's top-k), set before a step.
  BlockOptions& block_options() { return block_options_; }
  const BlockOptions& block_options() const { return block_options_; }

  // ---- The step's context for blocks (valid while forward() runs a layer) ----
  const LayerWeights& weights(int32_t layer) const { return model_.layers[layer]; }
  const ForwardBatch& batch() const { return *batch_; }
  KvStorage& kv() { return *kv_; }
  const KvStorage& kv() const { return *kv_; }
  int32_t num_tokens() const { return T_; }
  ThreadPool* pool() const { return pool_; }
  BackendOps& ops() { return *ops_; }  // matmul, attention, norms, activations, collectives
  const RopeTable& rope(int32_t layer) const { return ropes_[layer_rope_[layer]]; }
  // Group g's paged attention, planned from its page table on first use in the step.
  PagedAttention& attention_plan(int32_t g);
  // How the step's storage holds layer's rows (one stream of kv_layer_specs) for PagedAttention.
  PagedAttention::LayerKv layer_kv(int32_t layer) const;
  // Select mode on a layer: its scorer, budget and (sketch) index stream for PagedAttention.
  PagedAttention::LayerKv::Select layer_select(int32_t layer);
  // The block of type B (derived from Block, constructible from the Model), made on first use.
  template <class B>
  B& block() {
    std::unique_ptr<Block>& b = blocks_[std::type_index(typeid(B))];
    if (!b) b = std::make_unique<B>(model_);
    return static_cast<B&>(*b);
  }

  // ---- Shared blocks for the families' layer recipes ----
  float* residual() { return x_.data(); }     // [T, dim] the residual stream
  float* normed() { return xb_.data(); }      // [T, dim] scratch: a block's input
  float* block_out() { return proj_.data(); } // [T, dim] scratch: a block's output
  // out[t] = rmsnorm(in[t]) * w for every token (out may be in)
  void norm(float* out, const float* in, const float* w);
  // out[T, dim] = GQA attention of layer over in[T, dim] (writes the layer's K/V rows into the cache)
  void attention(int32_t layer, const float* in, float* out);
  // out[T, dim] = the layer's FFN of in[T, dim]: a gated MLP, or the mixture of experts
  void ffn(int32_t layer, const float* in, float* out);
  void add_to_residual(const float* y);       // x += y

 private:
  void check_batch(const ForwardBatch& b, const KvStorage& kv) const;
  void begin_lora_step(const ForwardBatch& b);
  void keep_hidden_rows(const ForwardBatch& b);
  void mtp_input_rows(const ForwardBatch& b);  // an MTP head's input rows into x_ (model/mtp_head.h)
  void vocab_parallel_logits(int32_t rows, float* logits_out);  // [rows, vocab] from every rank's slice of the head
  void vocab_parallel_candidates(int32_t rows, int32_t k, float* logits_out);  // each row's top k; the rest -inf
  void sum_importance_over_ranks(const ForwardBatch& b);  // dynamic retention's page importance, over every rank
  void dense_ffn(const WeightView& gate, const WeightView& up, const WeightView& down, const float* in,
                 int32_t num_tokens, float* out, float* h1, float* h2, float limit = 0.0f,
                 const MlpBiases& bias = MlpBiases{}, float alpha = 0.0f);
  void moe_ffn(int32_t layer, const float* in, float* out);
  void project_gated_q(int32_t layer, const float* in);  // q_ and qgate_ from a [q | gate] per-head projection
  void route_experts(int32_t layer);  // router_ -> sel_, selw_ for the step's tokens
  void gate_shared_expert(const float* gate, const float* in, int32_t rows);  // eout_[t] *= sigmoid(gate · in[t])
  void add_shared_experts(int32_t layer, const float* in, int32_t first, int32_t rows, float* out);

  const Model& model_;
  const ModelFamily& family_;
  ThreadPool* pool_;
  std::unique_ptr<BackendOps> ops_;
  int32_t num_streams_;                // entries of kv_layer_specs(config): what a step's KV layout must have
  std::vector<RopeTable> ropes_;       // distinct RoPE configurations
  std::vector<int32_t> layer_rope_;    // [num_layers] index into ropes_
  std::vector<PagedAttention> attention_;  // [groups] planned on first use in a step
  std::vector<uint8_t> planned_;           // [groups] planned this step
  int32_t capacity_ = 0, logits_capacity_ = 0;
  // The step being run.
  const ForwardBatch* batch_ = nullptr;
  KvStorage* kv_ = nullptr;
  int32_t T_ = 0;
  std::vector<float> x_;        // [T, dim] residual stream
  std::vector<float> hidden_;   // [hidden_rows, dim] final-normed states the batch asked to keep
  std::vector<float> mtp_in_;   // [T, 2 * dim] an MTP head's normed [embedding | hidden] rows
  LoraOps* lora_ops_ = nullptr;                 // ops_ itself: every backend runs through the LoRA decorator
  std::vector<const LoraAdapter*> step_loras_;  // what batch.token_lora indexes
  std::vector<int32_t> row_lora_;               // [logits rows] each row's token's adapter
  std::vector<float> xb_;       // [T, dim] normed input
  std::vector<float> q_;        // [T, max q_dim]
  std::vector<float> k_, v_;    // [T, max kv_dim]
  std::vector<float> att_;      // [T, max q_dim] attention output (num_heads * head_dim_v)
  std::vector<float> qgate_;    // [T, max q_dim] gated attention: the q projection [T, heads, 2 * head_dim], then
                                // its gate halves [T, heads * head_dim] (layers with attn_output_gate only)
  std::vector<float> proj_;     // [T, dim]
  std::vector<float> hb_, hb2_; // [T, max ffn] gated MLP
  std::vector<float> final_;    // [rows, dim] normed rows for the classifier
  std::vector<float> head_local_, head_all_;  // vocabulary-parallel head: [rows, vocab / ranks], [ranks, rows, ...]
  std::vector<float> head_mine_;              // ... its top-k candidates: [rows, k, (logit, id)]
  std::vector<std::pair<float, int32_t>> head_cand_;  // [max(vocab / ranks, ranks * k)] (logit, id) being ranked
  std::vector<float> head_;     // [head_dim] one head being encoded
  std::vector<uint8_t> record_;  // [record bytes] its record, for a select index page (index_page.h)
  // MoE scratch
  std::vector<float> router_;   // [T, num_experts] router logits -> probabilities
  std::vector<int32_t> sel_;    // [T, used] selected experts
  std::vector<float> selw_;     // [T, used] their weights
  std::vector<float> ein_, eout_;  // [T, dim] tokens routed to one expert, and its output
  std::vector<int32_t> etok_;   // [T] their token indices
  std::vector<float> ewt_;      // [T] their weights
  std::vector<uint8_t> moe_rows_;  // [T] all-to-all expert combine: the tokens this rank's experts wrote
  std::vector<LayerProjection> kv_proj_;  // [num_layers] low-rank K/V bases, or empty
  PagedAttention::ReadStats read_stats_;
  KvObserver observer_;
  QObserver q_observer_;
  BlockOptions block_options_;
  std::unordered_map<std::type_index, std::unique_ptr<Block>> blocks_;
  ChoiceObserver choice_observer_;
};

}  // namespace slimkv
