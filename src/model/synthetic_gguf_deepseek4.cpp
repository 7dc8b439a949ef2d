// The deepseek4 part of model/synthetic_gguf: a DeepSeek-V4 shape (synthetic_model.h: deepseek-v4-flash-4l, ...)
// written with the keys and tensors llama.cpp's converter writes (arch `deepseek4`: hyper-connections, grouped output
// LoRA, per-layer compressor / indexer by compress ratio, hash-routed or scored MoE), so llama.cpp runs it too.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/synthetic_gguf_parts.h"

namespace slimkv {
namespace {

void add_keys(const ModelConfig& c, GgufWriter& w) {
  const std::string a = "deepseek4.";
  const Dsv4Config& d = c.dsv4;
  const MoeConfig& m = c.moe;
  const RopeConfig& comp = d.compress_rope;
  w.add_u32(a + "block_count", static_cast<uint32_t>(c.num_layers));
  w.add_u32(a + "context_length", static_cast<uint32_t>(c.max_seq_len));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(c.dim));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(c.num_heads));
  w.add_u32(a + "attention.head_count_kv", 1);
  w.add_string(a + "rope.scaling.type", "yarn");
  w.add_f32(a + "rope.scaling.factor", 1.0f / comp.freq_scale);
  w.add_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(comp.orig_ctx));
  w.add_f32(a + "rope.scaling.yarn_beta_fast", comp.beta_fast);
  w.add_f32(a + "rope.scaling.yarn_beta_slow", comp.beta_slow);
  w.add_f32(a + "rope.freq_base", c.rope_theta);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  w.add_u32(a + "expert_count", static_cast<uint32_t>(m.num_experts));
  w.add_u32(a + "expert_used_count", static_cast<uint32_t>(m.num_experts_used));
  w.add_u32(a + "expert_gating_func", 4);  // sqrt(softplus)
  w.add_u32(a + "attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.add_u32(a + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(c.rotary_dim));
  w.add_u32(a + "attention.q_lora_rank", static_cast<uint32_t>(d.q_lora_rank));
  w.add_u32(a + "attention.sliding_window", static_cast<uint32_t>(c.layers.front().sliding_window));
  w.add_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(m.expert_ffn_dim));
  w.add_u32(a + "expert_shared_count", static_cast<uint32_t>(m.num_shared_experts));
  w.add_f32(a + "expert_weights_scale", m.weights_scale);
  w.add_bool(a + "expert_weights_norm", m.norm_topk_prob);
  w.add_f32s(a + "swiglu_clamp_exp", std::vector<float>(c.num_layers, m.swiglu_limit));
  w.add_f32s(a + "swiglu_clamp_shexp", std::vector<float>(c.num_layers, m.swiglu_limit_shared));
  w.add_u32(a + "attention.indexer.head_count", static_cast<uint32_t>(d.index_heads));
  w.add_u32(a + "attention.indexer.key_length", static_cast<uint32_t>(d.index_head_dim));
  w.add_u32(a + "attention.indexer.top_k", static_cast<uint32_t>(d.index_topk));
  w.add_u32(a + "attention.output_group_count", static_cast<uint32_t>(d.o_groups));
  w.add_u32(a + "attention.output_lora_rank", static_cast<uint32_t>(d.o_lora_rank));
  std::vector<int32_t> ratios;
  for (const LayerConfig& lc : c.layers) ratios.push_back(lc.compress_ratio);
  w.add_i32s(a + "attention.compress_ratios", ratios);
  w.add_f32(a + "attention.compress_rope_freq_base", comp.base);
  w.add_u32(a + "hyper_connection.count", static_cast<uint32_t>(d.hc_mult));
  w.add_u32(a + "hyper_connection.sinkhorn_iterations", static_cast<uint32_t>(d.hc_sinkhorn_iters));
  w.add_f32(a + "hyper_connection.epsilon", d.hc_eps);
  w.add_u32(a + "hash_layer_count", static_cast<uint32_t>(m.num_hash_layers));
  w.add_u32(a + "embedding_length_out", static_cast<uint32_t>(c.dim * d.hc_mult));
}

// One sub-block's hyper-connection mixing: fn [mix, hc * dim], base [mix], scale [3].
void hc_block(SyntheticTensors& t, const std::string& p, const ModelConfig& c) {
  const int64_t hc = c.dsv4.hc_mult, mix = (2 + hc) * hc;
  t.matrix(p + "_fn.weight", mix, hc * c.dim);
  t.values(p + "_base.weight", {mix}, 0.0f, 0.5f);
  t.values(p + "_scale.weight", {3}, 0.5f, 0.0f);
}

