#include "model/model_config.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"

namespace slimkv {

void ModelConfig::finalize() {
  if (head_dim_v == 0) head_dim_v = head_dim;
  if (rotary_dim == 0) rotary_dim = head_dim;
  if (!layers.empty() || num_layers < 1 || num_layers > 1024) return;  // validate() names a bad count
  LayerConfig l;
  l.num_heads = num_heads;
  l.num_kv_heads = num_kv_heads;
  l.head_dim_k = head_dim;
  l.head_dim_v = head_dim_v;
  l.rotary_dim = rotary_dim;
  l.rope.base = rope_theta;
  l.ffn_dim = hidden_dim;
  layers.assign(std::max(num_layers, 0), l);
}

void ModelConfig::validate() const {
  auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  SLIMKV_CHECK(in(dim, 1, 1 << 16), "model: bad embedding width {}", dim);
  SLIMKV_CHECK(in(num_layers, 1, 1024), "model: bad layer count {}", num_layers);
  SLIMKV_CHECK(in(vocab_size, 1, 1 << 22), "model: bad vocabulary size {}", vocab_size);
  SLIMKV_CHECK(in(max_seq_len, 1, 1 << 24), "model: bad context length {}", max_seq_len);
  SLIMKV_CHECK(rms_eps > 0 && rms_eps < 1.0f, "model: bad rms eps {}", rms_eps);
  SLIMKV_CHECK(static_cast<int32_t>(layers.size()) == num_layers, "model: {} layer configs for {} layers",
               layers.size(), num_layers);
  SLIMKV_CHECK(embed_scale > 0 && attn_scale >= 0 && final_logit_softcap >= 0, "model: bad scale");
  if (moe.num_experts > 0) {
    SLIMKV_CHECK(in(moe.num_experts, 1, 4096), "model: bad expert count {}", moe.num_experts);
    SLIMKV_CHECK(in(moe.num_experts_used, 1, moe.num_experts), "model: {} experts used of {}", moe.num_experts_used,
                 moe.num_experts);
    SLIMKV_CHECK(in(moe.expert_ffn_dim, 1, 1 << 18), "model: bad expert width {}", moe.expert_ffn_dim);
    SLIMKV_CHECK(moe.num_shared_experts == 0 || in(moe.shared_ffn_dim, 1, 1 << 18), "model: bad shared expert width");
    SLIMKV_CHECK(in(moe.num_groups, 1, moe.num_experts) && moe.num_experts % moe.num_groups == 0 &&
                     in(moe.groups_used, 1, moe.num_groups),
                 "model: {} expert groups ({} used) for {} experts", moe.num_groups, moe.groups_used, moe.num_experts);
    SLIMKV_CHECK(moe.num_groups == 1 || moe.num_experts / moe.num_groups >= 2, "model: expert groups need 2 experts each");
    SLIMKV_CHECK(moe.num_experts_used <= moe.groups_used * (moe.num_experts / moe.num_groups),
                 "model: {} experts used but the {} groups used hold fewer", moe.num_experts_used, moe.groups_used);
  }
  if (mla.enabled()) {
    SLIMKV_CHECK(in(mla.kv_lora_rank, 1, 8192) && in(mla.q_lora_rank, 0, 8192) && in(mla.nope_dim, 1, 1024) &&
                     in(mla.rope_dim, 2, 1024) && mla.rope_dim % 2 == 0 && in(mla.v_head_dim, 1, 1024),
                 "model: bad MLA dims (q lora {}, kv lora {}, nope {}, rope {}, v {})", mla.q_lora_rank,
                 mla.kv_lora_rank, mla.nope_dim, mla.rope_dim, mla.v_head_dim);
  }
  if (delta_net.enabled()) {
    const DeltaNetConfig& d = delta_net;
    SLIMKV_CHECK(in(d.conv_kernel, 2, 64) && in(d.num_k_heads, 1, 1024) && in(d.num_v_heads, 1, 1024) &&
                     d.num_v_heads % d.num_k_heads == 0 && in(d.head_k_dim, 1, 1024) && in(d.head_v_dim, 1, 1024),
                 "model: bad DeltaNet dims (kernel {}, {} key heads of {}, {} value heads of {})", d.conv_kernel,
                 d.num_k_heads, d.head_k_dim, d.num_v_heads, d.head_v_dim);
  }
  for (int32_t i = 0; i < num_layers; ++i) {
    const LayerConfig& l = layers[i];
    SLIMKV_CHECK(!l.delta_net || delta_net.enabled(), "model: layer {} is a DeltaNet layer without its config", i);
    SLIMKV_CHECK(in(l.num_heads, 1, 1024), "model: layer {}: bad head count {}", i, l.num_heads);
    SLIMKV_CHECK(in(l.num_kv_heads, 1, l.num_heads) && l.num_heads % l.num_kv_heads == 0,
                 "model: layer {}: {} KV heads do not divide {} heads", i, l.num_kv_heads, l.num_heads);
    SLIMKV_CHECK(in(l.head_dim_k, 2, 8192) && l.head_dim_k % 2 == 0, "model: layer {}: bad head dim {}", i,
                 l.head_dim_k);
    SLIMKV_CHECK(!l.mla || (mla.enabled() && l.num_kv_heads == 1 &&
                            l.head_dim_k == mla.kv_lora_rank + mla.rope_dim && l.head_dim_v == mla.kv_lora_rank &&
                            l.rotary_dim == mla.rope_dim),
                 "model: layer {}: MLA layer shapes disagree with the MLA config", i);
    SLIMKV_CHECK(in(l.head_dim_v, 1, 8192), "model: layer {}: bad value head dim {}", i, l.head_dim_v);
    SLIMKV_CHECK(in(l.rotary_dim, 2, l.head_dim_k) && l.rotary_dim % 2 == 0, "model: layer {}: bad rotary dim {}", i,
                 l.rotary_dim);
    SLIMKV_CHECK(l.rope.base > 0 && l.rope.base < 1e12f, "model: layer {}: bad rope base {}", i, l.rope.base);
    SLIMKV_CHECK(l.rope.freq_scale > 0 && l.rope.freq_scale <= 1e3f, "model: layer {}: bad rope freq scale {}", i,
                 l.rope.freq_scale);
    SLIMKV_CHECK(l.rope.freq_factors.empty() || static_cast<int32_t>(l.rope.freq_factors.size()) == l.rotary_dim / 2,
                 "model: layer {}: {} rope frequency factors for rotary dim {}", i, l.rope.freq_factors.size(),
                 l.rotary_dim);
    SLIMKV_CHECK(in(l.sliding_window, 0, 1 << 24), "model: layer {}: bad sliding window {}", i, l.sliding_window);
    SLIMKV_CHECK(l.moe ? moe.num_experts > 0 : in(l.ffn_dim, 1, 1 << 18), "model: layer {}: bad FFN width {}", i,
                 l.ffn_dim);
  }
}

bool ModelConfig::uniform_kv() const {
  for (const LayerConfig& l : layers) {
    const LayerConfig& f = layers.front();
    if (l.num_kv_heads != f.num_kv_heads || l.head_dim_k != f.head_dim_k || l.head_dim_v != f.head_dim_v) return false;
  }
  return true;
}

int32_t ModelConfig::max_q_dim() const {
  int32_t m = 0;
  for (const LayerConfig& l : layers) {
    m = std::max({m, l.attn_output_gate ? 2 * l.q_dim() : l.q_dim(), l.attn_out_dim()});
    if (l.mla) m = std::max(m, l.num_heads * std::max(mla.q_head_dim(), mla.v_head_dim));
  }
  return m;
}

int32_t ModelConfig::max_kv_dim() const {
  int32_t m = 0;
  for (const LayerConfig& l : layers) m = std::max(m, l.num_kv_heads * std::max(l.head_dim_k, l.head_dim_v));
  return m;
}

int32_t ModelConfig::max_ffn_dim() const {
  int32_t m = std::max(moe.expert_ffn_dim, moe.shared_ffn_dim);
  for (const LayerConfig& l : layers) m = std::max(m, l.ffn_dim);
  return m;
}

std::string ModelConfig::summary() const {
  int32_t swa = 0;
  for (const LayerConfig& l : layers) swa += l.sliding_window > 0;
  std::string s = fmt::format("{} ({}): dim {}, hidden {}, layers {}, heads {}/{} kv, head dim {}", family, format,
                              dim, hidden_dim, num_layers, num_heads, num_kv_heads, head_dim);
  if (head_dim_v != head_dim) s += fmt::format("/{}", head_dim_v);
  s += fmt::format(", vocab {}, ctx {}, rope {} {}", vocab_size, max_seq_len,
                   rope_layout == RopeLayout::Interleaved ? "interleaved" : "rotate-half", rope_theta);
  if (swa > 0) s += fmt::format(", {} sliding-window layers", swa);
  if (moe.num_experts > 0) s += fmt::format(", {} experts ({} used)", moe.num_experts, moe.num_experts_used);
  if (delta_net.enabled()) {
    int32_t recurrent = 0;
    for (const LayerConfig& l : layers) recurrent += l.delta_net;
    s += fmt::format(", {} DeltaNet layers ({} + {} heads, state {} floats per sequence)", recurrent,
                     delta_net.num_k_heads, delta_net.num_v_heads, delta_net.state_floats());
  }
  if (dsv4.enabled()) {  // the seed's kv_layer_compress_ratio, as the weights define it
    std::vector<int32_t> ratios;
    for (const LayerConfig& l : layers) ratios.push_back(l.compress_ratio);
    s += fmt::format(", kv_layer_compress_ratio [{}], indexer top-k {}, window {}, hc {}", fmt::join(ratios, ","),
                     dsv4.index_topk, layers.empty() ? 0 : layers[0].sliding_window, dsv4.hc_mult);
  }
  return s;
}

}  // namespace slimkv
