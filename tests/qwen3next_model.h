// Test helper: the Qwen3-Next test model (issue X) — 4 layers (Gated DeltaNet x3, then gated full attention),
// dim 256; DeltaNet: 2 key heads and 4 value heads of 32, a 4-tap convolution; attention: 4 heads of 64 over 2 KV
// heads, q/k norms, NEOX RoPE on 16 dims; MoE: 8 experts of 64, top-2, a shared expert of 128 with its sigmoid
// gate — written by slimkv's own writer with fixed seeds (tests/random_gguf.h). tests/fixtures/qwen3next/ holds
// llama.cpp's outputs on it.
#pragma once
#include "random_gguf.h"

namespace slimkv::test::qwen3next {

constexpr int64_t kDim = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kLayers = 4, kExperts = 8, kExpertFfn = 64;
constexpr int64_t kSharedFfn = 128, kConv = 4, kKeyHeads = 2, kValueHeads = 4, kStateDim = 32;
constexpr int64_t kVocab = 512;

// Writes the test model to path; `matrices` is the storage of the 2-D and expert weights (F32 or Q8_0). With
// mtp_blocks > 0 the file also has that many blocks after the trunk (counted in block_count, named by
// nextn_predict_layers) as llama.cpp's converter writes an MTP head: the trunk's weights are the same bytes.
inline void write_model(const std::string& path, DType matrices, int64_t mtp_blocks = 0) {
  RandomGguf g("qwen3next", 20261203);
  g.u32("context_length", 262144);
  g.u32("embedding_length", kDim);
  g.u32("block_count", kLayers + mtp_blocks);
  if (mtp_blocks > 0) g.u32("nextn_predict_layers", mtp_blocks);
  g.u32("feed_forward_length", kExpertFfn);
  g.u32("attention.head_count", kHeads);
  g.u32("attention.head_count_kv", kKvHeads);
  g.u32("attention.key_length", kHeadDim);
  g.u32("attention.value_length", kHeadDim);
  g.u32("rope.dimension_count", kHeadDim / 4);
  g.f32("rope.freq_base", 10000000.0f);
  g.f32("attention.layer_norm_rms_epsilon", 1e-6f);
  g.u32("expert_count", kExperts);
  g.u32("expert_used_count", 2);
  g.u32("expert_feed_forward_length", kExpertFfn);
  g.u32("expert_shared_feed_forward_length", kSharedFfn);
  g.u32("ssm.conv_kernel", kConv);
  g.u32("ssm.state_size", kStateDim);
  g.u32("ssm.group_count", kKeyHeads);
  g.u32("ssm.time_step_rank", kValueHeads);
  g.u32("ssm.inner_size", kValueHeads * kStateDim);
  g.u32("full_attention_interval", 4);
  const float in_std = 1.0f / std::sqrt(static_cast<float>(kDim));
  g.normal("token_embd.weight", {kDim, kVocab}, 1.0f);
  g.normal("output_norm.weight", {kDim}, 0.1f, 1.0f);
  g.normal("output.weight", {kDim, kVocab}, 2.0f * in_std, 0.0f, matrices);
  const int64_t q = kHeads * kHeadDim, kv = kKvHeads * kHeadDim;
  const int64_t key_dim = kKeyHeads * kStateDim, value_dim = kValueHeads * kStateDim, conv_dim = 2 * key_dim + value_dim;
  for (int64_t l = 0; l < kLayers + mtp_blocks; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    g.normal(b + "attn_norm.weight", {kDim}, 0.1f, 1.0f);
    if ((l + 1) % 4 == 0 || l >= kLayers) {  // gated full attention (the MTP blocks' too)
      g.normal(b + "attn_q.weight", {kDim, 2 * q}, 2.0f * in_std, 0.0f, matrices);
      g.normal(b + "attn_k.weight", {kDim, kv}, 2.0f * in_std, 0.0f, matrices);
      g.normal(b + "attn_v.weight", {kDim, kv}, in_std, 0.0f, matrices);
      g.normal(b + "attn_output.weight", {q, kDim}, 1.0f / std::sqrt(static_cast<float>(q)), 0.0f, matrices);
      g.normal(b + "attn_q_norm.weight", {kHeadDim}, 0.1f, 1.0f);
      g.normal(b + "attn_k_norm.weight", {kHeadDim}, 0.1f, 1.0f);
    } else {  // Gated DeltaNet
      g.normal(b + "attn_qkv.weight", {kDim, conv_dim}, 2.0f * in_std, 0.0f, matrices);
      g.normal(b + "attn_gate.weight", {kDim, value_dim}, 2.0f * in_std, 0.0f, matrices);
      g.normal(b + "ssm_conv1d.weight", {kConv, conv_dim}, 0.5f);
      g.normal(b + "ssm_dt.bias", {kValueHeads}, 0.5f);
      g.normal(b + "ssm_a", {kValueHeads}, 0.2f, -1.0f);  // -exp(A_log), as the converter stores it
      g.normal(b + "ssm_ba.weight", {kDim, 2 * kValueHeads}, 2.0f * in_std, 0.0f, matrices);
      g.normal(b + "ssm_norm.weight", {kStateDim}, 0.1f, 1.0f);
      g.normal(b + "ssm_out.weight", {value_dim, kDim}, 1.0f / std::sqrt(static_cast<float>(value_dim)), 0.0f,
               matrices);
    }
    g.normal(b + "post_attention_norm.weight", {kDim}, 0.1f, 1.0f);
    g.normal(b + "ffn_gate_inp.weight", {kDim, kExperts}, in_std, 0.0f, matrices);
    g.normal(b + "ffn_gate_exps.weight", {kDim, kExpertFfn, kExperts}, 2.0f * in_std, 0.0f, matrices);
    g.normal(b + "ffn_up_exps.weight", {kDim, kExpertFfn, kExperts}, 2.0f * in_std, 0.0f, matrices);
    g.normal(b + "ffn_down_exps.weight", {kExpertFfn, kDim, kExperts}, 0.5f / std::sqrt(float(kExpertFfn)), 0.0f,
             matrices);
    g.normal(b + "ffn_gate_inp_shexp.weight", {kDim}, in_std);
    g.normal(b + "ffn_gate_shexp.weight", {kDim, kSharedFfn}, 2.0f * in_std, 0.0f, matrices);
    g.normal(b + "ffn_up_shexp.weight", {kDim, kSharedFfn}, 2.0f * in_std, 0.0f, matrices);
    g.normal(b + "ffn_down_shexp.weight", {kSharedFfn, kDim}, 0.5f / std::sqrt(float(kSharedFfn)), 0.0f, matrices);
  }
  g.write(path);
}

}  // namespace slimkv::test::qwen3next