// The layer's compressor (ratio 4: overlapping, 2 x the channels) and, on ratio-4 layers, the indexer.
void compressor(SyntheticTensors& t, const std::string& p, const ModelConfig& c, int32_t ratio) {
  const Dsv4Config& d = c.dsv4;
  const int64_t D = c.head_dim, coff = ratio == 4 ? 2 : 1, iD = d.index_head_dim;
  t.matrix(p + "attn_compressor_kv.weight", coff * D, c.dim);
  t.matrix(p + "attn_compressor_gate.weight", coff * D, c.dim);
  t.values(p + "attn_compressor_ape.weight", {coff * D, ratio}, 0.0f, 0.5f);
  t.ones(p + "attn_compressor_norm.weight", D);
  if (ratio != 4) return;
  t.matrix(p + "indexer.proj.weight", d.index_heads, c.dim);
  t.matrix(p + "indexer.attn_q_b.weight", d.index_heads * iD, d.q_lora_rank);
  t.matrix(p + "indexer_compressor_kv.weight", 2 * iD, c.dim);
  t.matrix(p + "indexer_compressor_gate.weight", 2 * iD, c.dim);
  t.values(p + "indexer_compressor_ape.weight", {2 * iD, ratio}, 0.0f, 0.5f);
  t.ones(p + "indexer_compressor_norm.weight", iD);
}

// Hash-routed layers' token -> experts table: distinct experts per token, I32 {used, vocab}.
void hash_routes(GgufWriter& w, const std::string& name, const ModelConfig& c, uint64_t seed) {
  const int32_t experts = c.moe.num_experts, used = c.moe.num_experts_used;
  std::mt19937_64 rng(seed);
  std::vector<int32_t> order(experts), table;
  for (int32_t tok = 0; tok < c.vocab_size; ++tok) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    table.insert(table.end(), order.begin(), order.begin() + used);
  }
  w.add_tensor(name, DType::I32, {used, c.vocab_size}, table.data(), table.size() * 4);
}

}  // namespace

void write_deepseek4_synthetic(const ModelConfig& c, GgufWriter& w, SyntheticTensors& t) {
  add_keys(c, w);
  add_placeholder_vocab(w, c.vocab_size);
  const Dsv4Config& d = c.dsv4;
  const MoeConfig& m = c.moe;
  const int64_t dim = c.dim, H = c.num_heads, D = c.head_dim, hc = d.hc_mult;
  t.matrix("token_embd.weight", c.vocab_size, dim);
  t.ones("output_norm.weight", dim);
  t.matrix("output.weight", c.vocab_size, dim);
  t.matrix("output_hc_fn.weight", hc, hc * dim);
  t.values("output_hc_base.weight", {hc}, 0.0f, 0.5f);
  t.values("output_hc_scale.weight", {1}, 0.5f, 0.0f);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    hc_block(t, p + "hc_attn", c);
    hc_block(t, p + "hc_ffn", c);
    t.ones(p + "attn_norm.weight", dim);
    t.values(p + "attn_sinks.weight", {H}, 0.0f, 1.0f);
    t.matrix(p + "attn_q_a.weight", d.q_lora_rank, dim);
    t.ones(p + "attn_q_a_norm.weight", d.q_lora_rank);
    t.matrix(p + "attn_q_b.weight", H * D, d.q_lora_rank);
    t.matrix(p + "attn_kv.weight", D, dim);
    t.ones(p + "attn_kv_a_norm.weight", D);
    // the output LoRA's groups as the converter stores them: one 2-D tensor, group g = row block g
    t.matrix(p + "attn_output_a.weight", static_cast<int64_t>(d.o_groups) * d.o_lora_rank, H * D / d.o_groups);
    t.matrix(p + "attn_output_b.weight", dim, static_cast<int64_t>(d.o_groups) * d.o_lora_rank);
    if (c.layers[l].compress_ratio != 0) compressor(t, p, c, c.layers[l].compress_ratio);
    t.ones(p + "ffn_norm.weight", dim);
    t.matrix(p + "ffn_gate_inp.weight", m.num_experts, dim);
    if (l < m.num_hash_layers) {
      hash_routes(w, p + "ffn_gate_tid2eid.weight", c, 1000 + static_cast<uint64_t>(l));
    } else {
      t.values(p + "exp_probs_b.bias", {m.num_experts}, 0.0f, 0.1f);
    }
    t.matrix(p + "ffn_gate_exps.weight", m.expert_ffn_dim, dim, m.num_experts);
    t.matrix(p + "ffn_up_exps.weight", m.expert_ffn_dim, dim, m.num_experts);
    t.matrix(p + "ffn_down_exps.weight", dim, m.expert_ffn_dim, m.num_experts);
    t.matrix(p + "ffn_gate_shexp.weight", m.shared_ffn_dim, dim);
    t.matrix(p + "ffn_up_shexp.weight", m.shared_ffn_dim, dim);
    t.matrix(p + "ffn_down_shexp.weight", dim, m.shared_ffn_dim);
  }
}

}  // namespace slimkv
