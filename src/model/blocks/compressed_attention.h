// DeepSeek-V4's attention (family deepseek4), as llama.cpp's deepseek4.cpp computes it: q LoRA -> per-head RMS norm
// -> RoPE on the last dims; one shared K = V head; on compressed layers a compressor pools each group of `ratio`
// tokens into an entry (CSA: ratio 4, groups overlapping the previous one; HCA: ratio 128); on CSA layers the
// lightning indexer keeps each query's top-k entries; a query attends its window of raw tokens and its visible
// entries in one softmax with a learned per-head sink; the output leaves through the grouped output LoRA.
// Owns: its scratch, and the declaration of the KV streams such a layer writes (compressed_layer_streams: the one
// place their order is written). Must not know: block tables (the batch's page tables say where records live).
#pragma once
#include <vector>

#include "model/blocks/block.h"
#include "model/decoder_forward.h"
#include "model/weight_binder.h"

namespace slimkv {

// A compressed-attention layer's streams, in order, with each one's index among them (-1: the layer has none).
struct CompressedLayerStreams {
  std::vector<KvLayerSpec> specs;
  int32_t raw = -1;         // raw tokens (the sliding window)
  int32_t comp = -1;        // compressed entries, one per `ratio` tokens
  int32_t comp_state = -1;  // the entries' compressor state (the last overlap * ratio tokens' rows)
  int32_t idx = -1;         // indexer keys (CSA), one per 4 tokens
  int32_t idx_state = -1;   // their compressor state
};
CompressedLayerStreams compressed_layer_streams(const ModelConfig& c, int32_t layer);
// The same indices as positions in kv_layer_specs(c) (model/kv_streams.h).
CompressedLayerStreams compressed_stream_indices(const ModelConfig& c, int32_t layer);

class CompressedAttention : public Block {
 public:
  explicit CompressedAttention(const Model& m);
  // Binds layer's attention, compressor and indexer weights (part of the family's ModelFamily::bind_attention).
  static void bind(LayerBinder& b, int32_t layer);
  // out[T, dim] = the layer's attention of in[T, dim]; writes its records (raw token, state rows, completed entries
  // and indexer keys) into the cache.
  void run(DecoderForward& f, int32_t layer, const float* in, float* out);

 private:
  struct Layer;  // the layer's sizes and streams for this step
  void project(DecoderForward& f, const Layer& ly, const float* in);
  void compress(DecoderForward& f, const Layer& ly, const float* in, int32_t state_stream, int32_t entry_stream,
                bool indexer);
  void select_entries(DecoderForward& f, const Layer& ly, const float* in);
  void attend(DecoderForward& f, const Layer& ly);
  void output_lora(DecoderForward& f, const Layer& ly, float* out);

  std::vector<CompressedLayerStreams> streams_;  // [layers] each layer's streams, as storage positions
  std::vector<float> qr_;       // [T, q_lora] normed q LoRA
  std::vector<float> q_;        // [T, heads * head_dim] per-head normed, roped queries
  std::vector<float> kv_;       // [T, head_dim] the token's K = V record
  std::vector<float> o_;        // [T, heads * head_dim] attention output (de-roped)
  std::vector<float> gin_;      // [T, heads_per_group * head_dim] one output group's input
  std::vector<float> gout_;     // [T, o_lora]
  std::vector<float> oa_;       // [T, o_groups * o_lora]
  std::vector<float> st_kv_, st_sc_;  // [T, overlap * n] compressor rows (kv, gate score + ape)
  std::vector<float> st_rec_;         // [overlap * 2 * n] one state record
  std::vector<float> iq_;       // [T, index_heads * index_dim] indexer queries (roped, rotated)
  std::vector<float> iw_;       // [T, index_heads] indexer head weights
  std::vector<int32_t> topk_;   // [T, top_k] chosen compressed entries per token (-1 = none)
  std::vector<int32_t> ntopk_;  // [T] how many
  std::vector<float> entry_;    // [max(head_dim, index_dim)] one compressed entry being built
};

}  // namespace slimkv
