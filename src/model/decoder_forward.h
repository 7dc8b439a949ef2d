// The decoder forward pass over a varlen batch of tokens from many sequences: embeddings (scaled), then each layer
// through its family's recipe (model/family.h) built from the shared blocks below — RMSNorm, attention (QKV with
// biases, per-head q/k norm, RoPE per layer, K/V rows written to their group's slots, paged GQA attention with the
// layer's window), FFN (SwiGLU / GeGLU, or MoE with tokens grouped by expert) — then logits for the requested rows
// (softcapped where the family says so).
// Owns: scratch activations (grown only when a larger batch arrives; reserve() them up front), RoPE tables.
// Must not know: tokenizers, sampling, requests, how blocks are chosen, or which family it runs (no arch branches).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "compress/calibration.h"
#include "compress/compression_config.h"
#include "core/thread_pool.h"
#include "kv/kv_storage.h"
#include "model/family.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace slimkv {

// The model's per-layer KV specs (heads, K/V head sizes, sliding windows): what compression configs transform.
// DeepSeek-V4 layers have several streams each (kv_streams), so its list is longer than the layer count.
std::vector<KvLayerSpec> kv_layer_specs(const ModelConfig& c);
// Which entries of kv_layer_specs a layer's records live in (-1: none): the attention stream (raw tokens), and for
// DeepSeek-V4 the compressed entries, their compressor state, the indexer keys and their compressor state.
struct KvStreams {
  int32_t raw = -1, comp = -1, comp_state = -1, idx = -1, idx_state = -1;
};
KvStreams kv_streams(const ModelConfig& c, int32_t layer);

// How MLA layers attend: over the latents with absorbed queries (decode's choice), by decompressing the sequences'
// latents into per-head K and V once per step (cheaper for long prefill chunks), or per step by a cost model.
enum class MlaAttention : uint8_t { Absorbed, Decompressed, Auto };
// Where a hyper-connection mix sits (DeepSeek-V4): around the attention or the FFN sub-block.
enum class HcSite : uint8_t { Attn, Ffn };
struct Dsv4Scratch;  // dsv4_block.cpp
MlaAttention parse_mla_attention(const std::string& s);  // absorbed | decompressed | auto; throws otherwise

// Biases of a gated MLP's three projections (gpt-oss experts): [ffn], [ffn], [dim], each may be null.
struct MlpBiases {
  const float *gate = nullptr, *up = nullptr, *down = nullptr;
};

class DecoderForward {
 public:
  DecoderForward(const Model& model, ThreadPool* pool);

  void reserve(int32_t max_tokens, int32_t max_logits_rows);
  // logits_out: [batch.logits_rows.size(), vocab]. The batch has one page table per group of kv's layout.
  void forward(const ForwardBatch& batch, KvStorage& kv, float* logits_out);
  // Writes one token's K and V rows ([k_dim], [v_dim] of the layer, post-RoPE) of `layer` into `slot` (of the
  // layer's group) in the storage's format for that layer (projection, rotation, quantization). Also how
  // benchmarks fill caches synthetically.
  void write_kv(KvStorage& kv, int32_t layer, int64_t slot, const float* k_row, const float* v_row);

  const Model& model() const { return model_; }
  // Attention mass per page entry of group g's page table, summed since the step's plan (dynamic retention).
  const std::vector<float>& page_importance(int32_t g) const { return attention_[g].page_importance(); }
  // The KV layout this model needs under a compression config (default: full f32 K and V rows, model windows).
  KvLayout kv_layout(int32_t block_size_tokens, const CompressionConfig& cc = CompressionConfig{}) const;
  // Low-rank bases per layer (empty vectors = full rank), used when writing and reading the cache.
  void set_kv_projection(std::vector<LayerProjection> proj) { kv_proj_ = std::move(proj); }
  // Sees each layer's post-RoPE K and V rows ([T, k_dim] / [T, v_dim]) as they are computed (calibration).
  using KvObserver = std::function<void(int32_t layer, const float* k, const float* v, int32_t num_tokens)>;
  void set_kv_observer(KvObserver obs) { observer_ = std::move(obs); }
  // Sees each layer's post-RoPE queries ([T, q_dim]) just before the layer's K/V observer (attention profiles).
  using QObserver = std::function<void(int32_t layer, const float* q, int32_t num_tokens)>;
  void set_q_observer(QObserver obs) { q_observer_ = std::move(obs); }
  void set_mla_attention(MlaAttention mode) { mla_mode_ = mode; }
  // Sees discrete choices as they are made (tests compare them with llama.cpp's dumps): "experts" (a token's routed
  // experts, in selection order) and "indexer" (a DeepSeek-V4 token's chosen compressed entries, ascending).
  using ChoiceObserver =
      std::function<void(const char* what, int32_t layer, int32_t token, const int32_t* ids, int32_t n)>;
  void set_choice_observer(ChoiceObserver obs) { choice_observer_ = std::move(obs); }

