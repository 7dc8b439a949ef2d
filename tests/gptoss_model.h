// Test helper: the gpt-oss test model (issue X) — 4 layers (windowed, full, windowed, full), dim 256, 8 heads of 64
// over 2 KV heads, window 128, YaRN x32, 8 experts of 128 with top-4, every bias, sinks — written by slimkv's own
// writer with fixed seeds (tests/random_gguf.h). tests/fixtures/gpt-oss/ holds llama.cpp's outputs on it.
#pragma once
#include "random_gguf.h"

namespace slimkv::test::gptoss {

constexpr int64_t kDim = 256, kHeads = 8, kKvHeads = 2, kHeadDim = 64, kLayers = 4, kExperts = 8, kExpertFfn = 128;
constexpr int64_t kVocab = 512;

// Writes the test model to path; `experts` is the storage of the expert matrices (F32 or MXFP4).
inline void write_model(const std::string& path, DType experts) {
  RandomGguf g("gpt-oss", 20260101);
  g.u32("context_length", 131072);
  g.u32("embedding_length", kDim);
  g.u32("block_count", kLayers);
  g.u32("feed_forward_length", kExpertFfn);
  g.u32("attention.head_count", kHeads);
  g.u32("attention.head_count_kv", kKvHeads);
  g.u32("attention.key_length", kHeadDim);
  g.u32("attention.value_length", kHeadDim);
  g.u32("rope.dimension_count", kHeadDim);
  g.f32("rope.freq_base", 150000.0f);
  g.str("rope.scaling.type", "yarn");
  g.f32("rope.scaling.factor", 32.0f);
  g.u32("rope.scaling.original_context_length", 4096);
  g.f32("attention.layer_norm_rms_epsilon", 1e-5f);
  g.u32("attention.sliding_window", 128);
  g.u32("expert_count", kExperts);
  g.u32("expert_used_count", 4);
  g.u32("expert_feed_forward_length", kExpertFfn);
  const float in_std = 1.0f / std::sqrt(static_cast<float>(kDim));
  g.normal("token_embd.weight", {kDim, kVocab}, 1.0f);
  g.normal("output_norm.weight", {kDim}, 0.1f, 1.0f);
  g.normal("output.weight", {kDim, kVocab}, 2.0f * in_std);
  const int64_t q = kHeads * kHeadDim, kv = kKvHeads * kHeadDim;
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    g.normal(b + "attn_norm.weight", {kDim}, 0.1f, 1.0f);
    g.normal(b + "attn_q.weight", {kDim, q}, 2.0f * in_std);
    g.normal(b + "attn_k.weight", {kDim, kv}, 2.0f * in_std);
    g.normal(b + "attn_v.weight", {kDim, kv}, in_std);
    g.normal(b + "attn_output.weight", {q, kDim}, 1.0f / std::sqrt(static_cast<float>(q)));
    g.normal(b + "attn_q.bias", {q}, 0.1f);
    g.normal(b + "attn_k.bias", {kv}, 0.1f);
    g.normal(b + "attn_v.bias", {kv}, 0.1f);
    g.normal(b + "attn_output.bias", {kDim}, 0.1f);
    g.normal(b + "attn_sinks.weight", {kHeads}, 1.0f, 1.0f);
    g.normal(b + "post_attention_norm.weight", {kDim}, 0.1f, 1.0f);
    g.normal(b + "ffn_gate_inp.weight", {kDim, kExperts}, in_std);
    g.normal(b + "ffn_gate_inp.bias", {kExperts}, 0.5f);
    // gate and up wide enough that the clamps at +-7 act on some values
    g.normal(b + "ffn_gate_exps.weight", {kDim, kExpertFfn, kExperts}, 3.0f * in_std, 0.0f, experts);
    g.normal(b + "ffn_up_exps.weight", {kDim, kExpertFfn, kExperts}, 3.0f * in_std, 0.0f, experts);
    g.normal(b + "ffn_down_exps.weight", {kExpertFfn, kDim, kExperts}, 0.3f / std::sqrt(float(kExpertFfn)), 0.0f,
             experts);
    g.normal(b + "ffn_gate_exps.bias", {kExpertFfn, kExperts}, 0.1f);
    g.normal(b + "ffn_up_exps.bias", {kExpertFfn, kExperts}, 0.1f);
    g.normal(b + "ffn_down_exps.bias", {kDim, kExperts}, 0.1f);
  }
  g.write(path);
}

}  // namespace slimkv::test::gptoss
