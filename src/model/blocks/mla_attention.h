// Multi-head latent attention (DeepSeek-V2/V3, family deepseek2), absorbed as llama.cpp computes it or decompressed
// per step (BlockOptions::mla_attention). The cache holds one record per token, [c_kv | k_pe] (kv_lora + rope
// values, one "KV head"), whose latent part is also the value.
// Owns: its scratch and the transposed k_b it builds for decompression. Must not know: block tables.
#pragma once
#include <memory>
#include <vector>

#include "model/blocks/block.h"
#include "model/decoder_forward.h"
#include "model/weight_binder.h"

namespace slimkv {

class MlaAttentionBlock : public Block {
 public:
  explicit MlaAttentionBlock(const Model&) {}
  // Binds layer's latent-attention weights (q LoRA or q, kv_a, its norm, k_b / v_b — split from a fused kv_b
  // where the file has one —, o): the family's ModelFamily::bind_attention.
  static void bind(LayerBinder& b, int32_t layer);
  // out[T, dim] = the layer's latent attention of in[T, dim]; writes the layer's records into the cache.
  void run(DecoderForward& f, int32_t layer, const float* in, float* out);

 private:
  static void bind_fused_kv_b(LayerBinder& b, int32_t layer);
  bool decompress_this_step(const DecoderForward& f, int32_t layer) const;  // the cost model of MlaAttention::Auto
  void decompressed(DecoderForward& f, int32_t layer);                     // q_ + the cache -> o_

  std::vector<float> qa_;   // [T, q_lora] q LoRA
  std::vector<float> q_;    // [T, heads * (nope + rope)] projected queries
  std::vector<float> kv_;   // [T, kv_lora + rope] latent | rope key = the cache record
  std::vector<float> in_, out_;  // [T, max(nope, kv_lora)] one head's rows in / [T, max(kv_lora, v)] out
  std::vector<float> qabs_; // [T, heads * (kv_lora + rope)] absorbed queries
  std::vector<float> att_;  // [T, heads * kv_lora] attention output in the latent space
  std::vector<float> o_;    // [T, heads * v_head_dim] per-head outputs before the output projection
  std::vector<std::vector<WeightView>> kbt_;  // [layer][head] k_b transposed: [nope, kv_lora] (decompression)
  std::vector<std::unique_ptr<std::vector<float>>> kbt_store_;
  // decompression: [ctx, kv_lora] latents, [ctx, rope], [ctx, nope], [ctx, nope + rope] keys, [ctx, v] values,
  // [threads, ctx] scores
  std::vector<float> dc_c_, dc_pe_, dc_k_, dc_kf_, dc_v_, dc_s_;
};

}  // namespace slimkv