  // ---- Shared blocks for the families' layer recipes (valid while forward() runs a layer) ----
  const LayerWeights& weights(int32_t layer) const { return model_.layers[layer]; }
  float* residual() { return x_.data(); }     // [T, dim] the residual stream
  float* normed() { return xb_.data(); }      // [T, dim] scratch: a block's input
  float* block_out() { return proj_.data(); } // [T, dim] scratch: a block's output
  // out[t] = rmsnorm(in[t]) * w for every token (out may be in)
  void norm(float* out, const float* in, const float* w);
  // out[T, dim] = attention of layer over in[T, dim] (writes the layer's K/V rows into the cache); MLA layers
  // (LayerConfig::mla) take the latent path (mla_block.cpp)
  void attention(int32_t layer, const float* in, float* out);
  // out[T, dim] = the layer's FFN of in[T, dim]: a gated MLP, or the mixture of experts
  void ffn(int32_t layer, const float* in, float* out);
  void add_to_residual(const float* y);       // x += y
  // Hyper-connections (DeepSeek-V4, hyper_connection.cpp): the residual is hc_mult streams per token.
  void hc_begin();                                    // streams = the embedding, hc_mult times
  void hc_pre(int32_t layer, HcSite site, float* out);  // out[T, dim] = the sub-block's input (pre-mix of streams)
  void hc_post(HcSite site, const float* y);          // streams = post * y + comb · streams (mixes of hc_pre)
  void hc_head();                                     // residual() = the head's mix of the streams
  // Overrides the model's indexer top-k (--kv-sparse-topk on a natively compressed model); 0 = the model's.
  void set_index_topk(int32_t k) { index_topk_override_ = k; }

 private:
  void dense_ffn(const WeightView& gate, const WeightView& up, const WeightView& down, const float* in,
                 int32_t num_tokens, float* out, float* h1, float* h2, float limit = 0.0f,
                 const MlpBiases& bias = MlpBiases{}, float alpha = 0.0f);
  void moe_ffn(int32_t layer, const float* in, float* out);
  void route_experts(int32_t layer);  // router_ -> sel_, selw_ for the step's tokens
  void mla_attention(int32_t layer, const float* in, float* out);
  void dsv4_attention(int32_t layer, const float* in, float* out);  // dsv4_block.cpp
  Dsv4Scratch& dsv4();
  bool mla_decompress_this_step(int32_t layer) const;  // the cost model of MlaAttention::Auto
  void mla_decompressed(int32_t layer);                 // mla_q_ + the cache -> mla_o_
  PagedAttention::LayerKv layer_kv(int32_t layer) const;  // how the step's storage holds the layer's rows

  const Model& model_;
  const ModelFamily& family_;
  ThreadPool* pool_;
  std::vector<RopeTable> ropes_;       // distinct RoPE configurations
  std::vector<int32_t> layer_rope_;    // [num_layers] index into ropes_
  std::vector<PagedAttention> attention_;  // [groups] planned once per step
  int32_t capacity_ = 0, logits_capacity_ = 0;
  // The step being run.
  const ForwardBatch* batch_ = nullptr;
  KvStorage* kv_ = nullptr;
  int32_t T_ = 0;
  std::vector<float> x_;        // [T, dim] residual stream
  std::vector<float> xb_;       // [T, dim] normed input
  std::vector<float> q_;        // [T, max q_dim]
  std::vector<float> k_, v_;    // [T, max kv_dim]
  std::vector<float> att_;      // [T, max q_dim] attention output (num_heads * head_dim_v)
  std::vector<float> proj_;     // [T, dim]
  std::vector<float> hb_, hb2_; // [T, max ffn] gated MLP
  std::vector<float> final_;    // [rows, dim] normed rows for the classifier
  std::vector<float> head_;     // [head_dim] one head being encoded
  // MoE scratch
  std::vector<float> router_;   // [T, num_experts] router logits -> probabilities
  std::vector<int32_t> sel_;    // [T, used] selected experts
  std::vector<float> selw_;     // [T, used] their weights
  std::vector<float> ein_, eout_;  // [T, dim] tokens routed to one expert, and its output
  std::vector<int32_t> etok_;   // [T] their token indices
  std::vector<float> ewt_;      // [T] their weights
  // MLA scratch (mla_block.cpp)
  std::vector<float> mla_qa_;   // [T, q_lora] q LoRA
  std::vector<float> mla_q_;    // [T, heads * (nope + rope)] projected queries
  std::vector<float> mla_kv_;   // [T, kv_lora + rope] latent | rope key = the cache record
  std::vector<float> mla_in_, mla_out_;  // [T, max(nope, kv_lora)] one head's rows in / [T, max(kv_lora, v)] out
  std::vector<float> mla_o_;    // [T, heads * v_head_dim] per-head outputs before the output projection
  MlaAttention mla_mode_ = MlaAttention::Absorbed;
  std::vector<std::vector<WeightView>> mla_kbt_;     // [layer][head] k_b transposed: [nope, kv_lora] (decompression)
  std::vector<std::unique_ptr<std::vector<float>>> mla_kbt_store_;
  // decompression: [ctx, kv_lora] latents, [ctx, rope], [ctx, nope], [ctx, nope + rope] keys, [ctx, v] values,
  // [threads, ctx] scores
  std::vector<float> dc_c_, dc_pe_, dc_k_, dc_kf_, dc_v_, dc_s_;
  std::vector<LayerProjection> kv_proj_;  // [num_layers] low-rank K/V bases, or empty
  KvObserver observer_;
  QObserver q_observer_;
  std::shared_ptr<Dsv4Scratch> dsv4_;  // DeepSeek-V4 scratch (hyper-connection streams, compressor, indexer)
  int32_t index_topk_override_ = 0;
  ChoiceObserver choice_observer_;
};

}  // namespace slimkv
